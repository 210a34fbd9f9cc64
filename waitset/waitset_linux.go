//go:build linux

package waitset

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
)

// backendName is the OpError.Backend of the set's own errors.
const backendName = "waitset"

// Event reports one queue that has work, or that has ended.
type Event struct {
	// Rx is the receive queue, or nil when the event is about Tx.
	Rx packetio.RxQueue
	// Tx is the transmit queue, or nil when the event is about Rx.
	Tx packetio.TxQueue
	// Tag is the value given to AddRx or AddTx.
	Tag int
	// Ready is a lower bound of the work waiting: received packets on a
	// receive queue, completions on a transmit queue. 0 when Err is set.
	Ready int
	// Err is non-nil when the queue is closed (it wraps packetio.ErrClosed)
	// or failed (it wraps packetio.ErrQueueFailed). The set has dropped
	// the queue: it is never reported again.
	Err error
}

// entry is one queue of the set.
type entry struct {
	rx      packetio.RxQueue
	tx      packetio.TxQueue
	rn      packetio.ReadyNotifier // nil: polled (the fallback)
	tag     int
	inner   int    // epoll holding the queue's ready descriptor, or -1
	closeFD int    // our duplicate of the queue's closed descriptor, or -1
	round   uint64 // the last Wait round that reported it
	errAt   int64  // fallback: when (ns since base) to look at Err again
}

// Set waits on many queues at once. Its methods are called from one
// goroutine, except Close, which may be called from any goroutine and wakes
// a Wait in progress.
type Set struct {
	mu      sync.Mutex // held by Wait, Add, Remove; Close takes it after waking Wait
	closed  atomic.Bool
	ep      int // the epoll instance
	wake    int // eventfd Close writes
	cfg     config
	base    time.Time
	entries []*entry // by slot; nil slots are free
	polled  int      // entries without a ReadyNotifier
	events  []unix.EpollEvent
	out     []Event
	round   uint64
}

// Epoll tags: slot<<1 for a queue's ready descriptor (through its inner
// epoll), slot<<1|1 for its closed descriptor, wakeTag for Close.
const wakeTag = -1

// errEvery is how often a polled queue's Err is read: the bound on how late
// Wait reports that such a queue closed.
const errEvery = 10 * time.Millisecond

// New returns an empty set.
func New(opts ...Option) (*Set, error) {
	cfg := defaults()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if err := cfg.check(); err != nil {
		return nil, packetio.NewOpError("new", backendName, "", packetio.NoQueue, err)
	}
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, packetio.NewOpError("new", backendName, "", packetio.NoQueue, fmt.Errorf("epoll_create1: %w", err))
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = unix.Close(ep)
		return nil, packetio.NewOpError("new", backendName, "", packetio.NoQueue, fmt.Errorf("eventfd: %w", err))
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, wake, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: wakeTag}); err != nil {
		_ = unix.Close(wake)
		_ = unix.Close(ep)
		return nil, packetio.NewOpError("new", backendName, "", packetio.NoQueue, fmt.Errorf("epoll_ctl: %w", err))
	}
	return &Set{ep: ep, wake: wake, cfg: cfg, base: time.Now(), events: make([]unix.EpollEvent, 1)}, nil
}

func (s *Set) errorf(op string, sentinel error, format string, args ...any) error {
	return packetio.NewOpError(op, backendName, "", packetio.NoQueue, fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...))
}

// AddRx adds a receive queue, reported with tag. A queue implementing
// packetio.ReadyNotifier is waited on with epoll; any other is polled (see
// the package doc for what that costs). Adding a queue twice, or a closed
// one, is an error.
func (s *Set) AddRx(q packetio.RxQueue, tag int) error {
	if q == nil {
		return s.errorf("add", packetio.ErrInvalid, "nil receive queue")
	}
	return s.add(&entry{rx: q, tag: tag})
}

// AddTx adds a transmit queue, reported with tag when it has completions.
// Transmit queues are always polled: no backend gives them a ready
// descriptor yet.
func (s *Set) AddTx(q packetio.TxQueue, tag int) error {
	if q == nil {
		return s.errorf("add", packetio.ErrInvalid, "nil transmit queue")
	}
	return s.add(&entry{tx: q, tag: tag})
}

