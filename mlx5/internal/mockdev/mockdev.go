// Package mockdev assembles a whole packetio.Device from the mlx5 queue code
// and the mlx5/internal/mocknic model card. Open wires a device to itself
// (every frame a transmit queue sends arrives at its own receive queues);
// Pair wires two devices back to back like a cable. It is what the
// conformance suite runs against on a machine with no ConnectX, so the
// backend's queue, ring and descriptor code meets the same contract as the
// other backends. Nothing in it touches hardware.
//
// The model does the device's work synchronously: inside Transmit, right
// after the doorbell (the queue's Kick seam). There is no device thread.
package mockdev

import (
	"fmt"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/pool"
	"github.com/packetio/packetio/mlx5/internal/clock"
	"github.com/packetio/packetio/mlx5/internal/mocknic"
	"github.com/packetio/packetio/mlx5/internal/queue"
	"github.com/packetio/packetio/mlx5/internal/ring"
	"github.com/packetio/packetio/mlx5/internal/wqe"
)

// Config describes the model device. Zero fields take the defaults in
// parentheses.
type Config struct {
	TxQueues  int         // transmit queues (1)
	RxQueues  int         // receive queues (1); 0 is allowed with Tx only
	NoRx      bool        // open without receive queues
	TxDepth   int         // send queue blocks per ring (256)
	RxDepth   int         // receive queue entries (256)
	Rings     int         // hardware rings per transmit queue (1)
	FrameSize int         // (2048)
	Mode      ring.TxMode // (ring.ModeSend)
	Inline    int         // inline header bytes for ModeSend (18)
	Clock     bool        // stamp receive completions
	// TxFailAfter makes the model fail the nth packet of transmit queue 0.
	TxFailAfter int
}

// Headroom is the receive headroom the hardware backend uses too.
const Headroom = 64

const regionVA = 0x7f0000000000

// Device is the model device: a packetio.Device plus the model cards, for
// tests that want to look inside.
type Device struct {
	*queue.Device
	TxNICs [][]*mocknic.TxNIC // per transmit queue, per ring
	RxNICs []*mocknic.RxNIC

	peer *Device // where sent frames arrive
}

// Pair opens two model devices joined like the two ends of a cable: what one
// sends, the other receives.
func Pair(a, b Config) (*Device, *Device, error) {
	da, err := Open(a)
	if err != nil {
		return nil, nil, err
	}
	db, err := Open(b)
	if err != nil {
		return nil, nil, err
	}
	da.peer, db.peer = db, da
	return da, db, nil
}

// deliver puts a frame on the wire toward d's receive queues: to one queue,
// chosen by a hash of its first bytes past the Ethernet header, so one flow
// stays on one queue.
func (d *Device) deliver(pkt []byte) {
	if len(d.RxNICs) == 0 {
		return
	}
	h := uint32(2166136261)
	for _, b := range pkt[min(14, len(pkt)):min(22, len(pkt))] {
		h = (h ^ uint32(b)) * 16777619
	}
	d.RxNICs[h%uint32(len(d.RxNICs))].Deliver(pkt)
}

// Violations returns every rule violation any model card recorded.
func (d *Device) Violations() []string {
	var v []string
	for _, q := range d.TxNICs {
		for _, n := range q {
			v = append(v, n.Violations...)
		}
	}
	for _, n := range d.RxNICs {
		v = append(v, n.Violations...)
	}
	return v
}

