//go:build linux

// Package fdwait owns the sleep of the backends whose queues are file
// descriptors (afxdp, afpacket), as package spinwait owns the wait of the
// polling ones: it parks the waiting goroutine on the Go runtime's network
// poller instead of blocking its thread in poll(2).
//
// Why it matters: a thread blocked in poll(2) holds its goroutine's
// processor in a system call, so whatever that goroutine wakes when the
// packet comes (a protocol stack's goroutine, then the application's) is run
// by another thread the runtime has to wake: a context switch per hand-off.
// A goroutine parked on the poller holds no thread; the thread that finds
// the descriptor readable runs it, and the goroutines it wakes run after it
// on the same thread. netstack's request/response over a veth went from
// about 22,000 to 30,000 round trips a second with this alone.
//
// A Waiter that parks watches its descriptors through an epoll instance
// of its own, level-triggered, which the runtime's poller watches in turn:
// the descriptors themselves are not touched (no O_NONBLOCK is set on a
// socket another part of the backend uses with blocking semantics), and
// any number of them (a socket and the eventfd Close writes) wake the one
// goroutine.
//
// A goroutine locked to its thread (runtime.LockOSThread, as a socket
// pinned to a CPU does) gains nothing: parking it hands its processor to
// another thread and back. A Wait on a thread pinned to fewer CPUs than the
// process may use (a pinned worker: Go never narrows a thread's CPUs
// itself) therefore blocks that thread in ppoll(2) on the descriptors.
//
// The epoll instance is made, and joins the runtime's poller, at the first
// Wait that parks, and stays until Close. Until then no descriptor is in
// any epoll instance of ours, which matters for a queue whose loop never
// parks (it is pinned, or busy-polls with Poll(0)): a socket in an epoll
// instance has a waiter on its wait queue for good, so the kernel wakes
// that queue for every frame it frees after transmit (sock_wfree, a lock
// with interrupts off) and for every batch it adds to the receive ring,
// and once the instance is in the runtime's poller, each of those wakes
// the poller's thread if it sleeps: a reschedule interrupt, two context
// switches and a poll of the socket (which, on an AF_XDP socket in copy
// mode, drives its transmit ring under the mutex the sender holds).
// Measured on a veth forwarding 64-byte frames at 1 Mpps: 2,500 to 3,000
// such wake-ups a second on the forwarding CPU and the frees' lock 7.5% of
// it; without them the forwarder moved 19% more (0.98 -> 1.17 Mpps).
package fdwait

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/host"
)

// Waiter parks a goroutine until one of its descriptors is readable, its
// ready function holds, or a timeout passes. Wait may be called from
// several goroutines at once: one parks on the poller, the others (rare: a
// queue is driven by one goroutine) block their threads in ppoll(2), as a
// pinned thread does. Close is called once no Wait is in progress.
type Waiter struct {
	busy  atomic.Bool // a Wait holds the poller's side (f, rc, woke, noDL)
	fds   [maxFDs]unix.PollFd
	n     int      // descriptors in fds
	f     *os.File // the epoll instance, registered with the runtime's poller; nil until a Wait parks
	rc    syscall.RawConn
	ready func() bool
	step  func(uintptr) bool // w.readStep, bound once: Wait allocates nothing
	woke  bool               // readStep: the poller woke the goroutine once
	noDL  bool               // the poller holds no deadline for f
}

// maxFDs is how many descriptors a Waiter watches at most: a socket and
// an eventfd is what the backends need.
const maxFDs = 4

// New returns a Waiter on fds (at most 4, each watched for readability,
// and for an error or hang-up, which poll and epoll always report). ready
// tells what memory shows of the events the descriptors signal (a ring's
// producer index, which the kernel moves before it wakes the socket; a
// closing flag set before an eventfd is written). Wait looks at it after
// the runtime has reset the descriptor's readiness, so an event signalled
// just before Wait, whose wake-up that reset discards, is not slept
// through; an event memory does not show (a socket error) is seen only if
// ready also asks Pending, a system call. A change of ready's state that no
// descriptor event follows does not wake a parked Wait. ready must be
// cheap and must not block.
func New(ready func() bool, fds ...int) (*Waiter, error) {
	if ready == nil || len(fds) == 0 {
		return nil, errors.New("fdwait: a ready function and at least one descriptor are needed")
	}
	if len(fds) > maxFDs {
		return nil, fmt.Errorf("fdwait: %d descriptors; a Waiter watches at most %d", len(fds), maxFDs)
	}
	w := &Waiter{n: len(fds), ready: ready, noDL: true}
	for i, fd := range fds {
		if err := checkFD(fd); err != nil {
			return nil, fmt.Errorf("fdwait: descriptor %d: %w", fd, err)
		}
		w.fds[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	}
	w.step = w.readStep
	return w, nil
}

// checkFD tells whether fd is an open descriptor.
func checkFD(fd int) error {
	if fd < 0 {
		return unix.EBADF
	}
	_, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	return err
}

// join makes the epoll instance and registers it with the runtime's
// poller, once: at the first Wait that parks, under busy.
func (w *Waiter) join() error {
	if w.f != nil {
		return nil
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("fdwait: epoll_create1: %w", err)
	}
	if err := unix.SetNonblock(ep, true); err != nil {
		_ = unix.Close(ep)
		return fmt.Errorf("fdwait: epoll instance nonblocking: %w", err)
	}
	for _, p := range w.fds[:w.n] {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: p.Fd}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, int(p.Fd), &ev); err != nil {
			_ = unix.Close(ep)
			return fmt.Errorf("fdwait: epoll_ctl(ADD, fd %d): %w", p.Fd, err)
		}
	}
	// os.NewFile registers a nonblocking descriptor with the runtime's
	// poller, and silently falls back to blocking I/O if that fails:
	// setting a deadline is what tells the two apart (os.ErrNoDeadline).
	f := os.NewFile(uintptr(ep), "fdwait")
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		_ = f.Close()
		return fmt.Errorf("fdwait: the runtime's poller refused the epoll instance: %w", err)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("fdwait: %w", err)
	}
	w.f, w.rc = f, rc
	return nil
}

