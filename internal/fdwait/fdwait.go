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
// A Waiter watches its descriptors through an epoll instance of its own,
// level-triggered, which the runtime's poller watches in turn: the
// descriptors themselves are not touched (no O_NONBLOCK is set on a socket
// another part of the backend uses with blocking semantics), and any number
// of them (a socket and the eventfd Close writes) wake the one goroutine.
//
// A goroutine locked to its thread (runtime.LockOSThread, as a socket
// pinned to a CPU does) gains nothing: parking it hands its processor to
// another thread and back. Such a caller sleeps in poll(2) as before.
package fdwait

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Waiter parks a goroutine until one of its descriptors is readable, its
// ready function holds, or a timeout passes. Wait may be called from
// several goroutines at once: one parks on the poller, the others (rare: a
// queue is driven by one goroutine) block their threads in epoll_wait, as
// they would in poll(2). Close is called once no Wait is in progress.
type Waiter struct {
	busy  atomic.Bool // a Wait holds the poller's side (woke, noDL)
	ep    int
	f     *os.File // ep, registered with the runtime's poller
	rc    syscall.RawConn
	ready func() bool
	step  func(uintptr) bool // w.readStep, bound once: Wait allocates nothing
	woke  bool               // readStep: the poller woke the goroutine once
	noDL  bool               // the poller holds no deadline for f
}

// New returns a Waiter on fds (each watched for readability, and for an
// error or hang-up, which epoll always reports). ready tells what memory
// shows of the events the descriptors signal (a ring's producer index, which
// the kernel moves before it wakes the socket; a closing flag set before an
// eventfd is written). Wait looks at it after the runtime has reset the
// descriptor's readiness, so an event signalled just before Wait, whose
// wake-up that reset discards, is not slept through; an event memory does
// not show (a socket error) is seen only if ready also asks Pending, a
// system call. A change of ready's state that no descriptor event follows
// does not wake a parked Wait. ready must be cheap and must not block.
func New(ready func() bool, fds ...int) (*Waiter, error) {
	if ready == nil || len(fds) == 0 {
		return nil, errors.New("fdwait: a ready function and at least one descriptor are needed")
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fdwait: epoll_create1: %w", err)
	}
	for _, fd := range fds {
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
			_ = unix.Close(ep)
			return nil, fmt.Errorf("fdwait: epoll_ctl(ADD, fd %d): %w", fd, err)
		}
	}
	if err := unix.SetNonblock(ep, true); err != nil {
		_ = unix.Close(ep)
		return nil, fmt.Errorf("fdwait: epoll instance nonblocking: %w", err)
	}
	// os.NewFile registers a nonblocking descriptor with the runtime's
	// poller, and silently falls back to blocking I/O if that fails:
	// setting a deadline is what tells the two apart (os.ErrNoDeadline).
	w := &Waiter{ep: ep, f: os.NewFile(uintptr(ep), "fdwait"), ready: ready, noDL: true}
	w.step = w.readStep
	if err := w.f.SetReadDeadline(time.Time{}); err != nil {
		_ = w.f.Close()
		return nil, fmt.Errorf("fdwait: the runtime's poller refused the epoll instance: %w", err)
	}
	if w.rc, err = w.f.SyscallConn(); err != nil {
		_ = w.f.Close()
		return nil, fmt.Errorf("fdwait: %w", err)
	}
	return w, nil
}

// Wait parks the calling goroutine until ready holds, a descriptor
// signals an event (it becomes readable, or an error or hang-up comes), or
// d passes (d < 0: no limit; d == 0 only looks, at ready and Pending). It
// returns true when it returned for the first two, false when d passed. A
// descriptor that was readable before Wait makes it return at once only if
// ready asks Pending (level-triggered, as poll(2) is); otherwise only events
// after it wake it. The caller tells why it woke by its own state. The only
// error is the Waiter's own failure (closed, or the poller's).
func (w *Waiter) Wait(d time.Duration) (bool, error) {
	if d == 0 {
		return w.ready() || w.Pending(), nil
	}
	if !w.busy.CompareAndSwap(false, true) {
		return w.block(d)
	}
	defer w.busy.Store(false)
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

// block is Wait for a goroutine that finds another parked on the poller:
// epoll_wait on the Waiter's instance, the thread blocked, d rounded up to
// a millisecond.
func (w *Waiter) block(d time.Duration) (bool, error) {
	if w.ready() {
		return true, nil
	}
	ms := -1
	if d > 0 {
		ms = int((d + time.Millisecond - 1) / time.Millisecond)
	}
	var events [4]unix.EpollEvent
	n, err := unix.EpollWait(w.ep, events[:], ms)
	if err != nil && err != unix.EINTR {
		return false, fmt.Errorf("fdwait: epoll_wait: %w", err)
	}
	return n > 0 || w.ready(), nil
}

// Pending reports whether a watched descriptor is readable, or has an
// error or hang-up pending, now: one zero-timeout epoll_wait on the
// Waiter's level-triggered instance. A failing epoll_wait counts as
// pending, so the caller looks at its state rather than sleeping.
func (w *Waiter) Pending() bool {
	var events [4]unix.EpollEvent
	n, err := unix.EpollWait(w.ep, events[:], 0)
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

// Close releases the epoll instance. The watched descriptors stay open:
// they are the caller's.
func (w *Waiter) Close() error {
	if w == nil || w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}
