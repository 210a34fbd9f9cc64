package afxdp

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/filter"
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
// sentinel: ErrNoDevice for a missing interface, ErrUnsupported for what
// the kernel, driver or options cannot give, ErrPermission without the
// privileges; it leaves nothing behind.
func Open(ifname string, opts ...Option) (*Device, error) {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	fail := func(err error) (*Device, error) {
		return nil, packetio.NewOpError("open", backendName, ifname, packetio.NoQueue, err)
	}
	if !c.steeringSet {
		return fail(fmt.Errorf("%w: no steering filter: the XDP program would take every packet on the interface from the kernel, SSH and ARP included; "+
			"name what you want with WithSteering, or take everything on purpose with WithSteering(packetio.SteeringFilter{Promiscuous: true})", packetio.ErrUnsupported))
	}
	match := filter.MatchNone()
	switch {
	case c.txOnly:
	case c.match != nil:
		match = *c.match
	default:
		m, err := filter.Steering(c.steering, func() ([][6]byte, error) { return localMACs(ifname) })
		if err != nil {
			return fail(err)
		}
		match = m
	}
	xo := []xdp.Option{
		xdp.WithNeedWakeup(),
		xdp.WithPreferSharedMemory(),
		xdp.WithFilter(match),
	}
	if !c.noStamps && !c.txOnly {
		xo = append(xo, xdp.WithRxTimestamps())
	}
	if c.queues > 0 {
		xo = append(xo, xdp.WithQueues(c.queues))
	}
	if c.frames > 0 {
		xo = append(xo, xdp.WithNumFrames(c.frames))
	}
	if c.frameSize > 0 {
		xo = append(xo, xdp.WithFrameSize(c.frameSize))
	}
	if c.multiBuffer {
		xo = append(xo, xdp.WithMultiBuffer())
	}
	if c.txOnly {
		xo = append(xo, xdp.WithRingSizes(0, xdp.DefaultRingSize, 0, xdp.DefaultRingSize))
	}
	if c.txCsum {
		xo = append(xo, xdp.WithTxMetadata())
	}
	if c.tuning != nil {
		xo = append(xo, xdp.WithHostTuning(*c.tuning))
	}
	xo = append(xo, c.xdp...)
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
	maxPkt := 0
	if len(fleet.Sockets()) > 0 {
		maxPkt = fleet.Sockets()[0].MaxPacket()
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
		MaxQueues:         min(xdp.MaxQueues, info.QueuesTotal),
	}
	return d, nil
}

// Capabilities reports what the device took. RxTimestamps turns false if a
// receive queue finds its driver cannot write the stamp (no XDP metadata
// area).
func (d *Device) Capabilities() packetio.Capabilities {
	c := d.caps
	for _, q := range d.Rx {
		if q.noStamps.Load() {
			c.RxTimestamps = false
		}
	}
	return c
}

// Info is the datapath's report: mode, zero-copy, filter, clocks, tuning.
func (d *Device) Info() xdp.Info { return d.info }

// Fleet is the datapath under the device, for what this package does not
// wrap (per-socket statistics, the shared area). Do not close it: Close the
// device.
func (d *Device) Fleet() *xdp.Fleet { return d.fleet }

// Close closes every queue (waking a goroutine blocked in Poll), detaches
// the program and restores every host setting Open changed. It is
// idempotent. The Region and every slice taken from it are invalid
// afterwards.
func (d *Device) Close() error {
	d.closeMu.Lock()
	defer d.closeMu.Unlock()
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
