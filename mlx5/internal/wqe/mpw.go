package wqe

import "encoding/binary"

// Enhanced multi-packet send (eMPW): one entry carries many packets. It has
// an ordinary control segment with opcode OpEMPW, a 16-byte Ethernet segment
// with no inline header (so a port that requires inline L2 headers cannot
// use it), then one segment per packet in either of two forms:
//
//   - pointer: an ordinary 16-byte data segment; the device fetches the
//     packet. Up to MPWMaxPointers per entry.
//   - copied: a big-endian word length|InlineSeg followed by the packet
//     bytes, padded to an octoword; the device reads the packet from the
//     entry itself.
//
// The two forms may be mixed inside one entry.
const (
	// MPWHeaderDS is the octowords before the first packet segment:
	// control plus the compact Ethernet segment.
	MPWHeaderDS = 2
	// MPWMaxPointers is the most pointer segments one entry holds.
	MPWMaxPointers = MaxDS - MPWHeaderDS
	// MPWDefaultMaxLen is the longest packet copied by default.
	MPWDefaultMaxLen = 192
)

// CopiedDS is the octowords a copied packet of n bytes takes.
func CopiedDS(n int) int { return (4 + n + OctowordSize - 1) / OctowordSize }

// MPW builds one eMPW entry at a time: Begin, then Pointer or Copied per
// packet while Room allows, then Finish.
type MPW struct {
	SQ      SQ
	QPN     uint32
	LKey    uint32
	CsFlags uint8

	pi uint32
	ds int
	n  int
}

// Begin starts an entry at block pi.
func (m *MPW) Begin(pi uint32) {
	m.pi, m.ds, m.n = pi, MPWHeaderDS, 0
	e := m.SQ.Octoword(pi, 1)
	clear(e)
	e[EthCsFlags] = m.CsFlags
}

// Room reports whether a segment of ds more octowords still fits the entry.
func (m *MPW) Room(ds int) bool { return m.ds+ds <= MaxDS }

// DS is the entry's length so far, in octowords.
func (m *MPW) DS() int { return m.ds }

// Packets is the number of packets in the entry so far.
func (m *MPW) Packets() int { return m.n }

// Pointer adds a pointer segment for n bytes at device address addr.
func (m *MPW) Pointer(n uint32, addr uint64) {
	m.SQ.PutData(m.pi, m.ds, n, m.LKey, addr)
	m.ds++
	m.n++
}

// Copied adds pkt (not empty) in copied form.
func (m *MPW) Copied(pkt []byte) {
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(pkt))|InlineSeg)
	off := m.ds * OctowordSize
	m.SQ.write(m.pi, off, hdr[:])
	m.SQ.write(m.pi, off+4, pkt)
	ds := CopiedDS(len(pkt))
	if pad := ds*OctowordSize - 4 - len(pkt); pad > 0 {
		m.SQ.zero(m.pi, off+4+len(pkt), pad)
	}
	m.ds += ds
	m.n++
}

// Finish writes the control segment and returns the blocks the entry took.
func (m *MPW) Finish(signal bool) int {
	var f uint8
	if signal {
		f = CtrlCQUpdate
	}
	m.SQ.PutCtrl(m.pi, OpEMPW, m.QPN, m.ds, f)
	return BlocksFor(m.ds)
}

// MPWSegment is one decoded packet segment of an eMPW entry.
type MPWSegment struct {
	Copied bool
	Len    uint32 // byte count (without the InlineSeg bit)
	LKey   uint32 // pointer form only
	Addr   uint64 // pointer form only
	Off    int    // copied form: byte offset of the data inside the entry
	DS     int    // octowords the segment takes
}

// DecodeMPWSegment decodes the segment at octoword k of the eMPW entry at
// block pi.
func (q SQ) DecodeMPWSegment(pi uint32, k int) MPWSegment {
	d := q.DecodeData(pi, k)
	if d.ByteCount&InlineSeg != 0 {
		n := d.ByteCount &^ InlineSeg
		return MPWSegment{Copied: true, Len: n, Off: k*OctowordSize + 4, DS: CopiedDS(int(n))}
	}
	return MPWSegment{Len: d.ByteCount, LKey: d.LKey, Addr: d.Addr, DS: 1}
}
