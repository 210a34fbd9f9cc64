package waitset

import (
	"fmt"
	"time"

	"github.com/packetio/packetio"
)

// Option configures a Set.
type Option func(*config)

type config struct {
	pollMs int // the longest sleep between two looks at polled queues
}

// DefaultPollInterval is how long Wait sleeps at most between two looks at
// the queues it polls (those without packetio.ReadyNotifier), when any.
const DefaultPollInterval = time.Millisecond

func defaults() config { return config{pollMs: 1} }

// WithPollInterval sets how long Wait sleeps at most between two looks at
// the queues it polls: the worst wake-up latency of such a queue, against
// one wake-up per interval while idle. It is rounded up to whole
// milliseconds (epoll's resolution), from 1 ms to 1 s. It changes nothing
// for queues waited on with epoll, and nothing when the set has no polled
// queue.
func WithPollInterval(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 || d > time.Second {
			c.pollMs = -1
			return
		}
		c.pollMs = int((d + time.Millisecond - 1) / time.Millisecond)
	}
}

func (c config) check() error {
	if c.pollMs < 1 || c.pollMs > 1000 {
		return fmt.Errorf("%w: WithPollInterval must be from 1ms to 1s", packetio.ErrInvalid)
	}
	return nil
}
