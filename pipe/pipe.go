// Package pipe joins two packetio devices back to back in memory: what one
// transmits, the other receives. It honours the whole packetio contract
// (packetiotest.Run passes on it, unprivileged), so programs written against
// packetio can be tested without root, a NIC or a veth pair.
//
// Transmit queue i of one device feeds receive queue i of the other, like a
// cable with one lane per queue. The wire copies each frame into a frame the
// receiver posted with Fill, as a NIC writes into a posted buffer; when the
// receiver has posted none, the frame is dropped and counted in the
// receiver's RxStats.Dropped, as a NIC does. A transmit queue whose lane has
// no receive queue at the far end drops what it sends and counts it in
// Backend["no_receiver"].
//
// A pipe has no clock: it stamps neither arrivals nor departures
// (Capabilities RxTimestamps and TxTimestamps are false, and its queues are
// not packetio.TimestampTransmitter). A stamp taken in Transmit would only
// say when the program called, which the program knows already.
//
//	a, b, err := pipe.New(pipe.WithQueues(2))
package pipe

import (
	"errors"
	"fmt"
	"sync"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/devqueues"
	"github.com/packetio/packetio/internal/numa"
	"github.com/packetio/packetio/internal/pool"
)

// Device is one end of a pipe.
type Device struct {
	name                                string
	region                              *region
	devqueues.Lists[*txQueue, *rxQueue] // Tx and Rx, with the Device lookups
	peer                                *Device
	drop                                func([]byte) bool
	wire                                func(frames [][]byte, order []int) []int

	closeOnce sync.Once
}

var (
	_ packetio.Device  = (*Device)(nil)
	_ packetio.TxQueue = (*txQueue)(nil)
	_ packetio.RxQueue = (*rxQueue)(nil)
	_ packetio.Region  = (*region)(nil)
)

type config struct {
	queues    int
	frames    int
	frameSize int
	ringSize  int
	drop      func([]byte) bool
	wire      func(frames [][]byte, order []int) []int
	nilHook   string // the hook option given nil, if any
	numaNode  int    // WithNUMANode; meaningful when numaSet
	numaSet   bool
	sysRoot   string // tests: a fake sysfs; "" is /sys
}

// Option changes how New builds the pipe. The zero configuration is one
// queue each way, 4096 frames of 2048 bytes per device, rings of 512.
type Option func(*config)

// WithQueues sets the number of transmit and receive queues of each end.
func WithQueues(n int) Option { return func(c *config) { c.queues = n } }

// WithFrames sets the number of frames in each end's region.
func WithFrames(n int) Option { return func(c *config) { c.frames = n } }

// WithFrameSize sets the frame size, a power of two from 128 to 65536.
func WithFrameSize(n int) Option { return func(c *config) { c.frameSize = n } }

// WithRingSize sets the depth of every fill, receive and transmit ring, a
// power of two.
func WithRingSize(n int) Option { return func(c *config) { c.ringSize = n } }

// WithDrop installs a loss hook: the wire calls it with every frame's bytes
// (from either end) and drops the frame when it returns true. Dropped frames
// are counted in the receiver's Backend["wire_dropped"]. The hook runs on the
// transmitting goroutine and must not keep or modify the slice.
func WithDrop(drop func(frame []byte) bool) Option {
	return func(c *config) {
		c.drop = drop
		if drop == nil {
			c.nilHook = "WithDrop"
		}
	}
}

// WithWire installs a wire model that sees each transmitted batch whole and
// decides what arrives and in which order: it is given the batch's frames
// and returns, appended to order (scratch it may use), the indexes of the
// frames as they arrive. An index left out is a lost frame (counted in the
// receiver's Backend["wire_dropped"]); an index given twice is a duplicate.
// So it can reorder, lose and duplicate. It runs on the transmitting
// goroutine, must not keep or modify the frames, and is applied before
// WithDrop.
//
//	// swap every pair of frames; an odd last one arrives last
//	pipe.WithWire(func(f [][]byte, order []int) []int {
//		for i := range f {
//			order = append(order, min(i^1, len(f)-1))
//		}
//		return order
//	})
func WithWire(wire func(frames [][]byte, order []int) []int) Option {
	return func(c *config) {
		c.wire = wire
		if wire == nil {
			c.nilHook = "WithWire"
		}
	}
}

