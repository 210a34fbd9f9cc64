// Package spinwait owns the wait of the polling backends (dpdk, mlx5),
// whose queues have no file descriptor to block on: Poll looks at the ring
// again and again, yielding the processor between looks, and sleeps
// between looks once it has waited a while, longer the longer it waits,
// so an idle queue costs little CPU and a busy one answers within a look.
// Its Sleep is for every wait under a millisecond on a packet path
// (netstack's loops and the examples' back-pressure use it too), because
// time.Sleep cannot give one.
package spinwait

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

const (
	// Yields is how many looks yield the processor (runtime.Gosched)
	// before the wait starts to sleep between them. Looking without
	// yielding, or yielding the thread with sched_yield(2) instead, was
	// no faster on dpdk's forward loop and slower on its receive loop
	// (see the dpdk README).
	Yields = 256
	// Nap is the first sleep between looks after Yields; each further
	// nap of the same wait is twice as long, up to MaxNap (Backoff).
	Nap = 20 * time.Microsecond
	// MaxNap bounds the naps: the longest a packet that arrives during a
	// long wait waits to be seen, plus the thread's timer slack (50 µs
	// by default). Each nap costs the thread a wake-up: an idle Wait in
	// naps of Nap took 30-45% of a core here, in naps growing to MaxNap
	// 4.5% (9.8% on a thread locked to its goroutine), about what
	// time.Sleep's 1.1 ms naps took (4.4%, 7.7%); MaxNap of 250 µs took
	// 7.9% (15.6%), of 1 ms 3.8% (6.3%).
	MaxNap = 500 * time.Microsecond
	// clockEvery is how often, in looks, a yielding wait reads the clock.
	clockEvery = 64
)

// Wait calls look until it returns a count above zero or an error, which
// Wait returns, or until timeout passes (0, nil). A timeout of 0 looks
// once; a negative one waits until look says otherwise. look decides what
// a closed queue is: it returns the queue's ErrClosed, so Close ends a
// Wait within one look (at most a MaxNap).
func Wait(timeout time.Duration, look func() (int, error)) (int, error) {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	var naps Backoff
	for n := 0; ; n++ {
		if k, err := look(); k > 0 || err != nil {
			return k, err
		}
		if timeout == 0 || (timeout > 0 && (n >= Yields || n%clockEvery == clockEvery-1) && !time.Now().Before(deadline)) {
			return 0, nil
		}
		switch {
		case n < Yields:
			runtime.Gosched()
		case timeout > 0:
			Sleep(min(naps.Next(), time.Until(deadline)))
		default:
			Sleep(naps.Next())
		}
	}
}

// Backoff is a run of naps that lengthen while nothing comes: Nap first,
// then twice the last one, up to MaxNap. The zero value starts at Nap.
type Backoff struct{ next time.Duration }

// Next returns how long the next nap is, and lengthens the one after.
func (b *Backoff) Next() time.Duration {
	d := max(b.next, Nap)
	b.next = min(2*d, MaxNap)
	return d
}

// Reset starts the run again at Nap; call it when the wait found work.
func (b *Backoff) Reset() { b.next = 0 }

// Sleep pauses the calling goroutine, and its thread, for about d: for a
// wait under a millisecond, where time.Sleep will not do. When nothing
// else is runnable the runtime waits for timers in its poller, whose
// timeout is in whole milliseconds, so time.Sleep(20 * time.Microsecond)
// takes 1.1 ms here (Go issue 44343; BenchmarkSleep), long enough for a
// 2,048-slot ring to fill or drain at 2 Mpps. Sleep is nanosleep: 93 µs
// for 20 µs here, the thread's timer slack (50 µs by default) and the
// wake-up included. A signal (the runtime's preemption) may end it early.
//
// It first lets the goroutines waiting for this P run (runtime.Gosched):
// a thread asleep in a system call keeps its P, and the runtime takes the
// P back only when it finds the same call in progress twice, which naps
// back to back rarely give it; with GOMAXPROCS=1 they delayed another
// goroutine's 2 ms timer by up to 11.5 ms (TestSleepLetsOthersRun).
func Sleep(d time.Duration) {
	runtime.Gosched()
	ts := unix.NsecToTimespec(int64(d))
	_ = unix.Nanosleep(&ts, nil) // EINTR: the caller looks again sooner
}
