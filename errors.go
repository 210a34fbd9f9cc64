package packetio

import (
	"errors"
	"strconv"
	"syscall"
)

// The package sentinels. Every error that crosses the API is an *OpError
// whose cause matches one of them: callers test with errors.Is and read the
// context (operation, backend, interface, queue) with errors.As. A
// dependency's error (the kernel's, DPDK's, libibverbs', cilium/ebpf's) is
// kept as the cause, never forwarded bare.
var (
	// ErrClosed is returned by every method called on a closed queue or
	// device, and by Poll when the queue is closed while it waits.
	ErrClosed = errors.New("packetio: closed")

	// ErrQueueFailed means the kernel or the hardware put the queue out of
	// service for good. It accepts no more work; close the device and open a
	// new one. Err reports it.
	ErrQueueFailed = errors.New("packetio: queue failed")

	// ErrBadLength means a length or an offset supplied by the caller does
	// not fit: a SendFunc build callback returned a length below zero or
	// beyond its frame, or a descriptor, offload or gather argument names
	// bytes it does not own. Nothing of that call was sent.
	ErrBadLength = errors.New("packetio: build returned invalid length")

	// ErrUnsupported means the backend or the device cannot provide an option
	// or an operation. Every steering refusal wraps it, and so does every
	// optional-interface call the opened device cannot honour.
	ErrUnsupported = errors.New("packetio: unsupported")

	// ErrNoDevice means the interface or device named to Open does not
	// exist (in the network namespace of the calling thread, for the
	// kernel backends).
	ErrNoDevice = errors.New("packetio: no such device")

	// ErrDeviceGone means the interface went away under an open queue (it
	// was deleted, or its namespace was). It wraps ErrQueueFailed: the
	// queue is out of service for good.
	ErrDeviceGone = &wrapped{msg: "packetio: device gone", parent: ErrQueueFailed}

	// ErrWedged means a transmit ring holds frames that the kernel or the
	// NIC stopped taking: repeated kicks moved nothing for longer than a
	// busy link ever needs. It wraps ErrQueueFailed. Back-pressure (a full
	// ring that drains) is never reported this way.
	ErrWedged = &wrapped{msg: "packetio: transmit ring wedged", parent: ErrQueueFailed}

	// ErrNotOwned means the caller handed back or sent a frame it does not
	// own: one still in the pool, one the NIC holds (posted to the fill
	// ring or in flight on transmit), or a zero descriptor. Only the
	// packetio_checked build tracks ownership well enough to say so; there
	// the misused frame is refused and counted and Err reports the first
	// misuse, while the queue keeps running.
	ErrNotOwned = errors.New("packetio: frame not owned by the caller")

	// ErrBusy means something packetio does not own holds what Open needs:
	// another XDP program on the interface, a queue another socket bound,
	// a port another process claimed. packetio never takes it over unless
	// an option says so.
	ErrBusy = errors.New("packetio: busy")

	// ErrPermission means the kernel refused for lack of privilege
	// (EPERM, EACCES): most backends need root, or CAP_NET_RAW, CAP_BPF
	// and CAP_NET_ADMIN.
	ErrPermission = errors.New("packetio: permission denied")

	// ErrInvalid means an option or argument value is out of range; the
	// message names it. Nothing was changed.
	ErrInvalid = errors.New("packetio: invalid argument")

	// ErrSetup means a setup step the caller cannot influence failed: the
	// kernel, the driver, DPDK's EAL or libibverbs refused it for a reason
	// none of the other sentinels names (out of memory, a driver error).
	// The cause says which step and why.
	ErrSetup = errors.New("packetio: setup failed")
)

// wrapped is a sentinel that also matches a wider one.
type wrapped struct {
	msg    string
	parent error
}

func (w *wrapped) Error() string { return w.msg }
func (w *wrapped) Unwrap() error { return w.parent }

// sentinels are the values Classify accepts as already classified.
var sentinels = [...]error{ErrClosed, ErrQueueFailed, ErrBadLength, ErrUnsupported,
	ErrNoDevice, ErrBusy, ErrPermission, ErrInvalid, ErrSetup, ErrNotOwned}

// NoQueue is the OpError.Queue of an error that concerns the whole device.
const NoQueue = -1

// OpError is the one error type packetio's API returns. It says which
// operation of which backend failed on which interface and queue, and
// unwraps to its cause, which matches one of the package sentinels.
//
//	var oe *packetio.OpError
//	if errors.As(err, &oe) && errors.Is(err, packetio.ErrBusy) { ... oe.Iface ... }
type OpError struct {
	// Op is the operation: "open", "poll", "receive", "transmit",
	// "fill", "complete", "close", "steer", ...
	Op string
	// Backend is the backend's name: "afxdp", "afpacket", "dpdk",
	// "mlx5", "pipe".
	Backend string
	// Iface is the interface or device name; empty when there is none.
	Iface string
	// Queue is the queue index, or NoQueue for the whole device.
	Queue int
	// Err is the cause. errors.Is(Err, sentinel) holds for one of the
	// package sentinels.
	Err error
}

// Error reads as net.OpError's does: "open afxdp veth0 queue 2: cause".
func (e *OpError) Error() string {
	if e == nil {
		return "<nil>"
	}
	s := e.Op + " " + e.Backend
	if e.Iface != "" {
		s += " " + e.Iface
	}
	if e.Queue >= 0 {
		s += " queue " + strconv.Itoa(e.Queue)
	}
	if e.Err == nil {
		return s
	}
	return s + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *OpError) Unwrap() error { return e.Err }

// NewOpError wraps err for the API: nil stays nil; an *OpError is returned
// as it is (the innermost context is the most precise); anything else
// becomes an *OpError whose cause is Classify(err). Backends call it at
// the boundary of every exported method.
func NewOpError(op, backend, iface string, queue int, err error) error {
	if err == nil {
		return nil
	}
	if oe, ok := err.(*OpError); ok {
		return oe
	}
	return &OpError{Op: op, Backend: backend, Iface: iface, Queue: queue, Err: Classify(err)}
}

// Classify returns err unchanged when it already matches a package
// sentinel, and otherwise wraps it with the sentinel its system error
// number means (ENODEV: ErrNoDevice, EBUSY: ErrBusy, EPERM: ErrPermission,
// EINVAL: ErrInvalid, ENETDOWN: ErrDeviceGone), or ErrSetup when it
// carries none.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return err
		}
	}
	return &classified{sentinel: sentinelOf(err), err: err}
}

// sentinelOf maps a cause with no sentinel to one by its errno.
func sentinelOf(err error) error {
	var no syscall.Errno
	if !errors.As(err, &no) {
		return ErrSetup
	}
	switch no {
	case syscall.ENODEV, syscall.ENXIO:
		return ErrNoDevice
	case syscall.EBUSY, syscall.EEXIST:
		return ErrBusy
	case syscall.EPERM, syscall.EACCES:
		return ErrPermission
	case syscall.EINVAL, syscall.ERANGE:
		return ErrInvalid
	case syscall.ENETDOWN:
		return ErrDeviceGone
	case syscall.EOPNOTSUPP, syscall.ENOSYS, syscall.EPROTONOSUPPORT, syscall.EAFNOSUPPORT:
		return ErrUnsupported
	}
	return ErrSetup
}

// classified is a cause that matches sentinel through errors.Is and reads
// as the cause alone (the sentinel's text would only repeat it).
type classified struct {
	sentinel, err error
}

func (c *classified) Error() string   { return c.err.Error() }
func (c *classified) Unwrap() []error { return []error{c.sentinel, c.err} }