// Open builds a model device wired to itself.
func Open(cfg Config) (*Device, error) {
	if cfg.TxQueues == 0 {
		cfg.TxQueues = 1
	}
	if cfg.RxQueues == 0 && !cfg.NoRx {
		cfg.RxQueues = 1
	}
	if cfg.NoRx {
		cfg.RxQueues = 0
	}
	if cfg.TxDepth == 0 {
		cfg.TxDepth = 256
	}
	if cfg.RxDepth == 0 {
		cfg.RxDepth = 256
	}
	if cfg.Rings == 0 {
		cfg.Rings = 1
	}
	if cfg.FrameSize == 0 {
		cfg.FrameSize = 2048
	}
	if cfg.Mode == 0 {
		cfg.Mode = ring.ModeSend
	}
	if cfg.Mode == ring.ModeSend && cfg.Inline == 0 {
		cfg.Inline = 18
	}
	// Frames: twice what each queue can have outstanding.
	txFrames := 2 * cfg.Rings * cfg.TxDepth
	rxFrames := 2 * cfg.RxDepth
	total := cfg.TxQueues*txFrames + cfg.RxQueues*rxFrames
	region := make([]byte, total*cfg.FrameSize)
	reg := queue.NewRegion(region, cfg.FrameSize)
	const lkey, firstQPN = 0x5eed, 0x100
	var clk clock.Info
	if cfg.Clock {
		clk = clock.Info{Mult: 1 << 31, Shift: 31, Mask: 1<<41 - 1}
	}

	d := &Device{Device: &queue.Device{}}
	next := 0 // next free frame index
	for i := 0; i < cfg.RxQueues; i++ {
		rq := make([]byte, cfg.RxDepth*wqe.RecvWQESize)
		cq := make([]byte, cfg.RxDepth*wqe.CQESize)
		recs := new([3]uint32) // WQ record, CQ record
		nic, err := mocknic.NewRx(mocknic.RxConfig{RQ: rq, CQ: cq, RQDbrec: &recs[0], CQDbrec: &recs[1], Region: region, RegionVA: regionVA, LKey: lkey})
		if err != nil {
			return nil, err
		}
		nic.TicksPerPacket = 100
		r, err := ring.NewRx(ring.RxConfig{RQ: rq, CQ: cq, RQDbrec: &recs[0], CQDbrec: &recs[1], LKey: lkey,
			Region: region, RegionVA: regionVA, FrameSize: cfg.FrameSize, Headroom: Headroom, Clock: clk})
		if err != nil {
			return nil, err
		}
		p, err := pool.New(next, rxFrames, cfg.FrameSize)
		if err != nil {
			return nil, err
		}
		next += rxFrames
		q, err := queue.NewRx(queue.RxConfig{Name: fmt.Sprintf("mlx5 model rx %d", i), Ring: r, Region: reg, Pool: p, Stamps: cfg.Clock,
			Backend: map[string]uint64{"rq_entries": uint64(cfg.RxDepth)}})
		if err != nil {
			return nil, err
		}
		d.Rxs = append(d.Rxs, q)
		d.RxNICs = append(d.RxNICs, nic)
	}
	d.peer = d
	wire := func(pkt []byte) { d.peer.deliver(pkt) }
	for i := 0; i < cfg.TxQueues; i++ {
		var rings []*ring.Tx
		var nics []*mocknic.TxNIC
		for k := 0; k < cfg.Rings; k++ {
			sq := make([]byte, cfg.TxDepth*wqe.BlockSize)
			cq := make([]byte, cfg.TxDepth*wqe.CQESize)
			recs := new([3]uint32) // QP records (receive, send), CQ record
			uar := new(uint64)
			qpn := uint32(firstQPN + i*cfg.Rings + k)
			empw := cfg.Mode != ring.ModeSend
			nic, err := mocknic.NewTx(mocknic.TxConfig{SQ: sq, CQ: cq, SQDbrec: &recs[wqe.SndDbr], CQDbrec: &recs[2], Region: region, RegionVA: regionVA, LKey: lkey, QPN: qpn, EMPW: empw})
			if err != nil {
				return nil, err
			}
			nic.Discard = true
			nic.Sink = wire
			if i == 0 && k == 0 {
				nic.FailAfter = cfg.TxFailAfter
			}
			inline := cfg.Inline
			if empw {
				inline = 0
			}
			r, err := ring.NewTx(ring.TxConfig{SQ: sq, CQ: cq, SQDbrec: &recs[wqe.SndDbr], CQDbrec: &recs[2], UAR: uar, QPN: qpn, LKey: lkey,
				Region: region, RegionVA: regionVA, FrameSize: cfg.FrameSize, Mode: cfg.Mode, Inline: inline})
			if err != nil {
				return nil, err
			}
			rings = append(rings, r)
			nics = append(nics, nic)
		}
		p, err := pool.New(next, txFrames, cfg.FrameSize)
		if err != nil {
			return nil, err
		}
		next += txFrames
		kick := func() {
			for _, n := range nics {
				n.Poll()
			}
		}
		q, err := queue.NewTx(queue.TxConfig{Name: fmt.Sprintf("mlx5 model tx %d", i), Rings: rings, Region: reg, Pool: p, Kick: kick,
			Backend: map[string]uint64{"sq_blocks": uint64(cfg.TxDepth), "mode": uint64(cfg.Mode)}})
		if err != nil {
			return nil, err
		}
		d.Txs = append(d.Txs, q)
		d.TxNICs = append(d.TxNICs, nics)
	}
	d.Caps = packetio.Capabilities{
		Backend:           "mlx5",
		ZeroCopy:          true,
		KernelCoexistence: true,
		RSS:               cfg.RxQueues > 1,
		RxChecksumFlags:   true,
		RxTimestamps:      cfg.Clock,
		SharedRegion:      true,
		HandsBackFrames:   true,
		MaxFrameSize:      cfg.FrameSize - Headroom,
		MaxQueues:         64,
	}
	return d, nil
}
