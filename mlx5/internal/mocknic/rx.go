package mocknic

import (
	"encoding/binary"
	"fmt"

	"github.com/packetio/packetio/mlx5/internal/wqe"
)

// RxConfig mirrors what mlx5dv_init_obj hands a receive ring.
type RxConfig struct {
	RQ       []byte
	CQ       []byte
	RQDbrec  *uint32
	CQDbrec  *uint32
	Region   []byte
	RegionVA uint64
	LKey     uint32
}

// RxNIC models the receive side: packets arriving from the wire are
// scattered into posted buffers in order and completed.
type RxNIC struct {
	cfg     RxConfig
	entries uint32
	cq      cqWriter

	pi uint32 // WQEs posted, from the doorbell record, extended
	ci uint32 // next WQE to fill

	// FailEvery, when above zero, makes every FailEvery-th packet
	// complete with a receive error instead of data.
	FailEvery int
	// Checksum is the hds_ip_ext bits reported with every good packet;
	// New sets L2, L3 and L4 OK.
	Checksum uint8
	// Clock is the model's tick counter; every completion advances it by
	// TicksPerPacket (default 1) and carries the new value.
	Clock          uint64
	TicksPerPacket uint64

	// Dropped counts packets that found no posted buffer, as a port does.
	Dropped int
	// Violations lists every rule the ring broke.
	Violations []string

	delivered int
}

// NewRx returns a model over cfg's memory and marks every CQE invalid.
func NewRx(cfg RxConfig) (*RxNIC, error) {
	n := len(cfg.RQ) / wqe.RecvWQESize
	if n < 1 || n&(n-1) != 0 || len(cfg.RQ)%wqe.RecvWQESize != 0 {
		return nil, fmt.Errorf("mocknic: RQ of %d bytes is not a power-of-two number of WQEs", len(cfg.RQ))
	}
	cq, err := newCQWriter(cfg.CQ, cfg.CQDbrec)
	if err != nil {
		return nil, err
	}
	return &RxNIC{cfg: cfg, entries: uint32(n), cq: cq, Checksum: wqe.CQEL2OK | wqe.CQEL3OK | wqe.CQEL4OK, TicksPerPacket: 1}, nil
}

// CQ is the completion queue memory, for tests that forge entries.
func (n *RxNIC) CQ() []byte { return n.cfg.CQ }

// WriteCQE writes c as the next completion with the right owner bit: a
// test's way to forge one. It obeys the overrun rule.
func (n *RxNIC) WriteCQE(c wqe.CQE) error { return n.cq.write(c) }

// Posted is the number of buffers posted and not yet filled.
func (n *RxNIC) Posted() int { return int(n.pi - n.ci) }

// Delivered is the number of packets completed so far, good or failed.
func (n *RxNIC) Delivered() int { return n.delivered }

// Next is the WQE counter the next completion will name.
func (n *RxNIC) Next() uint32 { return n.ci }

func (n *RxNIC) violate(format string, args ...any) {
	n.Violations = append(n.Violations, fmt.Sprintf(format, args...))
}

// sync reads the receive doorbell record. It reports false on a violation.
func (n *RxNIC) sync() bool {
	raw := readRecord(n.cfg.RQDbrec)
	if raw > wqe.RQIndexMask {
		n.violate("receive doorbell record %#08x is not a 16-bit WQE count; is it byte-swapped?", raw)
		return false
	}
	pi := n.pi + uint32(uint16(raw)-uint16(n.pi))
	if pi-n.ci > n.entries {
		n.violate("receive producer %d claims %d buffers posted in a %d-entry queue", pi, pi-n.ci, n.entries)
		return false
	}
	n.pi = pi
	return true
}

// Deliver receives packets from the wire, in order, and returns how many
// found a buffer. Packets with no buffer are dropped and counted.
func (n *RxNIC) Deliver(pkts ...[]byte) int {
	if !n.sync() {
		return 0
	}
	got := 0
	for _, p := range pkts {
		if n.ci == n.pi {
			n.Dropped++
			continue
		}
		slot := n.ci & (n.entries - 1)
		w := n.cfg.RQ[slot*wqe.RecvWQESize:]
		bc := binary.BigEndian.Uint32(w[wqe.DataByteCount:])
		key := binary.BigEndian.Uint32(w[wqe.DataLKey:])
		addr := binary.BigEndian.Uint64(w[wqe.DataAddr:])
		lo, hi := n.cfg.RegionVA, n.cfg.RegionVA+uint64(len(n.cfg.Region))
		c := wqe.CQE{Opcode: wqe.CQERespSend, WQECounter: uint16(n.ci)}
		n.Clock += n.TicksPerPacket
		switch {
		case key != n.cfg.LKey:
			n.violate("receive WQE %d uses key %#x, not the region's %#x", n.ci, key, n.cfg.LKey)
			c = wqe.CQE{Opcode: wqe.CQERespErr, Syndrome: wqe.SyndromeLocalProtection, WQECounter: uint16(n.ci)}
		case bc == 0 || addr < lo || addr >= hi || uint64(bc) > hi-addr:
			n.violate("receive WQE %d offers %d bytes at %#x, outside the registered region [%#x, %#x)", n.ci, bc, addr, lo, hi)
			c = wqe.CQE{Opcode: wqe.CQERespErr, Syndrome: wqe.SyndromeLocalProtection, WQECounter: uint16(n.ci)}
		case uint64(len(p)) > uint64(bc):
			// Too long for the buffer: the device reports a length
			// error for this packet.
			c = wqe.CQE{Opcode: wqe.CQERespErr, Syndrome: wqe.SyndromeLocalLength, WQECounter: uint16(n.ci)}
		case n.FailEvery > 0 && (n.delivered+1)%n.FailEvery == 0:
			c = wqe.CQE{Opcode: wqe.CQERespErr, Syndrome: wqe.SyndromeLocalProtection, WQECounter: uint16(n.ci)}
		default:
			copy(n.cfg.Region[addr-lo:], p)
			c.ByteCount = uint32(len(p))
			c.HdsIPExt = n.Checksum
			c.L3Type = l3Type(p)
			c.Timestamp = n.Clock
		}
		if err := n.cq.write(c); err != nil {
			n.violate("%v", err)
			return got
		}
		n.ci++
		n.delivered++
		got++
	}
	return got
}

func l3Type(p []byte) uint8 {
	if len(p) < 14 {
		return wqe.L3None
	}
	switch binary.BigEndian.Uint16(p[12:]) {
	case 0x0800:
		return wqe.L3IPv4
	case 0x86dd:
		return wqe.L3IPv6
	}
	return wqe.L3None
}