func (s *Set) add(e *entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return s.errorf("add", packetio.ErrClosed, "set closed")
	}
	for _, o := range s.entries {
		if o != nil && (e.rx != nil && o.rx == e.rx || e.tx != nil && o.tx == e.tx) {
			return s.errorf("add", packetio.ErrInvalid, "queue already in the set")
		}
	}
	if err := s.queueErr(e); err != nil {
		return err
	}
	slot := len(s.entries)
	for i, o := range s.entries {
		if o == nil {
			slot = i
			break
		}
	}
	e.inner, e.closeFD = -1, -1
	if rn, ok := e.rx.(packetio.ReadyNotifier); ok {
		if err := s.register(e, rn, slot); err != nil {
			return err
		}
		e.rn = rn
	} else {
		s.polled++
	}
	if slot == len(s.entries) {
		s.entries = append(s.entries, e)
	} else {
		s.entries[slot] = e
	}
	// Grown here, so Wait never allocates.
	if need := 2*len(s.entries) + 1; len(s.events) < need {
		s.events = make([]unix.EpollEvent, need)
	}
	if cap(s.out) < len(s.entries) {
		s.out = make([]Event, 0, len(s.entries))
	}
	return nil
}

// register puts the queue's descriptors into the set's epoll: the ready one
// through an inner epoll of its own, so dropping it later never names the
// queue's descriptor (which the device may have closed and the kernel
// reused), and the closed one as a duplicate, so a Close is seen even if
// the device closes its descriptor before Wait runs.
func (s *Set) register(e *entry, rn packetio.ReadyNotifier, slot int) error {
	ready, closed, err := rn.ReadyFDs()
	if err != nil {
		return err
	}
	fail := func(what string, err error) error {
		e.release()
		return s.errorf("add", packetio.ErrSetup, "%s: %v", what, err)
	}
	if e.inner, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		e.inner = -1
		return fail("epoll_create1", err)
	}
	if err = unix.EpollCtl(e.inner, unix.EPOLL_CTL_ADD, ready, &unix.EpollEvent{Events: unix.EPOLLIN}); err != nil {
		return fail("epoll_ctl ready", err)
	}
	if e.closeFD, err = unix.FcntlInt(uintptr(closed), unix.F_DUPFD_CLOEXEC, 0); err != nil {
		e.closeFD = -1
		return fail("dup closed", err)
	}
	if err = unix.EpollCtl(s.ep, unix.EPOLL_CTL_ADD, e.inner, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(slot << 1)}); err != nil {
		return fail("epoll_ctl", err)
	}
	if err = unix.EpollCtl(s.ep, unix.EPOLL_CTL_ADD, e.closeFD, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(slot<<1 | 1)}); err != nil {
		return fail("epoll_ctl", err)
	}
	return nil
}

// release closes the entry's own descriptors, which drops them from every
// epoll: the queue's descriptors are never touched.
func (e *entry) release() {
	if e.inner >= 0 {
		_ = unix.Close(e.inner)
		e.inner = -1
	}
	if e.closeFD >= 0 {
		_ = unix.Close(e.closeFD)
		e.closeFD = -1
	}
}

// RemoveRx takes a receive queue out of the set. It reports whether the
// queue was there.
func (s *Set) RemoveRx(q packetio.RxQueue) bool { return s.remove(q, nil) }

// RemoveTx takes a transmit queue out of the set. It reports whether the
// queue was there.
func (s *Set) RemoveTx(q packetio.TxQueue) bool { return s.remove(nil, q) }

func (s *Set) remove(rx packetio.RxQueue, tx packetio.TxQueue) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range s.entries {
		if e != nil && (rx != nil && e.rx == rx || tx != nil && e.tx == tx) {
			s.drop(i)
			return true
		}
	}
	return false
}

func (s *Set) drop(slot int) {
	e := s.entries[slot]
	if e.rn == nil {
		s.polled--
	}
	e.release()
	s.entries[slot] = nil
}

// Len is how many queues the set holds.
func (s *Set) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries) - s.free()
}

func (s *Set) free() int {
	n := 0
	for _, e := range s.entries {
		if e == nil {
			n++
		}
	}
	return n
}

// queueErr is the queue's Err.
func (s *Set) queueErr(e *entry) error {
	if e.rx != nil {
		return e.rx.Err()
	}
	return e.tx.Err()
}

