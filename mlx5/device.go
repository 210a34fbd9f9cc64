//go:build linux && cgo && mlx5 && (amd64 || arm64)

package mlx5

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/host"
	"github.com/packetio/packetio/internal/numa"
	"github.com/packetio/packetio/internal/pool"
	"github.com/packetio/packetio/mlx5/internal/clock"
	"github.com/packetio/packetio/mlx5/internal/dv"
	"github.com/packetio/packetio/mlx5/internal/flow"
	"github.com/packetio/packetio/mlx5/internal/queue"
	"github.com/packetio/packetio/mlx5/internal/ring"
	"github.com/packetio/packetio/mlx5/internal/wqe"
)

// Device is an open mlx5 device: packetio.Device plus what Open decided.
type Device struct {
	*queue.Device
	info      Info
	place     *host.Placement
	pinFailed atomic.Uint64
}

var (
	_ packetio.Device            = (*Device)(nil)
	_ packetio.TxQueue           = (*queue.TxQueue)(nil)
	_ packetio.TimestampReceiver = (*queue.RxQueue)(nil)
)

// Info says what Open found and decided, for start-up messages.
type Info struct {
	Interface    string   // the interface opened
	IBDev        string   // its verbs device, such as mlx5_0
	Port         int      // its port on that device
	Firmware     string   // the firmware version
	PortActive   bool     // the port was up at Open
	InlineHeader int      // header bytes inlined per SEND entry
	TxMode       string   // "send", "multi-packet (pointer)" or "multi-packet (copied)"
	RingsPerTx   int      // hardware send queues per transmit queue
	FrameSize    int      // bytes per frame
	Frames       int      // frames in the region
	TxQueues     int      // transmit queues
	RxQueues     int      // receive queues
	Steering     []string // one line per flow rule installed
	Clock        bool     // receive timestamps available
	Placement    string   // how queue goroutines are placed on CPUs
	PinFailures  uint64   // pins the kernel refused (the goroutine ran unpinned)
	NUMABound    bool     // the region is bound (MPOL_BIND) to NUMANode
	NUMANode     int      // meaningful when NUMABound
}

// Info returns what Open found and decided (nothing on a nil Device).
func (d *Device) Info() Info {
	if d == nil {
		return Info{}
	}
	in := d.info
	in.Placement = d.place.String()
	in.PinFailures = d.pinFailed.Load()
	return in
}

// Capabilities reports what the device does; a nil Device (what a failed
// Open returns) reports nothing.
func (d *Device) Capabilities() packetio.Capabilities {
	if d == nil {
		return packetio.Capabilities{}
	}
	return d.Device.Capabilities()
}

// NumTxQueues is the number of transmit queues (0 on a nil Device).
func (d *Device) NumTxQueues() int {
	if d == nil {
		return 0
	}
	return d.Device.NumTxQueues()
}

// NumRxQueues is the number of receive queues (0 on a nil Device).
func (d *Device) NumRxQueues() int {
	if d == nil {
		return 0
	}
	return d.Device.NumRxQueues()
}

// TxQueue returns transmit queue i, or nil when i is out of range or the
// Device is nil.
func (d *Device) TxQueue(i int) packetio.TxQueue {
	if d == nil {
		return nil
	}
	return d.Device.TxQueue(i)
}

// RxQueue returns receive queue i, or nil when i is out of range or the
// Device is nil.
func (d *Device) RxQueue(i int) packetio.RxQueue {
	if d == nil {
		return nil
	}
	return d.Device.RxQueue(i)
}

// Close closes every queue, then releases the hardware; a second call
// returns nil. Close of a nil Device is an error matching
// packetio.ErrClosed, not a panic.
func (d *Device) Close() error {
	if d == nil {
		return packetio.NewOpError("close", queue.Backend, "", packetio.NoQueue,
			fmt.Errorf("%w: nil *mlx5.Device (the result of a failed Open)", packetio.ErrClosed))
	}
	return d.Device.Close()
}

// String is Info in one line.
func (i Info) String() string {
	return fmt.Sprintf("mlx5 %s (%s port %d, fw %s): %d tx (%s, %d ring(s), %d inline bytes), %d rx, %d frames of %d bytes",
		i.Interface, i.IBDev, i.Port, i.Firmware, i.TxQueues, i.TxMode, i.RingsPerTx, i.InlineHeader, i.RxQueues, i.Frames, i.FrameSize)
}

