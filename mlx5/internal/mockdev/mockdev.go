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
	// MTU is the model port's MTU (1500): Transmit refuses a packet
	// longer than MTU + 14, and Capabilities().MaxTxLen says so.
	MTU int
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
// If the second fails to open, the first is closed again.
func Pair(a, b Config) (*Device, *Device, error) {
	return pair(a, b, Open)
}

// pair is Pair with the opener as an argument, so a test can watch what a
// failed Pair leaves open.
func pair(a, b Config, open func(Config) (*Device, error)) (*Device, *Device, error) {
	da, err := open(a)
	if err != nil {
		return nil, nil, err
	}
	db, err := open(b)
	if err != nil {
		_ = da.Close()
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

// Open builds a model device wired to itself, in named steps: defaults,
// the frame memory, the receive queues, the transmit queues. Everything
// is Go memory, so a failed step leaves nothing to undo.
func Open(cfg Config) (*Device, error) {
	cfg = cfg.withDefaults()
	b := newBuilder(cfg)
	for i := 0; i < cfg.RxQueues; i++ {
		if err := b.addRx(i); err != nil {
			return nil, packetio.NewOpError("open", queue.Backend, modelIface, i, err)
		}
	}
	for i := 0; i < cfg.TxQueues; i++ {
		if err := b.addTx(i); err != nil {
			return nil, packetio.NewOpError("open", queue.Backend, modelIface, i, err)
		}
	}
	b.d.Caps = cfg.capabilities()
	return b.d, nil
}

// modelIface is the interface name the model's errors carry.
const modelIface = "mlx5-model"

// Fixed values of the model's queues.
const lkey, firstQPN = 0x5eed, 0x100

// withDefaults fills the zero fields of a Config.
func (cfg Config) withDefaults() Config {
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
	if cfg.MTU == 0 {
		cfg.MTU = 1500
	}
	if cfg.Mode == 0 {
		cfg.Mode = ring.ModeSend
	}
	if cfg.Mode == ring.ModeSend && cfg.Inline == 0 {
		cfg.Inline = 18
	}
	return cfg
}

// builder is what the queue steps of Open share.
type builder struct {
	cfg                Config
	region             []byte
	reg                *queue.Region
	clk                clock.Info
	txFrames, rxFrames int
	next               int // next free frame index
	d                  *Device
	wire               func(pkt []byte)
}

// newBuilder allocates the frame memory: twice what each queue can have
// outstanding.
func newBuilder(cfg Config) *builder {
	b := &builder{cfg: cfg, txFrames: 2 * cfg.Rings * cfg.TxDepth, rxFrames: 2 * cfg.RxDepth}
	total := cfg.TxQueues*b.txFrames + cfg.RxQueues*b.rxFrames
	b.region = make([]byte, total*cfg.FrameSize)
	b.reg = queue.NewRegion(b.region, cfg.FrameSize)
	if cfg.Clock {
		b.clk = clock.Info{Mult: 1 << 31, Shift: 31, Mask: 1<<41 - 1}
	}
	b.d = &Device{Device: &queue.Device{Iface: modelIface}}
	b.d.peer = b.d
	b.wire = func(pkt []byte) { b.d.peer.deliver(pkt) }
	return b
}

// addRx builds receive queue i: its model NIC, ring, pool and queue.
func (b *builder) addRx(i int) error {
	rq := make([]byte, b.cfg.RxDepth*wqe.RecvWQESize)
	cq := make([]byte, b.cfg.RxDepth*wqe.CQESize)
	recs := new([3]uint32) // WQ record, CQ record
	nic, err := mocknic.NewRx(mocknic.RxConfig{RQ: rq, CQ: cq, RQDbrec: &recs[0], CQDbrec: &recs[1], Region: b.region, RegionVA: regionVA, LKey: lkey})
	if err != nil {
		return err
	}
	nic.TicksPerPacket = 100
	r, err := ring.NewRx(ring.RxConfig{RQ: rq, CQ: cq, RQDbrec: &recs[0], CQDbrec: &recs[1], LKey: lkey,
		Region: b.region, RegionVA: regionVA, FrameSize: b.cfg.FrameSize, Headroom: Headroom, Clock: b.clk})
	if err != nil {
		return err
	}
	p, err := pool.New(b.next, b.rxFrames, b.cfg.FrameSize)
	if err != nil {
		return err
	}
	b.next += b.rxFrames
	q, err := queue.NewRx(queue.RxConfig{Iface: modelIface, Index: i, Ring: r, Region: b.reg, Pool: p, Stamps: b.cfg.Clock,
		Backend: map[string]uint64{"rq_entries": uint64(b.cfg.RxDepth)}})
	if err != nil {
		return err
	}
	b.d.Rx = append(b.d.Rx, q)
	b.d.RxNICs = append(b.d.RxNICs, nic)
	return nil
}

// addTx builds transmit queue i: cfg.Rings model send queues and rings,
// its pool and queue.
func (b *builder) addTx(i int) error {
	var rings []*ring.Tx
	var nics []*mocknic.TxNIC
	for k := 0; k < b.cfg.Rings; k++ {
		sq := make([]byte, b.cfg.TxDepth*wqe.BlockSize)
		cq := make([]byte, b.cfg.TxDepth*wqe.CQESize)
		recs := new([3]uint32) // QP records (receive, send), CQ record
		uar := new(uint64)
		qpn := uint32(firstQPN + i*b.cfg.Rings + k)
		empw := b.cfg.Mode != ring.ModeSend
		nic, err := mocknic.NewTx(mocknic.TxConfig{SQ: sq, CQ: cq, SQDbrec: &recs[wqe.SndDbr], CQDbrec: &recs[2], Region: b.region, RegionVA: regionVA, LKey: lkey, QPN: qpn, EMPW: empw})
		if err != nil {
			return err
		}
		nic.Discard = true
		nic.Sink = b.wire
		if i == 0 && k == 0 {
			nic.FailAfter = b.cfg.TxFailAfter
		}
		inline := b.cfg.Inline
		if empw {
			inline = 0
		}
		r, err := ring.NewTx(ring.TxConfig{SQ: sq, CQ: cq, SQDbrec: &recs[wqe.SndDbr], CQDbrec: &recs[2], UAR: uar, QPN: qpn, LKey: lkey,
			Region: b.region, RegionVA: regionVA, FrameSize: b.cfg.FrameSize, Mode: b.cfg.Mode, Inline: inline})
		if err != nil {
			return err
		}
		rings = append(rings, r)
		nics = append(nics, nic)
	}
	p, err := pool.New(b.next, b.txFrames, b.cfg.FrameSize)
	if err != nil {
		return err
	}
	b.next += b.txFrames
	kick := func() {
		for _, n := range nics {
			n.Poll()
		}
	}
	q, err := queue.NewTx(queue.TxConfig{Iface: modelIface, Index: i, Rings: rings, Region: b.reg, Pool: p, Kick: kick, MaxLen: b.cfg.maxTxLen(),
		Backend: map[string]uint64{"sq_blocks": uint64(b.cfg.TxDepth), "mode": uint64(b.cfg.Mode)}})
	if err != nil {
		return err
	}
	b.d.Tx = append(b.d.Tx, q)
	b.d.TxNICs = append(b.d.TxNICs, nics)
	return nil
}

// capabilities is what a model device of cfg does.
func (cfg Config) capabilities() packetio.Capabilities {
	return packetio.Capabilities{
		Backend:           queue.Backend,
		ZeroCopy:          true,
		KernelCoexistence: true,
		RSS:               cfg.RxQueues > 1,
		RxChecksumFlags:   true,
		RxTimestamps:      cfg.Clock,
		SharedRegion:      true,
		HandsBackFrames:   true,
		MaxFrameSize:      cfg.FrameSize - Headroom,
		MaxTxLen:          cfg.maxTxLen(),
		MaxQueues:         64,
	}
}

// maxTxLen is the longest packet the model port carries: its MTU plus the
// Ethernet header.
func (cfg Config) maxTxLen() int { return cfg.MTU + 14 }
