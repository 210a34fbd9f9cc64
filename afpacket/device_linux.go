//go:build linux

package afpacket

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/devqueues"
	"github.com/packetio/packetio/internal/pool"
)

// Device is an opened interface: AF_PACKET sockets (one per queue index),
// their receive rings and one frame region shared by every queue.
type Device struct {
	name                                string
	ifindex                             int
	cfg                                 resolved
	reg                                 *region
	socks                               []*sock
	efds                                []int
	devqueues.Lists[*TxQueue, *RxQueue] // Tx and Rx, with the Device lookups
	caps                                packetio.Capabilities
	numaBound                           bool // the region is a mapping bound to numaNode
	numaNode                            int

	closeMu sync.Mutex
	closed  atomic.Bool
}

var _ packetio.Device = (*Device)(nil)

// testHookSocket, when set by a test, runs after socket i is set up (receive
// queues' sockets first, then transmit queues'); an error makes Open fail
// there, to prove the rollback.
var testHookSocket func(i int) error

// backendName is the backend's name in Capabilities and errors.
const backendName = "afpacket"

// Open opens the interface named ifname with the given options (default: one
// transmit and one receive queue, 4096 frames of 2048 bytes). It needs
// CAP_NET_RAW and an interface that is up; it opens the interface in the
// network namespace of the calling thread. Every failure is a
// *packetio.OpError (Op "open") matching a sentinel (ErrNoDevice for a
// missing interface, ErrInvalid for a bad option or name, ErrUnsupported
// for an interface that is down, ErrPermission without CAP_NET_RAW) and
// undoes what was set up.
func Open(ifname string, opts ...Option) (d *Device, err error) {
	fail := func(format string, args ...any) error {
		return packetio.NewOpError("open", backendName, ifname, packetio.NoQueue, fmt.Errorf(format, args...))
	}
	cfg, err := validate(ifname, opts)
	if err != nil {
		return nil, fail("%w", err)
	}
	d = &Device{name: ifname, cfg: cfg}
	dev := d // the named result is nil by the time the deferred cleanup runs
	defer func() {
		if err != nil {
			dev.teardown()
		}
	}()

	probe, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fail("socket(AF_PACKET) (needs CAP_NET_RAW): %w", err)
	}
	d.ifindex, err = interfaceIndex(probe, ifname)
	var mtu int
	if err == nil {
		mtu, err = interfaceMTU(probe, ifname)
	}
	_ = unix.Close(probe)
	if err != nil {
		return nil, fail("%w", err)
	}
	maxTxLen := mtu + etherHeaderLen

	if err := d.allocFrames(); err != nil {
		return nil, fail("%w", err)
	}

	// One socket per receive queue, with its ring, then one per transmit
	// queue: a transmit ring must not share a socket with a receive ring
	// (one PACKET_VERSION, one mapping), and a transmit-only socket
	// registers no receive hook.
	for i := range cfg.rxQueues + cfg.txQueues {
		var s *sock
		what := fmt.Sprintf("rx %d", i)
		if i < cfg.rxQueues {
			s, err = openSocket(d.ifindex, cfg, true)
		} else {
			what = fmt.Sprintf("tx %d", i-cfg.rxQueues)
			s, err = openTxSocket(d.ifindex, cfg, maxTxLen)
		}
		if err != nil {
			return nil, fail("%s: %w", what, err)
		}
		d.socks = append(d.socks, s)
		if testHookSocket != nil {
			if err := testHookSocket(i); err != nil {
				return nil, fail("%s: %w", what, err)
			}
		}
	}
	if cfg.rxQueues > 1 {
		if err := joinFanout(d.socks[:cfg.rxQueues]); err != nil {
			return nil, fail("%w", err)
		}
	}

	// Transmit queues take the front of the region, receive queues the
	// back: an address alone says which pool owns it.
	for i := range cfg.txQueues {
		p, err := pool.New(i*cfg.perQueue, cfg.perQueue, cfg.frameSize)
		if err != nil {
			return nil, fail("tx %d: %w", i, err)
		}
		s := d.socks[cfg.rxQueues+i]
		q := newTxQueue(d, i, s.fd, d.reg, p, cfg.gso, cfg.multiBuffer)
		q.maxLen = maxTxLen
		q.ring = s.txr
		if cfg.txStamps {
			if err := q.enableTxStamps(); err != nil {
				return nil, fail("tx %d: SO_TIMESTAMPING: %w", i, err)
			}
		}
		d.Tx = append(d.Tx, q)
	}
	for i := range cfg.rxQueues {
		p, err := pool.New((cfg.txQueues+i)*cfg.perQueue, cfg.perQueue, cfg.frameSize)
		if err != nil {
			return nil, fail("rx %d: %w", i, err)
		}
		efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			return nil, fail("rx %d: eventfd: %w", i, err)
		}
		d.efds = append(d.efds, efd)
		q := newRxQueue(d, i, d.socks[i], efd, d.reg, p, cfg.gso, cfg.multiBuffer)
		d.Rx = append(d.Rx, q)
		if err := q.openWaiter(); err != nil {
			return nil, fail("rx %d: %w", i, err)
		}
	}

	d.caps = packetio.Capabilities{
		Backend:           backendName,
		KernelCoexistence: true,
		MultiBuffer:       cfg.multiBuffer,
		RSS:               cfg.rxQueues > 1,
		Offload:           cfg.gso,
		GatherTx:          cfg.txQueues > 0,
		RxTimestamps:      cfg.rxQueues > 0,
		TxTimestamps:      cfg.txStamps && cfg.txQueues > 0,
		BlockingPoll:      true,
		SharedRegion:      true,
		HandsBackFrames:   true,
		MaxFrameSize:      cfg.frameSize - frameHeadroom,
		MaxTxLen:          maxTxLen,
		MaxQueues:         MaxQueues,
		NUMABound:         d.numaBound,
		NUMANode:          d.numaNode,
		ReadyFD:           cfg.rxQueues > 0,
		SteeringCopies:    cfg.rxFilter != nil,
		SteeringBy:        steeringBy(cfg.rxFilter != nil),
	}
	return d, nil
}

