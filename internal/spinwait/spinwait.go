// Package spinwait owns the wait of the polling backends (dpdk, mlx5),
// whose queues have no file descriptor to block on: Poll looks at the ring
// again and again, yielding the processor between looks, and sleeps
// briefly between looks once it has waited a while, so an idle queue costs
// little CPU and a busy one answers within a look.
package spinwait

import (
	"runtime"
	"time"
)

const (
	// Yields is how many looks yield the processor before the wait
	// starts to sleep between them.
	Yields = 256
	// Nap is the sleep between looks after Yields: the longest a packet
	// that arrives during a long wait waits to be seen, plus the
	// scheduler's slack.
	Nap = 20 * time.Microsecond
	// clockEvery is how often, in looks, a yielding wait reads the clock.
	clockEvery = 64
)

// Wait calls look until it returns a count above zero or an error, which
// Wait returns, or until timeout passes (0, nil). A timeout of 0 looks
// once; a negative one waits until look says otherwise. look decides what
// a closed queue is: it returns the queue's ErrClosed, so Close ends a
// Wait within one look (at most Nap).
func Wait(timeout time.Duration, look func() (int, error)) (int, error) {
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for n := 0; ; n++ {
		if k, err := look(); k > 0 || err != nil {
			return k, err
		}
		if timeout == 0 || (timeout > 0 && (n >= Yields || n%clockEvery == clockEvery-1) && !time.Now().Before(deadline)) {
			return 0, nil
		}
		if n < Yields {
			runtime.Gosched()
		} else {
			time.Sleep(Nap)
		}
	}
}
