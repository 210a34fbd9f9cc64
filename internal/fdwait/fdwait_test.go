//go:build linux

package fdwait

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/host"
	"github.com/packetio/packetio/internal/testenv"
)

// pipe returns a pipe's two ends, closed when the test ends.
func pipe(t *testing.T) (r, w int) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(p[0]); _ = unix.Close(p[1]) })
	return p[0], p[1]
}

func newWaiter(t *testing.T, ready func() bool, fds ...int) *Waiter {
	t.Helper()
	w, err := New(ready, fds...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

func never() bool { return false }

// level is a Waiter whose ready asks Pending (and flag, when not nil): it
// wakes while a descriptor stays readable, as poll(2) would.
func level(t *testing.T, flag *atomic.Bool, fds ...int) *Waiter {
	t.Helper()
	var w *Waiter
	w = newWaiter(t, func() bool { return (flag != nil && flag.Load()) || w.Pending() }, fds...)
	return w
}

func TestNewRefuses(t *testing.T) {
	r, _ := pipe(t)
	for _, tc := range []struct {
		name  string
		ready func() bool
		fds   []int
		want  string
	}{
		{"no ready", nil, []int{r}, "a ready function"},
		{"no fds", never, nil, "at least one descriptor"},
		{"bad fd", never, []int{-1}, "descriptor -1: bad file descriptor"},
		{"five fds", never, []int{r, r, r, r, r}, "5 descriptors; a Waiter watches at most 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := New(tc.ready, tc.fds...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, %v; want an error containing %q", w, err, tc.want)
			}
		})
	}
}

// TestWait covers what ends a wait: each case sets up its state, waits and
// checks whether Wait said it woke.
func TestWait(t *testing.T) {
	for _, tc := range []struct {
		name  string
		d     time.Duration
		setup func(t *testing.T, wr int, flag *atomic.Bool) // before Wait
		async func(wr int, flag *atomic.Bool)               // during Wait
		want  bool
	}{
		{name: "timeout", d: 5 * time.Millisecond, want: false},
		{name: "look only, nothing", d: 0, want: false},
		{name: "already readable", d: -1, setup: writeByte, want: true},
		{name: "look only, readable", d: 0, setup: writeByte, want: true},
		{name: "ready before", d: -1, setup: func(_ *testing.T, _ int, f *atomic.Bool) { f.Store(true) }, want: true},
		{name: "becomes readable", d: -1, async: func(wr int, _ *atomic.Bool) { _, _ = unix.Write(wr, []byte{1}) }, want: true},
		{name: "becomes readable, deadline far", d: time.Hour, async: func(wr int, _ *atomic.Bool) { _, _ = unix.Write(wr, []byte{1}) }, want: true},
		{name: "peer hangs up", d: -1, async: func(wr int, _ *atomic.Bool) { _ = unix.Close(wr) }, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p [2]int
			if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
				t.Fatal(err)
			}
			defer unix.Close(p[0])
			var flag atomic.Bool
			w := level(t, &flag, p[0])
			if tc.setup != nil {
				tc.setup(t, p[1], &flag)
			}
			var wg sync.WaitGroup
			if tc.async != nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					time.Sleep(2 * time.Millisecond)
					tc.async(p[1], &flag)
				}()
			} else {
				defer unix.Close(p[1])
			}
			got, err := w.Wait(tc.d)
			wg.Wait()
			if err != nil || got != tc.want {
				t.Fatalf("Wait(%v) = %v, %v; want %v, nil", tc.d, got, err, tc.want)
			}
		})
	}
}

func writeByte(t *testing.T, wr int, _ *atomic.Bool) {
	t.Helper()
	if _, err := unix.Write(wr, []byte{1}); err != nil {
		t.Fatal(err)
	}
}

