package metrics

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// Reporter prints one line per interval: the packet rate, the machine's CPU
// and whatever the caller adds.
type Reporter struct {
	w     io.Writer
	start time.Time
	last  Sample
	count uint64
}

// NewReporter starts a reporter writing to w.
func NewReporter(w io.Writer) (*Reporter, error) {
	s, err := ReadCPU()
	if err != nil {
		return nil, err
	}
	return &Reporter{w: w, start: s.When, last: s}, nil
}

// Line prints the rate of packets (a running total) since the last line,
// the CPU used meanwhile and extra, and returns the rate in packets per
// second.
func (r *Reporter) Line(packets uint64, extra string) (float64, Usage, error) {
	s, err := ReadCPU()
	if err != nil {
		return 0, Usage{}, err
	}
	secs := s.When.Sub(r.last.When).Seconds()
	rate := 0.0
	if secs > 0 {
		rate = float64(packets-r.count) / secs
	}
	u := Between(r.last, s)
	fmt.Fprintf(r.w, "[%5.1fs] %8.3f Mpps  %s%s\n", s.When.Sub(r.start).Seconds(), rate/1e6, u, extra)
	r.last, r.count = s, packets
	return rate, u, nil
}

// Limiter lets an error through at most once per interval and counts the
// rest, so a packet loop can report trouble without flooding the terminal
// or stopping.
type Limiter struct {
	Every time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// Log prints err through logf unless one was printed less than Every ago.
func (l *Limiter) Log(logf func(format string, args ...any), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.Every {
		l.suppressed++
		return
	}
	if l.suppressed > 0 {
		logf("%v (and %d more like it since the last)", err, l.suppressed)
	} else {
		logf("%v", err)
	}
	l.last, l.suppressed = now, 0
}

// Every prints a line every interval until ctx ends. sample returns the
// running packet total and extra text for the line.
func Every(ctx context.Context, w io.Writer, interval time.Duration, sample func() (uint64, string)) error {
	rep, err := NewReporter(w)
	if err != nil {
		return err
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			n, extra := sample()
			if _, _, err := rep.Line(n, extra); err != nil {
				return err
			}
		}
	}
}
