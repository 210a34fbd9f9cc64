package mocknic

import (
	"fmt"

	"github.com/packetio/packetio/mlx5/internal/wqe"
)

// TxConfig mirrors what mlx5dv_init_obj hands a send ring.
type TxConfig struct {
	SQ       []byte
	CQ       []byte
	SQDbrec  *uint32
	CQDbrec  *uint32
	Region   []byte
	RegionVA uint64
	LKey     uint32
	QPN      uint32
	// EMPW says the device accepts enhanced multi-packet entries.
	EMPW bool
}

// TxNIC models the send side: it reads the send queue when polled, sends
// what it finds, and writes completions.
type TxNIC struct {
	cfg TxConfig
	sq  wqe.SQ
	cq  cqWriter

	pi uint32 // producer index seen in the doorbell record, extended
	ci uint32 // next block to execute

	// FailAfter, when above zero, makes the FailAfter-th packet (1-based,
	// counted from the start) fail: its entry completes with an error CQE
	// carrying Syndrome, whether or not it asked for a completion, and
	// the queue enters the error state. Every later entry is flushed
	// with a WR_FLUSH error CQE, one per entry.
	FailAfter int
	// Syndrome is the syndrome of the injected failure; zero means local
	// protection (0x04).
	Syndrome uint8
	// BlocksPerPoll limits the blocks one Poll executes; zero means no
	// limit and a negative value makes the device hold still.
	BlocksPerPoll int
	// Discard keeps no copy of sent packets (for allocation tests).
	Discard bool
	// Sink, when set, is called with every sent packet: the wire. The
	// bytes are valid only during the call.
	Sink func(pkt []byte)

	// Packets are the packets sent, unless Discard.
	Packets []Packet
	// Violations lists every rule the ring broke.
	Violations []string

	sent     int
	finished int // packets the device is done with: sent, failed or flushed
	seen     int // packets examined, for FailAfter
	failed   bool
	scratch  []byte
}

// NewTx returns a model over cfg's memory and marks every CQE invalid, as
// CQ creation does.
func NewTx(cfg TxConfig) (*TxNIC, error) {
	sq, err := wqe.NewSQ(cfg.SQ)
	if err != nil {
		return nil, err
	}
	cq, err := newCQWriter(cfg.CQ, cfg.CQDbrec)
	if err != nil {
		return nil, err
	}
	return &TxNIC{cfg: cfg, sq: sq, cq: cq, scratch: make([]byte, 0, 64<<10)}, nil
}

// Sent is the number of packets sent.
func (n *TxNIC) Sent() int { return n.sent }

// Finished is the number of packets the device is done with, sent or not:
// a ring may hand back no more than this many frames.
func (n *TxNIC) Finished() int { return n.finished }

// Failed reports whether the queue is in the error state.
func (n *TxNIC) Failed() bool { return n.failed }

// Outstanding is the number of blocks published but not yet executed.
func (n *TxNIC) Outstanding() int { return int(n.pi - n.ci) }

// CQ is the completion queue memory, for tests that forge entries.
func (n *TxNIC) CQ() []byte { return n.cfg.CQ }

// WriteCQE writes c as the next completion, with the owner bit set for its
// lap: a test's way to forge or replay one. It obeys the overrun rule.
func (n *TxNIC) WriteCQE(c wqe.CQE) error { return n.cq.write(c) }

func (n *TxNIC) violate(format string, args ...any) {
	n.Violations = append(n.Violations, fmt.Sprintf(format, args...))
}

// Poll is "a doorbell arrived": it reads the send doorbell record and
// executes every published entry, within BlocksPerPoll. It returns the
// packets sent by this call.
func (n *TxNIC) Poll() int {
	raw := readRecord(n.cfg.SQDbrec)
	if raw > wqe.SQIndexMask {
		n.violate("send doorbell record %#08x is not a 16-bit block index; is it byte-swapped?", raw)
		return 0
	}
	pi := n.pi + uint32(uint16(raw)-uint16(n.pi))
	if pi-n.ci > uint32(n.sq.Blocks()) {
		n.violate("producer index %d runs %d blocks past the %d the device has not executed, in a %d-block queue",
			pi, pi-n.ci, n.pi-n.ci, n.sq.Blocks())
		return 0
	}
	n.pi = pi
	if n.BlocksPerPoll < 0 {
		return 0
	}
	budget := n.BlocksPerPoll
	before := n.sent
	for n.ci != n.pi {
		c := n.sq.DecodeCtrl(n.ci)
		blocks := uint32(wqe.BlocksFor(c.DS))
		if budget > 0 && int(blocks) > budget && n.sent > before {
			break
		}
		if n.failed {
			if c.DS == 0 || blocks > n.pi-n.ci {
				blocks = 1
			}
			n.complete(wqe.CQE{Opcode: wqe.CQEReqErr, Syndrome: wqe.SyndromeWRFlush, WQECounter: uint16(n.ci), QPN: n.cfg.QPN, WQEOpcode: c.Opcode})
			n.finished += n.countPackets(c)
			n.ci += blocks
			continue
		}
		if !n.execute(c) {
			// The entry failed; the error CQE is written. Stop here.
			break
		}
		n.ci += blocks
		if budget > 0 {
			budget -= int(blocks)
			if budget <= 0 {
				break
			}
		}
	}
	return n.sent - before
}