// WithNUMANode puts each end's region in memory bound to NUMA node n
// (MPOL_BIND|MPOL_F_STATIC_NODES, set before its pages are touched and all
// of them faulted in by New) instead of the Go heap; Close gives the pages
// back. -1, the default, binds nothing: a pipe has no NIC to follow. A node
// that is not online is refused by New with packetio.ErrInvalid naming it,
// any node on a host without NUMA with packetio.ErrUnsupported.
// Capabilities().NUMABound and NUMANode say where the region is.
func WithNUMANode(n int) Option { return func(c *config) { c.numaNode, c.numaSet = n, n != -1 } }

// New returns two devices joined back to back.
func New(opts ...Option) (a, b packetio.Device, err error) {
	c := config{queues: 1, frames: 4096, frameSize: 2048, ringSize: 512}
	for i, o := range opts {
		if o == nil {
			return nil, nil, packetio.NewOpError("open", backendName, "", packetio.NoQueue,
				fmt.Errorf("%w: option %d is nil", packetio.ErrInvalid, i))
		}
		o(&c)
	}
	if err := c.check(); err != nil {
		return nil, nil, packetio.NewOpError("open", backendName, "", packetio.NoQueue, err)
	}
	node, err := c.chooseNode()
	if err != nil {
		return nil, nil, packetio.NewOpError("open", backendName, "", packetio.NoQueue, err)
	}
	da, err := newDevice("pipe-a", &c, node)
	if err != nil {
		return nil, nil, err
	}
	db, err := newDevice("pipe-b", &c, node)
	if err != nil {
		da.region.release()
		return nil, nil, err
	}
	da.peer, db.peer = db, da
	for i, q := range da.Tx {
		q.lane = db.rxLane(i)
	}
	for i, q := range db.Tx {
		q.lane = da.rxLane(i)
	}
	return da, db, nil
}

func (c *config) check() error {
	pow2 := func(n int) bool { return n > 0 && n&(n-1) == 0 }
	switch {
	case c.nilHook != "":
		return fmt.Errorf("%w: %s(nil): a nil hook; leave the option out for none", packetio.ErrInvalid, c.nilHook)
	case c.queues < 1 || c.queues > maxQueues:
		return fmt.Errorf("%w: WithQueues(%d), want 1 to %d", packetio.ErrInvalid, c.queues, maxQueues)
	case !pow2(c.frameSize) || c.frameSize < 128 || c.frameSize > 65536:
		return fmt.Errorf("%w: WithFrameSize(%d), want a power of two from 128 to 65536", packetio.ErrInvalid, c.frameSize)
	case !pow2(c.ringSize) || c.ringSize > 1<<16:
		return fmt.Errorf("%w: WithRingSize(%d), want a power of two up to 65536", packetio.ErrInvalid, c.ringSize)
	case c.frames < 2*c.queues:
		return fmt.Errorf("%w: WithFrames(%d) cannot give each of %d queues one frame per direction", packetio.ErrInvalid, c.frames, c.queues)
	case c.frames > 1<<20:
		return fmt.Errorf("%w: WithFrames(%d), at most %d", packetio.ErrInvalid, c.frames, 1<<20)
	case c.numaSet && (c.numaNode < 0 || c.numaNode > numa.MaxNode):
		return fmt.Errorf("%w: WithNUMANode(%d), want a node from 0 to %d, or -1 for none", packetio.ErrInvalid, c.numaNode, numa.MaxNode)
	}
	return nil
}

// chooseNode is the node the regions are bound to, numa.Unset for none.
func (c *config) chooseNode() (int, error) {
	if !c.numaSet {
		return numa.Unset, nil
	}
	root := c.sysRoot
	if root == "" {
		root = "/sys"
	}
	n, err := numa.Choose(root, "", 0, c.numaNode)
	switch {
	case errors.Is(err, numa.ErrBadNode):
		return numa.Unset, fmt.Errorf("%w: WithNUMANode(%d): %v", packetio.ErrInvalid, c.numaNode, err)
	case err != nil:
		return numa.Unset, fmt.Errorf("%w: WithNUMANode(%d): %v", packetio.ErrUnsupported, c.numaNode, err)
	}
	return n, nil
}