// cleanup is a stack of releases, run in reverse.
type cleanup []func()

func (c *cleanup) push(f func()) { *c = append(*c, f) }

func (c *cleanup) run() {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i]()
	}
	*c = nil
}

// Open opens the ConnectX port behind ifname. Options are checked before any
// hardware is looked at. On a machine where no mlx5 device backs ifname the
// error matches packetio.ErrNoDevice and says so. Every failure is a
// *packetio.OpError (Op "open"), and everything half-built is released when
// a later step fails.
func Open(ifname string, opts ...Option) (*Device, error) {
	d, err := open(ifname, opts)
	if err != nil {
		return nil, packetio.NewOpError("open", queue.Backend, ifname, packetio.NoQueue, err)
	}
	return d, nil
}

// opener is what Open's steps share: each builds on the ones before and
// pushes the undo of what it made.
type opener struct {
	ifname   string
	c        config
	undo     cleanup
	vd       *dv.Device
	specs    []flow.Spec
	frames   int
	mem      []byte
	mr       *dv.MR
	plan     txPlan
	clk      clock.Info
	reg      *queue.Region
	va       uint64
	unit     int // frames per unit of queue depth
	next     int // next free frame index
	place    *host.Placement
	d        *Device
	hwRx     []*dv.RxQueue
	steering []string
	maxTxLen int // the link's MTU + 14
	node     int // the NUMA node the region is bound to, numa.Unset for none
}