// TestWaitSecondDescriptor: any watched descriptor wakes the goroutine (an
// eventfd beside a socket is how Close wakes a backend's Poll).
func TestWaitSecondDescriptor(t *testing.T) {
	r, _ := pipe(t)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	w := level(t, nil, r, efd)
	go func() {
		time.Sleep(2 * time.Millisecond)
		_, _ = unix.Write(efd, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	}()
	if got, err := w.Wait(-1); !got || err != nil {
		t.Fatalf("Wait = %v, %v; want true, nil", got, err)
	}
	// The eventfd stays readable: every later Wait returns at once.
	for range 3 {
		if got, err := w.Wait(time.Hour); !got || err != nil {
			t.Fatalf("Wait again = %v, %v; want true, nil", got, err)
		}
	}
}

// TestWaitHoldsNoThread is the point of the package: goroutines waiting
// here hold no thread, where each would hold one in poll(2).
func TestWaitHoldsNoThread(t *testing.T) {
	const waiters = 64
	before := threads(t)
	var wg sync.WaitGroup
	wrs := make([]int, waiters)
	for i := range waiters {
		r, wr := pipe(t)
		wrs[i] = wr
		w := newWaiter(t, never, r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, err := w.Wait(-1); !got || err != nil {
				t.Errorf("waiter %d: Wait = %v, %v; want true, nil", i, got, err)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // let every goroutine park
	during := threads(t)
	for _, wr := range wrs {
		_, _ = unix.Write(wr, []byte{1})
	}
	wg.Wait()
	if during-before >= waiters/2 {
		t.Fatalf("%d goroutines waiting took %d threads (%d before, %d during); want a few at most", waiters, during-before, before, during)
	}
	t.Logf("%d waiting goroutines: %d threads before, %d during", waiters, before, during)
}

// threads is the process's thread count.
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

func TestWaitAllocations(t *testing.T) {
	r, wr := pipe(t)
	w := level(t, nil, r)
	if _, err := unix.Write(wr, []byte{1}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{-1, time.Second, 0} {
		if n := testing.AllocsPerRun(200, func() { _, _ = w.Wait(d) }); n != 0 {
			t.Errorf("Wait(%v) on a readable pipe: %v allocations; want 0", d, n)
		}
	}
	var r2 int
	r2, _ = pipe(t)
	w2 := newWaiter(t, never, r2)
	if n := testing.AllocsPerRun(20, func() { _, _ = w2.Wait(100 * time.Microsecond) }); n != 0 {
		t.Errorf("Wait timing out: %v allocations; want 0", n)
	}
}

func TestClose(t *testing.T) {
	r, _ := pipe(t)
	w, err := New(never, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// The watched descriptor is the caller's: still open.
	if _, err := unix.FcntlInt(uintptr(r), unix.F_GETFD, 0); err != nil {
		t.Fatalf("the pipe was closed with the Waiter: %v", err)
	}
}

// TestWaitEdge: with a ready that does not ask Pending (afxdp's, whose
// ring shows every event), an event during the wait still wakes it. The
// writer writes every 100 µs until Wait returns: an event before Wait
// began is, by Wait's contract, not seen by such a ready, and a single
// write 100 µs after the round starts came before the wait when the
// machine was loaded (a make test hung here for ten minutes).
func TestWaitEdge(t *testing.T) {
	r, wr := pipe(t)
	w := newWaiter(t, never, r)
	for i := range 100 {
		stop := keepWriting(wr)
		got, err := w.Wait(time.Minute)
		stop()
		if !got || err != nil {
			t.Fatalf("round %d: Wait = %v, %v; want true, nil", i, got, err)
		}
	}
}

// keepWriting writes a byte to wr every 100 µs until stop is called.
func keepWriting(wr int) (stop func()) {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				_, _ = unix.Write(wr, []byte{1})
			}
		}
	}()
	return func() { close(done) }
}

// TestWaitConcurrent: several goroutines waiting at once (one on the
// poller, the others in ppoll) are all woken by one event that stays,
// as an eventfd written by Close does.
func TestWaitConcurrent(t *testing.T) {
	r, wr := pipe(t)
	w := level(t, nil, r)
	const waiters = 4
	errs := make(chan error, waiters)
	for range waiters {
		go func() {
			got, err := w.Wait(-1)
			if err == nil && !got {
				err = errors.New("Wait(-1) returned false")
			}
			errs <- err
		}()
	}
	time.Sleep(10 * time.Millisecond)
	if _, err := unix.Write(wr, []byte{1}); err != nil {
		t.Fatal(err)
	}
	for range waiters {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// A timeout in the blocking path says false.
	r2, _ := pipe(t)
	w2 := newWaiter(t, never, r2)
	w2.busy.Store(true)
	if got, err := w2.Wait(2 * time.Millisecond); got || err != nil {
		t.Fatalf("blocking Wait on a quiet pipe = %v, %v; want false, nil", got, err)
	}
}

// TestJoinsOnlyWhenParked: the descriptors go into an epoll instance, and
// that into the runtime's poller, only with the first Wait that parks; a
// pinned thread's Waits and zero-timeout looks leave them in none, so
// their events wake nobody while nobody waits. The kernel's view (the
// tfd lines of /proc/self/fdinfo) is checked, not only the Waiter's fields.
func TestJoinsOnlyWhenParked(t *testing.T) {
	if runtime.NumCPU() < 2 {
		testenv.CannotRun(t, "a pinned thread needs a machine of 2 CPUs or more (this one has %d)", runtime.NumCPU())
	}
	r, wr := pipe(t)
	r2, _ := pipe(t)
	w, w2 := newWaiter(t, never, r), newWaiter(t, never, r2)
	if got := testenv.EpollWatchers(t, r); got != 0 {
		t.Fatalf("a new Waiter's descriptor is in %d epoll instances; want 0", got)
	}
	// A pinned thread: every Wait blocks it in ppoll, and nothing joins.
	errs := make(chan error, 1)
	go func() {
		if err := host.PinThread(runtime.NumCPU() - 1); err != nil {
			errs <- err
			return
		}
		if !host.ThreadPinned() {
			errs <- errors.New("host.ThreadPinned() = false on a thread pinned to one CPU")
			return
		}
		start := time.Now()
		if got, err := w.Wait(3 * time.Millisecond); got || err != nil {
			errs <- fmt.Errorf("pinned Wait on a quiet pipe = %v, %v; want false, nil", got, err)
			return
		}
		if el := time.Since(start); el < 3*time.Millisecond {
			errs <- fmt.Errorf("pinned Wait(3ms) returned after %v", el)
			return
		}
		go func() {
			time.Sleep(time.Millisecond)
			_, _ = unix.Write(wr, []byte{1})
		}()
		if got, err := w.Wait(time.Minute); !got || err != nil {
			errs <- fmt.Errorf("pinned Wait with a write = %v, %v; want true, nil", got, err)
			return
		}
		if n := testing.AllocsPerRun(20, func() { _, _ = w2.Wait(100 * time.Microsecond) }); n != 0 {
			errs <- fmt.Errorf("pinned Wait timing out: %v allocations; want 0", n)
			return
		}
		errs <- nil
	}()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if got, err := w.Wait(0); !got || err != nil {
		t.Fatalf("Wait(0) on a readable pipe = %v, %v; want true, nil", got, err)
	}
	if w.f != nil || testenv.EpollWatchers(t, r) != 0 {
		t.Fatalf("after pinned and zero-timeout Waits the descriptor is in an epoll instance (f %v, %d instances); want none", w.f, testenv.EpollWatchers(t, r))
	}
	if host.ThreadPinned() {
		t.Fatal("host.ThreadPinned() = true on the test's goroutine")
	}
	// An unpinned goroutine parks: the descriptor goes into the Waiter's
	// instance, and that into the runtime's poller, for good. (With a ready
	// that does not ask Pending, only a write during the wait is sure to
	// wake it: the writer keeps writing until it returns.)
	stop := keepWriting(wr)
	got, err := w.Wait(time.Minute)
	stop()
	if !got || err != nil {
		t.Fatalf("Wait on an unpinned goroutine = %v, %v; want true, nil", got, err)
	}
	if w.f == nil {
		t.Fatal("an unpinned Wait did not join the runtime's poller")
	}
	var ep int
	if err := w.rc.Control(func(fd uintptr) { ep = int(fd) }); err != nil {
		t.Fatal(err)
	}
	if got := testenv.EpollWatchers(t, r); got != 1 {
		t.Fatalf("after a parked Wait the descriptor is in %d epoll instances; want 1 (the Waiter's)", got)
	}
	if got := testenv.EpollWatchers(t, ep); got != 1 {
		t.Fatalf("after a parked Wait the Waiter's epoll instance is in %d others; want 1 (the runtime's)", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := testenv.EpollWatchers(t, r); got != 0 {
		t.Fatalf("after Close the descriptor is in %d epoll instances; want 0", got)
	}
}