// fail writes the error CQE for the entry at ci and puts the queue into the
// error state. The entry is done.
func (n *TxNIC) fail(c wqe.Ctrl, syndrome uint8) {
	n.failed = true
	n.finished += n.countPackets(c)
	n.complete(wqe.CQE{Opcode: wqe.CQEReqErr, Syndrome: syndrome, VendorSyndrome: 0x99, WQECounter: uint16(n.ci), QPN: n.cfg.QPN, WQEOpcode: c.Opcode})
	blocks := uint32(wqe.BlocksFor(c.DS))
	if c.DS == 0 || blocks > n.pi-n.ci {
		blocks = 1
	}
	n.ci += blocks
}

func (n *TxNIC) complete(c wqe.CQE) {
	if err := n.cq.write(c); err != nil {
		n.violate("%v", err)
		n.failed = true
	}
}

// execute checks and sends the entry at n.ci. It reports false when the
// entry failed (and has already advanced past it).
func (n *TxNIC) execute(c wqe.Ctrl) bool {
	switch {
	case c.Index != uint16(n.ci):
		n.violate("entry at block %d says it is block %d", n.ci, c.Index)
		n.fail(c, wqe.SyndromeLocalQPOp)
		return false
	case c.QPN != n.cfg.QPN:
		n.violate("entry at block %d names QP %#x, not %#x", n.ci, c.QPN, n.cfg.QPN)
		n.fail(c, wqe.SyndromeLocalQPOp)
		return false
	case c.DS < 1 || c.DS > wqe.MaxDS:
		n.violate("entry at block %d is %d octowords, outside 1..%d", n.ci, c.DS, wqe.MaxDS)
		n.fail(c, wqe.SyndromeLocalQPOp)
		return false
	case uint32(wqe.BlocksFor(c.DS)) > n.pi-n.ci:
		n.violate("entry at block %d (%d blocks) runs past the producer index %d", n.ci, wqe.BlocksFor(c.DS), n.pi)
		n.fail(c, wqe.SyndromeLocalQPOp)
		return false
	}
	if c.Opcode != wqe.OpSend && c.Opcode != wqe.OpEMPW {
		n.violate("entry at block %d has opcode %#02x, not SEND or eMPW", n.ci, c.Opcode)
		n.fail(c, wqe.SyndromeLocalQPOp)
		return false
	}
	if c.Opcode == wqe.OpEMPW && !n.cfg.EMPW {
		n.violate("eMPW entry at block %d on a device without enhanced MPW", n.ci)
		n.fail(c, wqe.SyndromeLocalQPOp)
		return false
	}
	// An injected failure hits before the entry is sent.
	if k := n.countPackets(c); n.FailAfter > 0 && n.seen < n.FailAfter && n.seen+k >= n.FailAfter {
		syn := n.Syndrome
		if syn == 0 {
			syn = wqe.SyndromeLocalProtection
		}
		n.seen += k
		n.fail(c, syn)
		return false
	}
	var pkts int
	var ok bool
	if c.Opcode == wqe.OpSend {
		pkts, ok = n.execSend(c)
	} else {
		pkts, ok = n.execMPW(c)
	}
	if !ok {
		return false
	}
	n.seen += pkts
	n.sent += pkts
	n.finished += pkts
	if c.FmCeSe&wqe.CtrlCQUpdate != 0 {
		n.complete(wqe.CQE{Opcode: wqe.CQEReq, WQECounter: uint16(n.ci), QPN: n.cfg.QPN})
	}
	return true
}

// dropPending forgets the last k recorded packets: their entry failed.
func (n *TxNIC) dropPending(k int) {
	if !n.Discard {
		n.Packets = n.Packets[:len(n.Packets)-k]
	}
}

// fetch checks a data segment and appends the bytes it points at to pkt.
func (n *TxNIC) fetch(c wqe.Ctrl, d wqe.Data, pkt []byte) ([]byte, bool) {
	if d.ByteCount == 0 {
		n.violate("entry at block %d has a zero-length data segment (local length error: the queue is dead)", n.ci)
		n.fail(c, wqe.SyndromeLocalLength)
		return pkt, false
	}
	if d.ByteCount&wqe.InlineSeg != 0 {
		n.violate("entry at block %d has an inline byte count %#x in a pointer segment", n.ci, d.ByteCount)
		n.fail(c, wqe.SyndromeLocalLength)
		return pkt, false
	}
	if d.LKey != n.cfg.LKey {
		n.violate("entry at block %d uses key %#x, not the region's %#x", n.ci, d.LKey, n.cfg.LKey)
		n.fail(c, wqe.SyndromeLocalProtection)
		return pkt, false
	}
	lo, hi := n.cfg.RegionVA, n.cfg.RegionVA+uint64(len(n.cfg.Region))
	if d.Addr < lo || d.Addr >= hi || uint64(d.ByteCount) > hi-d.Addr {
		n.violate("entry at block %d reads %d bytes at %#x, outside the registered region [%#x, %#x)", n.ci, d.ByteCount, d.Addr, lo, hi)
		n.fail(c, wqe.SyndromeLocalProtection)
		return pkt, false
	}
	off := d.Addr - lo
	return append(pkt, n.cfg.Region[off:off+uint64(d.ByteCount)]...), true
}

