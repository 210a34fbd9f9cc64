// Package ratelog lets a packet loop report trouble without flooding the
// terminal or stopping: at most one line per interval, with a count of what
// it held back.
package ratelog

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// Limiter prints at most one message per Every to W and counts the rest.
// It is safe from any goroutine; the zero Every prints everything.
type Limiter struct {
	W     io.Writer
	Every time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// New returns a limiter printing to w at most once per every.
func New(w io.Writer, every time.Duration) *Limiter { return &Limiter{W: w, Every: every} }

// Printf prints the message unless one was printed less than Every ago.
// The arguments are formatted only when the line is printed.
func (l *Limiter) Printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.Every {
		l.suppressed++
		return
	}
	msg := fmt.Sprintf(format, args...)
	if l.suppressed > 0 {
		msg = fmt.Sprintf("%s (and %d more since the last)", msg, l.suppressed)
	}
	fmt.Fprintln(l.W, msg)
	l.last, l.suppressed = now, 0
}

// Suppressed is how many messages were held back since the last printed.
func (l *Limiter) Suppressed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.suppressed
}
