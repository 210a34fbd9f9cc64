package trafficgen

import (
	"errors"
	"sync"

	"github.com/packetio/packetio"
)

// A Feed sends copies of one frame out of one interface from inside the
// kernel, flat out, until Stop: with a Generator, or with a Circuit where
// the kernel refuses live frames (Probe). It is what a benchmark feeds a
// receiver with.
type Feed struct {
	g    *Generator
	c    *Circuit
	stop chan struct{}
	done chan error
	once sync.Once
	err  error
}

// StartFeed starts a Feed of frame out of ifname, in the calling thread's
// network namespace; opts are New's (NewCircuit's where it runs one).
func StartFeed(ifname string, frame []byte, opts ...Option) (*Feed, error) {
	f := &Feed{stop: make(chan struct{}), done: make(chan error, 1)}
	g, err := New(ifname, frame, opts...)
	if err == nil {
		f.g = g
		go func() { _, err := g.Run(f.stop, 0); f.done <- err }()
		return f, nil
	}
	if !errors.Is(err, packetio.ErrUnsupported) {
		return nil, err
	}
	// New's probe found live frames refused.
	c, err := NewCircuit(ifname, frame, opts...)
	if err != nil {
		return nil, err
	}
	f.c = c
	go func() { f.done <- c.Run(f.stop, 0) }()
	return f, nil
}

// Stop ends the feed, unloads it, and returns why it ended early, if it
// did, or why it could not be unloaded. It is idempotent.
func (f *Feed) Stop() error {
	f.once.Do(func() {
		close(f.stop)
		f.err = <-f.done
		if f.c != nil {
			f.err = errors.Join(f.err, f.c.Close())
		} else {
			f.err = errors.Join(f.err, f.g.Close())
		}
	})
	return f.err
}