// Wait parks the calling goroutine until ready holds, a descriptor
// signals an event (it becomes readable, or an error or hang-up comes), or
// d passes (d < 0: no limit; d == 0 only looks, at ready and Pending). It
// returns true when it returned for the first two, false when d passed. A
// descriptor that was readable before Wait makes it return at once only if
// ready asks Pending (level-triggered, as poll(2) is); otherwise only events
// after it wake it. The caller tells why it woke by its own state. The only
// error is the Waiter's own failure (closed, or the poller's). On a pinned
// thread, or while another goroutine is parked here, it blocks the thread
// instead (see the package comment), with the same results.
func (w *Waiter) Wait(d time.Duration) (bool, error) {
	if d == 0 {
		return w.ready() || w.Pending(), nil
	}
	if host.ThreadPinned() || !w.busy.CompareAndSwap(false, true) {
		return w.Block(d)
	}
	defer w.busy.Store(false)
	if err := w.join(); err != nil {
		return false, err
	}
	if err := w.deadline(d); err != nil {
		return false, err
	}
	w.woke = false
	err := w.rc.Read(w.step)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return false, nil
	default:
		return false, fmt.Errorf("fdwait: %w", err)
	}
}

// readStep is the RawConn read step. The runtime calls it once after it
// has reset the descriptor's readiness, then once after each wake-up:
// looking at ready and the descriptors' level after that reset is what
// makes a change just before Wait impossible to sleep through. After one
// wake-up it returns to Wait's caller, who looks at its state.
func (w *Waiter) readStep(uintptr) bool {
	if w.woke {
		return true
	}
	w.woke = true
	return w.ready()
}

// Block is Wait with the thread blocked in ppoll(2) on the descriptors,
// never parked: what Wait does on a pinned thread or while another
// goroutine is parked here, and the door for a caller that knows its
// thread is pinned (it saves Wait's look at the thread's CPUs).
func (w *Waiter) Block(d time.Duration) (bool, error) {
	if w.ready() {
		return true, nil
	}
	var ts *unix.Timespec
	if d > 0 {
		t := unix.NsecToTimespec(d.Nanoseconds())
		ts = &t
	}
	n, err := w.ppoll(ts)
	if err != nil && err != unix.EINTR {
		return false, fmt.Errorf("fdwait: ppoll: %w", err)
	}
	return n > 0 || w.ready(), nil
}

// ppoll polls the descriptors (ts nil: no limit) on a copy of the set,
// since Wait may run in several goroutines, and returns how many had an
// event.
func (w *Waiter) ppoll(ts *unix.Timespec) (int, error) {
	fds := w.fds
	return unix.Ppoll(fds[:w.n], ts, nil)
}

// Pending reports whether a watched descriptor is readable, or has an
// error or hang-up pending, now: one zero-timeout ppoll(2). A failing
// ppoll counts as pending, so the caller looks at its state rather than
// sleeping.
func (w *Waiter) Pending() bool {
	n, err := w.ppoll(&unix.Timespec{})
	return n > 0 || (err != nil && err != unix.EINTR)
}

// deadline sets the poller's read deadline for a wait of d, skipping the
// runtime's timer when there is none to set and none set.
func (w *Waiter) deadline(d time.Duration) error {
	if d < 0 {
		if w.noDL {
			return nil
		}
		w.noDL = true
		return w.f.SetReadDeadline(time.Time{})
	}
	w.noDL = false
	return w.f.SetReadDeadline(time.Now().Add(d))
}

// Close releases the epoll instance, if a Wait made one. The watched
// descriptors stay open: they are the caller's.
func (w *Waiter) Close() error {
	if w == nil || w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}
