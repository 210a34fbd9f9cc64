package afxdp

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/internal/callgate"
	"github.com/packetio/packetio/internal/devqueues"
)

// Device is an interface opened through AF_XDP: one XDP program steering
// the packets it names to one socket per queue, every queue over one shared
// UMEM where the kernel allows it.
type Device struct {
	name                                string
	fleet                               *xdp.Fleet
	info                                xdp.Info
	devqueues.Lists[*TxQueue, *RxQueue] // Tx and Rx, with the Device lookups
	caps                                packetio.Capabilities
	stamps                              bool
	txCsum                              bool // transmit queues honour checksum requests

	closeMu sync.Mutex
	closed  atomic.Bool
}

var _ packetio.Device = (*Device)(nil)

// backendName is the backend's name in Capabilities and errors.
const backendName = "afxdp"

// Open opens the interface named ifname (in the network namespace of the
// calling thread) with one transmit and one receive queue per bound queue.
// WithSteering is required. Need-wakeup is always on, every redirected frame
// is stamped on arrival, and the queues share one region when the kernel
// allows it. Every failure is a *packetio.OpError (Op "open") matching a
// sentinel, and leaves nothing behind: ErrInvalid for an option value out
// of range (the message names the option and the value, "WithFrames(-1):
// ...") or a name no interface can have (empty, over 15 bytes, a NUL),
// ErrNoDevice for a missing interface, ErrUnsupported for an interface that
// is down (as afpacket) and for what the kernel, driver or options cannot
// give, ErrBusy when another process runs an XDP program on the interface
// (see WithReplaceProgram), ErrPermission without the privileges. A failed
// Open returns a nil *Device, whose methods return zero values and whose
// Close returns an error matching ErrClosed.
func Open(ifname string, opts ...Option) (*Device, error) {
	c := newConfig(opts)
	fail := func(err error) (*Device, error) {
		return nil, packetio.NewOpError("open", backendName, ifname, packetio.NoQueue, err)
	}
	if err := xdp.CheckInterfaceName(ifname); err != nil {
		// The message quotes the name; a NUL or a newline has no place
		// in the error's text.
		return nil, packetio.NewOpError("open", backendName, "", packetio.NoQueue, err)
	}
	if err := c.validate(); err != nil {
		return fail(err)
	}
	if c.txStamps {
		if err := checkTxStamps(ifname); err != nil {
			return fail(err)
		}
	}
	match, err := c.steeringMatch(func() ([][6]byte, error) { return localMACs(ifname) })
	if err != nil {
		return fail(err)
	}
	xo := c.xdpOptions(match)
	fleet, err := xdp.Open(ifname, xo...)
	if err != nil {
		return fail(err)
	}
	info, err := fleet.Info()
	if err != nil {
		fleet.Close()
		return fail(err)
	}
	d := &Device{name: ifname, fleet: fleet, info: info, stamps: info.Timestamps != "off", txCsum: c.txCsum}
	if c.txCsum && info.ZeroCopy {
		// In copy mode the kernel finishes the sum in software; a
		// zero-copy driver must say it honours the request, or it sends
		// the frame with the partial sum and no error anywhere.
		if feat, ok := fleet.Features(); !ok || !feat.TxChecksum() {
			fleet.Close()
			return fail(fmt.Errorf("%w: WithTxChecksumOffload: the driver does not report transmit checksum offload for AF_XDP (netdev xsk-features)", packetio.ErrUnsupported))
		}
	}
	var shared *region
	if mem := fleet.Memory(); mem != nil {
		shared = newRegion(mem, info.FrameSize)
	}
	for i, s := range fleet.Sockets() {
		reg := shared
		if reg == nil {
			reg = newRegion(s.UMEM(), info.FrameSize)
		}
		d.Tx = append(d.Tx, &TxQueue{d: d, s: s, index: i, reg: reg, addrs: make([]uint64, 0, 4096)})
		if !c.txOnly {
			d.Rx = append(d.Rx, &RxQueue{d: d, s: s, index: i, reg: reg})
		}
	}
	maxPkt, maxTx := 0, 0
	if len(fleet.Sockets()) > 0 {
		maxPkt, maxTx = fleet.Sockets()[0].MaxPacket(), fleet.Sockets()[0].MaxTxLen()
		if c.txOnly {
			maxPkt = info.FrameSize
		}
	}
	d.caps = packetio.Capabilities{
		Backend:           backendName,
		ZeroCopy:          info.ZeroCopy,
		KernelCoexistence: true,
		MultiBuffer:       info.MultiBuffer,
		RSS:               len(d.Rx) > 1,
		RxTimestamps:      d.stamps && !c.txOnly,
		TxChecksumOffload: c.txCsum,
		BlockingPoll:      true,
		SharedRegion:      shared != nil,
		HandsBackFrames:   true,
		MaxFrameSize:      maxPkt,
		MaxTxLen:          maxTx,
		MaxQueues:         min(xdp.MaxQueues, info.QueuesTotal),
		NUMABound:         info.NUMABound,
		NUMANode:          info.NUMANode,
		ReadyFD:           len(d.Rx) > 0 && !c.txOnly,
		SteeringBy:        info.Hook.String(),
	}
	return d, nil
}

// Capabilities reports what the device took. RxTimestamps turns false if a
// receive queue finds a stamp that reads zero, which the program never
// writes: a fault, counted in Stats.
func (d *Device) Capabilities() packetio.Capabilities {
	if d == nil {
		return packetio.Capabilities{}
	}
	c := d.caps
	for _, q := range d.Rx {
		if q.noStamps.Load() {
			c.RxTimestamps = false
		}
	}
	return c
}

// Info is the datapath's report: mode, zero-copy, filter, clocks, tuning.
// A nil Device reports the zero Info.
func (d *Device) Info() xdp.Info {
	if d == nil {
		return xdp.Info{}
	}
	return d.info
}

// Fleet is the datapath under the device, for what this package does not
// wrap (per-socket statistics, the shared area). Do not close it: Close the
// device. A nil Device has none.
func (d *Device) Fleet() *xdp.Fleet {
	if d == nil {
		return nil
	}
	return d.fleet
}

// queues is the device's queue lists; nil for a nil Device, whose lookups
// then report no queues.
func (d *Device) queues() *devqueues.Lists[*TxQueue, *RxQueue] {
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

// Close closes every queue (waking a goroutine blocked in Poll), detaches
// the program and restores every host setting Open changed. It is
// idempotent. The Region and every slice taken from it are invalid
// afterwards. On a nil Device (what a failed Open returns, perhaps held in
// a packetio.Device) it returns an error matching packetio.ErrClosed.
// From inside a call on the device (a SendFunc build function), which it
// would wait for forever, it refuses with an error matching
// packetio.ErrBusy and changes nothing: close after the call returns.
func (d *Device) Close() error {
	if d == nil {
		return packetio.NewOpError("close", backendName, "", packetio.NoQueue, packetio.ErrClosed)
	}
	d.closeMu.Lock()
	defer d.closeMu.Unlock()
	if !d.closed.Load() && d.fleet.InsideCall() {
		return packetio.NewOpError("close", backendName, d.name, packetio.NoQueue, callgate.ErrInside)
	}
	if d.closed.Swap(true) {
		return nil
	}
	for _, q := range d.Tx {
		q.closed.Store(true)
	}
	for _, q := range d.Rx {
		q.closed.Store(true)
	}
	if err := d.fleet.Close(); err != nil {
		return packetio.NewOpError("close", backendName, d.name, packetio.NoQueue, err)
	}
	return nil
}