// Wait returns the queues that have work or have ended, waiting up to
// timeout for one (a negative timeout waits until one does or Close; zero
// does not sleep). It returns an empty slice when timeout passes. The slice
// is reused by the next Wait; Wait allocates nothing (but the errors of
// queues that ended). A queue reported with Err is no longer in the set. It
// returns an error wrapping packetio.ErrClosed after Close, also when Close
// interrupts it.
//
// After Wait, drain each reported queue (Receive until it returns nothing,
// or Complete): a queue left with work is reported again at once.
func (s *Set) Wait(timeout time.Duration) ([]Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return nil, s.errorf("wait", packetio.ErrClosed, "set closed")
	}
	s.round++
	s.out = s.out[:0]
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		s.scan()
		ms := 0
		if len(s.out) == 0 {
			ms = -1
			if timeout == 0 {
				ms = 0
			} else if timeout > 0 {
				left := time.Until(deadline)
				if left < 0 {
					left = 0
				}
				ms = int((left + time.Millisecond - 1) / time.Millisecond)
			}
			if s.polled > 0 && (ms < 0 || ms > s.cfg.pollMs) {
				ms = s.cfg.pollMs
			}
		}
		n, err := unix.EpollWait(s.ep, s.events, ms)
		if err != nil && err != unix.EINTR {
			return s.out, s.errorf("wait", packetio.ErrQueueFailed, "epoll_wait: %v", err)
		}
		if s.closed.Load() {
			return nil, s.errorf("wait", packetio.ErrClosed, "set closed while waiting")
		}
		s.collect(s.events[:max(n, 0)])
		if len(s.out) > 0 || timeout == 0 || timeout > 0 && !time.Now().Before(deadline) {
			return s.out, nil
		}
	}
}

// scan asks every queue without an epoll wake-up whether it has work, and
// arms every queue that has one (which finds work already waiting).
func (s *Set) scan() {
	var now int64
	if s.polled > 0 {
		now = int64(time.Since(s.base))
	}
	for slot, e := range s.entries {
		if e == nil {
			continue
		}
		if e.rn != nil {
			if n := e.rn.Arm(); n > 0 {
				s.report(e, n, nil)
			}
			continue
		}
		var n int
		if e.rx != nil {
			n = e.rx.NumReceived()
		} else {
			n = e.tx.NumCompleted()
		}
		if n > 0 {
			s.report(e, n, nil)
			continue
		}
		if now >= e.errAt {
			e.errAt = now + int64(errEvery)
			if err := s.queueErr(e); err != nil {
				s.report(e, 0, err)
				s.drop(slot)
			}
		}
	}
}

// collect turns epoll events into Events: ends first, so a queue that both
// woke and closed is reported once, as ended.
func (s *Set) collect(evs []unix.EpollEvent) {
	for _, ev := range evs {
		tag := int(ev.Fd)
		if tag < 0 || tag&1 == 0 {
			continue
		}
		slot := tag >> 1
		if slot >= len(s.entries) || s.entries[slot] == nil {
			continue
		}
		e := s.entries[slot]
		err := s.queueErr(e)
		if err == nil {
			err = packetio.NewOpError("wait", backendName, "", packetio.NoQueue, fmt.Errorf("%w: the queue's close descriptor fired", packetio.ErrClosed))
		}
		s.report(e, 0, err)
		s.drop(slot)
	}
	for _, ev := range evs {
		tag := int(ev.Fd)
		if tag < 0 || tag&1 != 0 {
			continue
		}
		slot := tag >> 1
		if slot >= len(s.entries) || s.entries[slot] == nil {
			continue
		}
		e := s.entries[slot]
		if e.round == s.round {
			continue // found by scan
		}
		if n := e.rn.Arm(); n > 0 {
			s.report(e, n, nil)
			continue
		}
		s.woken(slot, e)
	}
}

// woken handles a wake-up that found no work: a spurious one, or an error on
// the queue's socket, which the backend's Poll reads and clears (see
// packetio.ReadyNotifier). One epoll_wait on the inner epoll tells which.
func (s *Set) woken(slot int, e *entry) {
	var ev [1]unix.EpollEvent
	n, _ := unix.EpollWait(e.inner, ev[:], 0)
	if n < 1 || ev[0].Events&(unix.EPOLLERR|unix.EPOLLHUP) == 0 {
		return
	}
	k, err := e.rx.Poll(time.Millisecond)
	switch {
	case err != nil:
		s.report(e, 0, err)
		s.drop(slot)
	case k > 0:
		s.report(e, k, nil)
	}
}

func (s *Set) report(e *entry, n int, err error) {
	e.round = s.round
	s.out = append(s.out, Event{Rx: e.rx, Tx: e.tx, Tag: e.tag, Ready: n, Err: err})
}

// Close releases the set's descriptors (never the queues'), waking a Wait
// in progress, which returns an error wrapping packetio.ErrClosed. It is
// idempotent and safe from any goroutine.
func (s *Set) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	var one = [8]byte{1}
	_, _ = unix.Write(s.wake, one[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, e := range s.entries {
		if e != nil {
			e.release()
			s.entries[i] = nil
		}
	}
	s.polled = 0
	_ = unix.Close(s.ep)
	_ = unix.Close(s.wake)
	return nil
}