func open(ifname string, opts []Option) (dev *Device, err error) {
	c, err := validate(ifname, opts)
	if err != nil {
		return nil, err
	}
	port, err := dv.Resolve(ifname)
	if err != nil {
		return nil, err
	}
	o := &opener{ifname: ifname, c: c}
	// A Go panic during bring-up becomes an error. (A fault inside C
	// cannot be caught.)
	defer func() {
		if r := recover(); r != nil {
			dev, err = nil, fmt.Errorf("%w: bring-up failed: %v", packetio.ErrSetup, r)
		}
		if err != nil {
			o.undo.run()
		}
	}()
	if o.vd, err = dv.Open(port); err != nil {
		return nil, hint(err)
	}
	o.undo.push(o.vd.Close)
	for _, step := range []func() error{
		o.readMTU,
		o.compileSteering, // before the rings exist, so a refused filter costs nothing
		o.mapRegion,
		o.planQueues,
		o.buildTx,
		o.buildRx,
		o.steer,
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return o.finish(), nil
}

// readMTU reads the interface's MTU: Transmit refuses a longer packet (plus
// the Ethernet header) up front, as the port would drop it.
func (o *opener) readMTU() error {
	ifc, err := net.InterfaceByName(o.ifname)
	if err != nil {
		return fmt.Errorf("%w: read the MTU of %q: %w", packetio.ErrNoDevice, o.ifname, err)
	}
	o.maxTxLen = ifc.MTU + etherHeaderLen
	return nil
}

// etherHeaderLen is the Ethernet header in front of an MTU's worth of
// payload.
const etherHeaderLen = 14

// compileSteering turns the steering filter into flow specs.
func (o *opener) compileSteering() error {
	if o.c.rx == 0 {
		return nil
	}
	var own [6]byte
	if ifc, e := net.InterfaceByName(o.ifname); e == nil && len(ifc.HardwareAddr) == 6 {
		copy(own[:], ifc.HardwareAddr)
	}
	f := packetio.SteeringFilter{}
	if o.c.steering != nil {
		f = *o.c.steering
	}
	var err error
	o.specs, err = flow.Compile(f, own)
	return err
}

// mapRegion maps the frame region (twice what the queues can hold unless
// fixed) and registers it with the card.
func (o *opener) mapRegion() error {
	c := &o.c
	plan0 := max(c.ringsPerQueue, 1)
	if c.multiPacket != 0 && o.vd.Flags&wqe.FlagEnhancedMPW != 0 && c.ringsPerQueue == 0 {
		plan0 = 4 // the copied form may take four rings per queue
	}
	o.frames = c.frames
	if o.frames == 0 {
		o.frames = 1
		for o.frames < 2*c.need(plan0) {
			o.frames <<= 1
		}
		o.frames = min(o.frames, MaxFrames)
	}
	if err := o.chooseNode(); err != nil {
		return err
	}
	mem, err := mapFrames(o.frames*c.frameSize, o.node)
	if err != nil {
		return fmt.Errorf("mapping %d frames of %d bytes: %w", o.frames, c.frameSize, err)
	}
	o.mem = mem
	o.undo.push(func() { unmapFrames(mem) })
	if o.mr, err = o.vd.Register(mem); err != nil {
		return hint(err)
	}
	o.undo.push(o.mr.Close)
	return nil
}

// planQueues decides the transmit mode, the clock, the worker placement
// and how many frames each queue gets.
func (o *opener) planQueues() error {
	c := &o.c
	required, err := o.vd.MinInline(o.mr, o.mem[:64])
	if err != nil {
		return hint(err)
	}
	if o.plan, err = c.planTx(o.vd.Flags, required); err != nil {
		return err
	}
	o.clk = o.vd.Clock()
	o.reg = queue.NewRegion(o.mem, c.frameSize)
	o.va = uint64(uintptrOf(o.mem))
	// Frames per queue, weighted by what each can have outstanding.
	o.unit = o.frames / max(1, c.tx*o.plan.rings*c.txDepth+c.rx*c.rxDepth)
	if o.unit < 1 {
		return fmt.Errorf("%w: %d frames cannot be split over the queues", packetio.ErrInvalid, o.frames)
	}
	if len(c.cpus) > 0 {
		if o.place, err = host.New(o.ifname, c.cpus); err != nil {
			return fmt.Errorf("%w: %w", packetio.ErrInvalid, err)
		}
	}
	o.d = &Device{Device: &queue.Device{Iface: o.ifname}, place: o.place}
	return nil
}

// carve takes the next n frames as one queue's pool.
func (o *opener) carve(n int) (*pool.Frames, error) {
	p, err := pool.New(o.next, n, o.c.frameSize)
	o.next += n
	return p, err
}

// buildTx creates the transmit queues: plan.rings hardware send queues
// each, their rings, pools and queues.
func (o *opener) buildTx() error {
	c := &o.c
	var csum uint8
	if c.csum {
		csum = wqe.CsumL3 | wqe.CsumL4
	}
	for i := 0; i < c.tx; i++ {
		var rings []*ring.Tx
		var qpn uint32
		for k := 0; k < o.plan.rings; k++ {
			hq, err := o.vd.CreateTx(c.txDepth)
			if err != nil {
				return hint(err)
			}
			o.undo.push(hq.Close)
			if k == 0 {
				qpn = hq.QPN
			}
			r, err := ring.NewTx(ring.TxConfig{SQ: hq.SQ, CQ: hq.CQ, SQDbrec: hq.SQDbrec, CQDbrec: hq.CQDbrec, UAR: hq.UAR,
				QPN: hq.QPN, LKey: o.mr.LKey, Region: o.mem, RegionVA: o.va, FrameSize: c.frameSize,
				Mode: o.plan.mode, Inline: o.plan.inline, CsFlags: csum})
			if err != nil {
				return fmt.Errorf("tx %d: %w: %w", i, packetio.ErrSetup, err)
			}
			rings = append(rings, r)
		}
		p, err := o.carve(o.unit * o.plan.rings * c.txDepth)
		if err != nil {
			return err
		}
		q, err := queue.NewTx(queue.TxConfig{Iface: o.ifname, Index: i, Rings: rings, Region: o.reg, Pool: p,
			Pin: pinner(o.place, &o.d.pinFailed), MaxLen: o.maxTxLen, Backend: map[string]uint64{"qpn": uint64(qpn), "sq_blocks": uint64(rings[0].Blocks()), "inline_bytes": uint64(o.plan.inline)}})
		if err != nil {
			return err
		}
		o.d.Tx = append(o.d.Tx, q)
	}
	return nil
}

// buildRx creates the receive queues: the hardware queues first (stamps
// on every queue or on none), then their rings, pools and queues.
func (o *opener) buildRx() error {
	c := &o.c
	for i := 0; i < c.rx; i++ {
		hq, err := o.vd.CreateRx(c.rxDepth, o.clk.OK())
		if err != nil {
			return hint(err)
		}
		o.undo.push(hq.Close)
		o.hwRx = append(o.hwRx, hq)
		if !hq.Stamped {
			o.clk = clock.Info{}
		}
	}
	for i, hq := range o.hwRx {
		r, err := ring.NewRx(ring.RxConfig{RQ: hq.RQ, CQ: hq.CQ, RQDbrec: hq.RQDbrec, CQDbrec: hq.CQDbrec, LKey: o.mr.LKey,
			Region: o.mem, RegionVA: o.va, FrameSize: c.frameSize, Headroom: RxHeadroom, Clock: o.clk})
		if err != nil {
			return fmt.Errorf("rx %d: %w: %w", i, packetio.ErrSetup, err)
		}
		p, err := o.carve(o.unit * c.rxDepth)
		if err != nil {
			return err
		}
		q, err := queue.NewRx(queue.RxConfig{Iface: o.ifname, Index: i, Ring: r, Region: o.reg, Pool: p, Stamps: o.clk.OK(), Pin: pinner(o.place, &o.d.pinFailed),
			Backend: map[string]uint64{"cqn": uint64(hq.CQN), "rq_entries": uint64(r.Entries())}})
		if err != nil {
			return err
		}
		o.d.Rx = append(o.d.Rx, q)
	}
	return nil
}

// steer groups the receive queues and installs the flow rules.
func (o *opener) steer() error {
	if o.c.rx == 0 {
		return nil
	}
	g, err := o.vd.CreateRxGroup(o.hwRx)
	if err != nil {
		return hint(err)
	}
	o.undo.push(g.Close)
	if err := g.Steer(o.specs); err != nil {
		return hint(err)
	}
	for _, s := range o.specs {
		o.steering = append(o.steering, s.String())
	}
	return nil
}

// finish records what the device does and hands the undo list to Close.
func (o *opener) finish() *Device {
	c, d := &o.c, o.d
	d.Caps = packetio.Capabilities{
		Backend:           queue.Backend,
		ZeroCopy:          true,
		KernelCoexistence: true,
		RSS:               c.rx > 1,
		TxChecksumOffload: c.csum,
		RxChecksumFlags:   true,
		RxTimestamps:      c.rx > 0 && o.clk.OK(),
		SharedRegion:      true,
		HandsBackFrames:   true,
		MaxFrameSize:      c.frameSize - RxHeadroom,
		MaxTxLen:          o.maxTxLen,
		MaxQueues:         MaxQueues,
		NUMABound:         o.node != numa.Unset,
		NUMANode:          max(o.node, 0),
	}
	release := o.undo
	o.undo = nil
	var once sync.Once
	d.Release = func() error {
		once.Do(release.run)
		return nil
	}
	d.info = Info{
		Interface: o.ifname, IBDev: o.vd.IBDev, Port: o.vd.Port, Firmware: o.vd.Firmware, PortActive: o.vd.PortActive,
		InlineHeader: o.plan.inline, TxMode: o.plan.mode.String(), RingsPerTx: o.plan.rings, FrameSize: c.frameSize,
		Frames: o.frames, TxQueues: c.tx, RxQueues: c.rx, Steering: o.steering, Clock: c.rx > 0 && o.clk.OK(),
		NUMABound: o.node != numa.Unset, NUMANode: max(o.node, 0),
	}
	return d
}

// hint adds what to do about a permission error.
func hint(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) && (errno == syscall.EPERM || errno == syscall.EACCES) ||
		strings.Contains(err.Error(), "Operation not permitted") || strings.Contains(err.Error(), "Permission denied") {
		return fmt.Errorf("%w (raw-packet QPs need CAP_NET_RAW, and the pinned region CAP_IPC_LOCK or a large memlock limit)", err)
	}
	return err
}

// pinner is the queues' first-use hook: it pins the goroutine that first
// drives a queue with place (a nil place leaves it to the scheduler) and
// counts a pin the kernel refused, which Info reports.
func pinner(place *host.Placement, failed *atomic.Uint64) func() {
	return func() {
		if _, err := place.Pin(); err != nil {
			failed.Add(1)
		}
	}
}