const maxQueues = 64

func newDevice(name string, c *config, node int) (*Device, error) {
	reg, err := newRegion(c.frames, c.frameSize, node)
	if err != nil {
		return nil, packetio.NewOpError("open", backendName, name, packetio.NoQueue, err)
	}
	d := &Device{name: name, region: reg, drop: c.drop, wire: c.wire}
	// Transmit queues take the front of the region and receive queues the
	// back, each an equal share; the first queues take the remainder so no
	// frame belongs to nobody.
	nq := 2 * c.queues
	per, extra := c.frames/nq, c.frames%nq
	first := 0
	for i := 0; i < nq; i++ {
		count := per
		if i < extra {
			count++
		}
		p, err := pool.New(first, count, c.frameSize)
		if err != nil {
			reg.release()
			return nil, packetio.NewOpError("open", backendName, name, packetio.NoQueue, err)
		}
		first += count
		if i < c.queues {
			d.Tx = append(d.Tx, newTxQueue(d, i, p, c.ringSize))
		} else {
			d.Rx = append(d.Rx, newRxQueue(d, i-c.queues, p, c.ringSize))
		}
	}
	return d, nil
}

func (d *Device) rxLane(i int) *rxQueue {
	if i < len(d.Rx) {
		return d.Rx[i]
	}
	return nil
}

// Capabilities reports what a pipe does: one shared region, frames handed
// back, blocking Poll, a copy on the wire. A descriptor names bytes inside
// one frame, so the frame size bounds what Transmit takes. A nil Device
// reports only the backend.
func (d *Device) Capabilities() packetio.Capabilities {
	if d == nil {
		return packetio.Capabilities{Backend: backendName}
	}
	return packetio.Capabilities{
		Backend:         backendName,
		BlockingPoll:    true,
		SharedRegion:    true,
		HandsBackFrames: true,
		MaxFrameSize:    d.region.frameSize,
		MaxTxLen:        d.region.frameSize,
		MaxQueues:       maxQueues,
		NUMABound:       d.region.bound,
		NUMANode:        max(d.region.node, 0),
	}
}

// queues is the device's queue lists; nil for a nil Device, whose lookups
// then report no queues.
func (d *Device) queues() *devqueues.Lists[*txQueue, *rxQueue] {
	if d == nil {
		return nil
	}
	return &d.Lists
}

// NumTxQueues is the number of transmit queues (0 on a nil Device).
func (d *Device) NumTxQueues() int { return d.queues().NumTxQueues() }

// NumRxQueues is the number of receive queues (0 on a nil Device).
func (d *Device) NumRxQueues() int { return d.queues().NumRxQueues() }

// TxQueue returns transmit queue i, or nil when i is out of range or the
// Device is nil.
func (d *Device) TxQueue(i int) packetio.TxQueue { return d.queues().TxQueue(i) }

// RxQueue returns receive queue i, or nil when i is out of range or the
// Device is nil.
func (d *Device) RxQueue(i int) packetio.RxQueue { return d.queues().RxQueue(i) }

// Close closes this end: every queue. The other end stays open and what it
// sends is dropped. It wakes every goroutine blocked in Poll and is
// idempotent. On a nil Device it returns an error matching
// packetio.ErrClosed.
func (d *Device) Close() error {
	if d == nil {
		return packetio.NewOpError("close", backendName, "", packetio.NoQueue,
			fmt.Errorf("%w: nil *pipe.Device", packetio.ErrClosed))
	}
	d.closeOnce.Do(func() {
		for _, q := range d.Tx {
			q.Close()
		}
		for _, q := range d.Rx {
			q.Close()
		}
		d.region.release()
	})
	return nil
}

// String names the end, for logs.
func (d *Device) String() string {
	if d == nil {
		return "pipe <nil>"
	}
	return d.name
}

// opErr is the error of op on queue i: a *packetio.OpError whose cause is
// err.
func (d *Device) opErr(op string, i int, err error) error {
	return packetio.NewOpError(op, backendName, d.name, i, err)
}

// backendName is the backend's name in Capabilities and errors.
const backendName = "pipe"
