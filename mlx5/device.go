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
	"github.com/packetio/packetio/internal/affinity"
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
	place     *affinity.Placement
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
}

// Info returns what Open found and decided.
func (d *Device) Info() Info {
	in := d.info
	in.Placement = d.place.String()
	in.PinFailures = d.pinFailed.Load()
	return in
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
// error wraps packetio.ErrUnsupported and says so. Everything half-built is
// released when a later step fails.
func Open(ifname string, opts ...Option) (dev *Device, err error) {
	c := defaults()
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	port, err := dv.Resolve(ifname)
	if err != nil {
		return nil, err
	}
	// A Go panic during bring-up becomes an error. (A fault inside C
	// cannot be caught.)
	defer func() {
		if r := recover(); r != nil {
			dev, err = nil, fmt.Errorf("mlx5 %s: bring-up failed: %v: %w", ifname, r, packetio.ErrUnsupported)
		}
	}()
	var undo cleanup
	defer func() {
		if err != nil {
			undo.run()
		}
	}()

	vd, err := dv.Open(port)
	if err != nil {
		return nil, hint(err)
	}
	undo.push(vd.Close)

	// Steering is compiled before the rings exist, so a refused filter
	// costs nothing.
	var specs []flow.Spec
	if c.rx > 0 {
		var own [6]byte
		if ifc, e := net.InterfaceByName(ifname); e == nil && len(ifc.HardwareAddr) == 6 {
			copy(own[:], ifc.HardwareAddr)
		}
		f := packetio.SteeringFilter{}
		if c.steering != nil {
			f = *c.steering
		}
		if specs, err = flow.Compile(f, own); err != nil {
			return nil, fmt.Errorf("mlx5 %s: %w", ifname, err)
		}
	}

	// The region: twice what the queues can hold unless fixed.
	plan0 := max(c.ringsPerQueue, 1)
	if c.multiPacket != 0 && vd.Flags&wqe.FlagEnhancedMPW != 0 && c.ringsPerQueue == 0 {
		plan0 = 4 // the copied form may take four rings per queue
	}
	frames := c.frames
	if frames == 0 {
		frames = 1
		for frames < 2*c.need(plan0) {
			frames <<= 1
		}
		frames = min(frames, MaxFrames)
	}
	mem, err := syscall.Mmap(-1, 0, frames*c.frameSize, syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("mlx5 %s: mapping %d frames of %d bytes: %v: %w", ifname, frames, c.frameSize, err, packetio.ErrUnsupported)
	}
	undo.push(func() { syscall.Munmap(mem) })
	_ = syscall.Madvise(mem, 14) // MADV_HUGEPAGE: advice only
	mr, err := vd.Register(mem)
	if err != nil {
		return nil, hint(err)
	}
	undo.push(mr.Close)

	required, err := vd.MinInline(mr, mem[:64])
	if err != nil {
		return nil, hint(err)
	}
	plan, err := c.planTx(vd.Flags, required)
	if err != nil {
		return nil, err
	}
	clk := vd.Clock()
	reg := queue.NewRegion(mem, c.frameSize)
	va := uint64(uintptrOf(mem))

	// Frames per queue, weighted by what each can have outstanding.
	txShare := plan.rings * c.txDepth
	rxShare := c.rxDepth
	unit := frames / max(1, c.tx*txShare+c.rx*rxShare)
	if unit < 1 {
		return nil, fmt.Errorf("mlx5 %s: %d frames cannot be split over the queues: %w", ifname, frames, packetio.ErrUnsupported)
	}
	next := 0
	carve := func(n int) (*pool.Frames, error) {
		p, err := pool.New(next, n, c.frameSize)
		next += n
		return p, err
	}
	var place *affinity.Placement
	if len(c.cpus) > 0 {
		if place, err = affinity.New(ifname, c.cpus); err != nil {
			return nil, fmt.Errorf("mlx5 %s: %v: %w", ifname, err, packetio.ErrUnsupported)
		}
	}

	d := &Device{Device: &queue.Device{}, place: place}
	var hwRx []*dv.RxQueue
	var csum uint8
	if c.csum {
		csum = wqe.CsumL3 | wqe.CsumL4
	}
	for i := 0; i < c.tx; i++ {
		var rings []*ring.Tx
		var qpn uint32
		for k := 0; k < plan.rings; k++ {
			hq, err := vd.CreateTx(c.txDepth)
			if err != nil {
				return nil, hint(err)
			}
			undo.push(hq.Close)
			if k == 0 {
				qpn = hq.QPN
			}
			r, err := ring.NewTx(ring.TxConfig{SQ: hq.SQ, CQ: hq.CQ, SQDbrec: hq.SQDbrec, CQDbrec: hq.CQDbrec, UAR: hq.UAR,
				QPN: hq.QPN, LKey: mr.LKey, Region: mem, RegionVA: va, FrameSize: c.frameSize,
				Mode: plan.mode, Inline: plan.inline, CsFlags: csum})
			if err != nil {
				return nil, fmt.Errorf("mlx5 %s tx %d: %v: %w", ifname, i, err, packetio.ErrUnsupported)
			}
			rings = append(rings, r)
		}
		p, err := carve(unit * txShare)
		if err != nil {
			return nil, err
		}
		q, err := queue.NewTx(queue.TxConfig{Name: fmt.Sprintf("mlx5 %s tx %d", ifname, i), Rings: rings, Region: reg, Pool: p,
			Pin: pinner(place, &d.pinFailed), Backend: map[string]uint64{"qpn": uint64(qpn), "sq_blocks": uint64(rings[0].Blocks()), "inline_bytes": uint64(plan.inline)}})
		if err != nil {
			return nil, err
		}
		d.Txs = append(d.Txs, q)
	}
	for i := 0; i < c.rx; i++ {
		hq, err := vd.CreateRx(c.rxDepth, clk.OK())
		if err != nil {
			return nil, hint(err)
		}
		undo.push(hq.Close)
		hwRx = append(hwRx, hq)
		if !hq.Stamped {
			clk = clock.Info{} // stamps on every queue or on none
		}
	}
	for i, hq := range hwRx {
		r, err := ring.NewRx(ring.RxConfig{RQ: hq.RQ, CQ: hq.CQ, RQDbrec: hq.RQDbrec, CQDbrec: hq.CQDbrec, LKey: mr.LKey,
			Region: mem, RegionVA: va, FrameSize: c.frameSize, Headroom: RxHeadroom, Clock: clk})
		if err != nil {
			return nil, fmt.Errorf("mlx5 %s rx %d: %v: %w", ifname, i, err, packetio.ErrUnsupported)
		}
		p, err := carve(unit * rxShare)
		if err != nil {
			return nil, err
		}
		q, err := queue.NewRx(queue.RxConfig{Name: fmt.Sprintf("mlx5 %s rx %d", ifname, i), Ring: r, Region: reg, Pool: p, Stamps: clk.OK(), Pin: pinner(place, &d.pinFailed),
			Backend: map[string]uint64{"cqn": uint64(hq.CQN), "rq_entries": uint64(r.Entries())}})
		if err != nil {
			return nil, err
		}
		d.Rxs = append(d.Rxs, q)
	}
	var steering []string
	if c.rx > 0 {
		g, err := vd.CreateRxGroup(hwRx)
		if err != nil {
			return nil, hint(err)
		}
		undo.push(g.Close)
		if err := g.Steer(specs); err != nil {
			return nil, hint(err)
		}
		for _, s := range specs {
			steering = append(steering, s.String())
		}
	}
	d.Caps = packetio.Capabilities{
		Backend:           "mlx5",
		ZeroCopy:          true,
		KernelCoexistence: true,
		RSS:               c.rx > 1,
		TxChecksumOffload: c.csum,
		RxChecksumFlags:   true,
		RxTimestamps:      c.rx > 0 && clk.OK(),
		SharedRegion:      true,
		HandsBackFrames:   true,
		MaxFrameSize:      c.frameSize - RxHeadroom,
		MaxQueues:         MaxQueues,
	}
	release := undo
	undo = nil
	var once sync.Once
	d.Release = func() error {
		once.Do(release.run)
		return nil
	}
	d.info = Info{
		Interface: ifname, IBDev: vd.IBDev, Port: vd.Port, Firmware: vd.Firmware, PortActive: vd.PortActive,
		InlineHeader: plan.inline, TxMode: plan.mode.String(), RingsPerTx: plan.rings, FrameSize: c.frameSize,
		Frames: frames, TxQueues: c.tx, RxQueues: c.rx, Steering: steering, Clock: c.rx > 0 && clk.OK(),
	}
	return d, nil
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
func pinner(place *affinity.Placement, failed *atomic.Uint64) func() {
	return func() {
		if _, err := place.Pin(); err != nil {
			failed.Add(1)
		}
	}
}