// interfaceAlive reports whether the device's interface still exists with
// its index, asked through fd so the answer comes from the socket's
// namespace.
func (d *Device) interfaceAlive(fd int) bool {
	ifr, err := unix.NewIfreq(d.name)
	if err != nil {
		return false
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return !errors.Is(err, unix.ENODEV)
	}
	return int(ifr.Uint32()) == d.ifindex
}

// Capabilities reports what the device does: a copy on receive, no
// steering, kernel fanout as RSS with two or more receive queues, offload
// only WithGSO. MaxTxLen is the interface's MTU when Open ran plus the
// 14-byte Ethernet header. A nil Device reports nothing.
func (d *Device) Capabilities() packetio.Capabilities {
	if d == nil {
		return packetio.Capabilities{}
	}
	return d.caps
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

// Close closes every queue (waking a goroutine blocked in Poll), the sockets
// and the rings. It is idempotent. Region slices taken before Close stay
// readable and writable (the region is Go memory, released once nothing
// refers to it; a region bound WithNUMANode reads zeros) but belong to no
// queue any more. Close of a nil Device (what a failed Open returns) is an
// error matching packetio.ErrClosed, not a panic. From inside a call on the
// device (a SendFunc build function), which it would wait for forever, it
// refuses with an error matching packetio.ErrBusy and changes nothing.
func (d *Device) Close() error {
	if d == nil {
		return nilDevice("close")
	}
	d.closeMu.Lock()
	defer d.closeMu.Unlock()
	for _, q := range d.Tx {
		if err := q.refuseInside(); err != nil {
			return err
		}
	}
	if d.closed.Swap(true) {
		return nil
	}
	d.teardown()
	return nil
}

// nilDevice is the error of op on a nil Device.
func nilDevice(op string) error {
	return packetio.NewOpError(op, backendName, "", packetio.NoQueue,
		fmt.Errorf("%w: nil *afpacket.Device (the result of a failed Open)", packetio.ErrClosed))
}

// teardown releases whatever Open got to, in reverse order. The region is
// Go memory and is left to the collector.
func (d *Device) teardown() {
	for _, q := range d.Rx {
		_ = q.Close()
	}
	for _, q := range d.Tx {
		_ = q.Close()
	}
	for _, s := range d.socks {
		s.close()
	}
	d.socks = nil
	for _, fd := range d.efds {
		_ = unix.Close(fd)
	}
	d.efds = nil
	d.releaseFrames()
}
