package wqe

import (
	"encoding/binary"
	"fmt"
)

// EthOctowords is the size, in octowords, of an Ethernet segment carrying
// inline header bytes: ceil((14+inline)/16), so 1 for none, 2 for 18 and 3
// for 22 (QinQ). rdma-core's own formula rounds down and is right only for 0
// and 18; this rounds up, as DPDK does.
func EthOctowords(inline int) int {
	return (EthInlineHdrStart + inline + OctowordSize - 1) / OctowordSize
}

// MaxInline is the most header bytes a Sender inlines: the Ethernet segment
// plus the control segment and one data segment must fit MaxDS.
const MaxInline = (MaxDS-2)*OctowordSize - EthInlineHdrStart

// Sender writes ordinary SEND entries: a control segment, an Ethernet segment
// with the first Inline bytes of the packet copied into it, and one data
// segment pointing at the rest. A packet no longer than Inline has no data
// segment at all: a zero-length data segment makes the device raise a local
// length error and take the queue down.
type Sender struct {
	SQ      SQ
	QPN     uint32
	LKey    uint32
	Inline  int   // bytes copied into the Ethernet segment, 0..MaxInline
	CsFlags uint8 // CsumL3|CsumL4 for checksum offload, else 0
}

// Check reports a configuration the device would refuse.
func (s *Sender) Check() error {
	if s.Inline < 0 || s.Inline > MaxInline {
		return fmt.Errorf("wqe: inline length %d outside 0..%d", s.Inline, MaxInline)
	}
	if s.QPN > 0xffffff {
		return fmt.Errorf("wqe: QP number %#x does not fit 24 bits", s.QPN)
	}
	if s.MaxBlocks() > s.SQ.Blocks() {
		return fmt.Errorf("wqe: one entry (%d blocks) does not fit a %d-block queue", s.MaxBlocks(), s.SQ.Blocks())
	}
	return nil
}

// DS is the length in octowords of the entry for a packet of n bytes.
func (s *Sender) DS(n int) int {
	inl := min(n, s.Inline)
	ds := 1 + EthOctowords(inl)
	if n > inl {
		ds++
	}
	return ds
}

// MaxBlocks is the most blocks one entry takes: what a ring reserves per
// packet.
func (s *Sender) MaxBlocks() int { return BlocksFor(1 + EthOctowords(s.Inline) + 1) }

// Put writes the entry for pkt, whose first byte the device reads at addr,
// at block pi, and returns the blocks it took. signal asks for a completion.
// pkt must not be empty.
func (s *Sender) Put(pi uint32, pkt []byte, addr uint64, signal bool) int {
	n := len(pkt)
	inl := min(n, s.Inline)
	eth := EthOctowords(inl)
	ds := 1 + eth
	if n > inl {
		ds++
	}
	var f uint8
	if signal {
		f = CtrlCQUpdate
	}
	q := s.SQ
	q.PutCtrl(pi, OpSend, s.QPN, ds, f)
	e := q.Octoword(pi, 1)
	binary.BigEndian.PutUint32(e[0:], 0)
	e[EthCsFlags] = s.CsFlags
	e[5] = 0
	binary.BigEndian.PutUint16(e[EthMSS:], 0)
	binary.BigEndian.PutUint32(e[8:], 0)
	binary.BigEndian.PutUint16(e[EthInlineHdrSz:], uint16(inl))
	// Inline bytes run from segment offset 14 through the following
	// octowords; the rest of the last octoword is zeroed, because ring
	// memory still holds older entries.
	segEnd := OctowordSize + eth*OctowordSize
	if inl > 0 {
		q.write(pi, OctowordSize+EthInlineHdrStart, pkt[:inl])
	}
	if pad := segEnd - (OctowordSize + EthInlineHdrStart + inl); pad > 0 {
		q.zero(pi, OctowordSize+EthInlineHdrStart+inl, pad)
	}
	if n > inl {
		q.PutData(pi, 1+eth, uint32(n-inl), s.LKey, addr+uint64(inl))
	}
	return BlocksFor(ds)
}

// InlineBytes copies the inline header of the SEND entry at block pi into p
// and returns how many bytes the entry inlines (at most len(p) are copied).
func (q SQ) InlineBytes(pi uint32, p []byte) int {
	e := q.Octoword(pi, 1)
	n := int(binary.BigEndian.Uint16(e[EthInlineHdrSz:]))
	q.read(pi, OctowordSize+EthInlineHdrStart, p[:min(n, len(p))])
	return n
}

// EthCs returns the cs_flags byte of the Ethernet segment of the entry at
// block pi.
func (q SQ) EthCs(pi uint32) uint8 { return q.Octoword(pi, 1)[EthCsFlags] }