func (n *TxNIC) record(pkt []byte, addr uint64, inlined int) {
	if n.Sink != nil {
		n.Sink(pkt)
	}
	if n.Discard {
		return
	}
	n.Packets = append(n.Packets, Packet{Bytes: append([]byte(nil), pkt...), Addr: addr, Block: n.ci, Inlined: inlined})
}

func (n *TxNIC) execSend(c wqe.Ctrl) (int, bool) {
	pkt := n.scratch[:0]
	var hdr [wqe.MaxInline]byte
	inl := n.sq.InlineBytes(n.ci, hdr[:])
	if inl > wqe.MaxInline {
		n.violate("entry at block %d inlines %d bytes, more than an entry holds", n.ci, inl)
		n.fail(c, wqe.SyndromeLocalLength)
		return 0, false
	}
	pkt = append(pkt, hdr[:inl]...)
	eth := wqe.EthOctowords(inl)
	var addr uint64
	switch c.DS {
	case 1 + eth:
	case 2 + eth:
		d := n.sq.DecodeData(n.ci, 1+eth)
		var ok bool
		if pkt, ok = n.fetch(c, d, pkt); !ok {
			return 0, false
		}
		addr = d.Addr
	default:
		n.violate("SEND entry at block %d is %d octowords; %d inline bytes allow %d or %d", n.ci, c.DS, inl, 1+eth, 2+eth)
		n.fail(c, wqe.SyndromeLocalLength)
		return 0, false
	}
	if len(pkt) == 0 {
		n.violate("entry at block %d sends an empty packet", n.ci)
		n.fail(c, wqe.SyndromeLocalLength)
		return 0, false
	}
	n.scratch = pkt[:0]
	n.record(pkt, addr, inl)
	return 1, true
}

func (n *TxNIC) execMPW(c wqe.Ctrl) (int, bool) {
	var hdr [2]byte
	if inl := n.sq.InlineBytes(n.ci, hdr[:]); inl != 0 {
		n.violate("eMPW entry at block %d carries %d inline header bytes; eMPW takes none", n.ci, inl)
		n.fail(c, wqe.SyndromeLocalQPOp)
		return 0, false
	}
	pkts := 0
	for k := wqe.MPWHeaderDS; k < c.DS; {
		s := n.sq.DecodeMPWSegment(n.ci, k)
		if k+s.DS > c.DS {
			n.violate("eMPW entry at block %d: segment at octoword %d (%d long) runs past ds %d", n.ci, k, s.DS, c.DS)
			n.dropPending(pkts)
			n.fail(c, wqe.SyndromeLocalLength)
			return 0, false
		}
		pkt := n.scratch[:0]
		var addr uint64
		if s.Copied {
			if s.Len == 0 {
				n.violate("eMPW entry at block %d: empty copied packet at octoword %d", n.ci, k)
				n.dropPending(pkts)
				n.fail(c, wqe.SyndromeLocalLength)
				return 0, false
			}
			// s.Len is bounded by the entry's 60 octowords.
			if cap(pkt) < int(s.Len) {
				pkt = make([]byte, s.Len)
			}
			pkt = pkt[:s.Len]
			n.sq.Read(n.ci, s.Off, pkt)
		} else {
			var ok bool
			if pkt, ok = n.fetch(c, wqe.Data{ByteCount: s.Len, LKey: s.LKey, Addr: s.Addr}, pkt); !ok {
				n.dropPending(pkts)
				return 0, false
			}
			addr = s.Addr
		}
		n.scratch = pkt[:0]
		inlined := 0
		if s.Copied {
			inlined = len(pkt)
		}
		n.record(pkt, addr, inlined)
		pkts++
		k += s.DS
	}
	if pkts == 0 {
		n.violate("eMPW entry at block %d carries no packet", n.ci)
		n.fail(c, wqe.SyndromeLocalLength)
		return 0, false
	}
	return pkts, true
}

// countPackets is how many packets the entry at n.ci describes, for an entry
// the device finishes without sending: 1 for anything but a well-formed
// eMPW entry.
func (n *TxNIC) countPackets(c wqe.Ctrl) int {
	if c.Opcode != wqe.OpEMPW || c.DS > wqe.MaxDS {
		return 1
	}
	k, pkts := wqe.MPWHeaderDS, 0
	for k < c.DS {
		s := n.sq.DecodeMPWSegment(n.ci, k)
		k += s.DS
		pkts++
	}
	return max(pkts, 1)
}
