// Package inplace is what the examples that answer frames in place share
// (udpreflector, dns, l2fwd's bounce): a fleet opened for it, one worker
// per socket, and each worker's loop, in which a frame is received,
// rewritten where it lies, transmitted from the same frame, and given
// back to the receive pool when the kernel completes it.
package inplace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/bed"
	"github.com/packetio/packetio/examples/internal/cpus"
	"github.com/packetio/packetio/filter"
)

// Tuning is how a program runs its fleet, and what it says of itself on
// its first line.
type Tuning struct {
	// Program is the program's name, for the first line.
	Program string
	// Batch is the most frames per Receive.
	Batch int
	// BusyPoll makes every socket busy-poll its queue (SO_BUSY_POLL
	// backend.BusyPollUsecs, budget backend.BusyPollBudget) and the loop
	// never sleep in Poll.
	BusyPoll bool
	// CPUs pins worker i to the i-th CPU (in turn); none: unpinned.
	CPUs []int
	// Feed says what feeds the program, for the first line.
	Feed string
}

// Open opens a fleet on p taking what m matches, laid out for answering
// in place: received frames are what is sent, so the transmit pool gets
// only a token 64 frames and every ring room for all 4096. It prints the
// first line (backend.XDPLine, read back from the fleet's Info) to w, and
// the Info after it.
func Open(p bed.Port, m filter.Match, t Tuning, w io.Writer) (*xdp.Fleet, error) {
	opts := []xdp.Option{
		xdp.WithFilter(m),
		xdp.WithNeedWakeup(),
		xdp.WithNumFrames(4096), xdp.WithTxFrames(64),
		xdp.WithRingSizes(2048, 4096, 2048, 4096),
	}
	if t.BusyPoll {
		opts = append(opts, xdp.WithBusyPoll(backend.BusyPollUsecs, backend.BusyPollBudget))
	}
	var fleet *xdp.Fleet
	err := p.Do(func() (err error) {
		fleet, err = xdp.Open(p.Name, opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	info, err := fleet.Info()
	if err != nil {
		fleet.Close()
		return nil, err
	}
	fmt.Fprintln(w, backend.XDPLine(t.Program, info, t.Batch, t.CPUs, t.Feed))
	fmt.Fprintln(w, info)
	return fleet, nil
}

// Workers runs one goroutine per socket of a fleet.
type Workers struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   chan error
}

// Start runs work on every socket of fleet, each in its own goroutine
// pinned to the CPUs given in turn (none: unpinned), until ctx ends or
// Stop.
func Start(ctx context.Context, fleet *xdp.Fleet, pin []int, work func(context.Context, *xdp.Socket) error) *Workers {
	ctx, cancel := context.WithCancel(ctx)
	ws := &Workers{cancel: cancel, errs: make(chan error, fleet.NumQueues())}
	for i, s := range fleet.Sockets() {
		ws.wg.Add(1)
		go func() {
			defer ws.wg.Done()
			err := cpus.Pin(cpus.For(pin, i))
			if err == nil {
				err = work(ctx, s)
			}
			if err != nil {
				ws.errs <- err
			}
		}()
	}
	return ws
}

// Stop stops the workers, waits for them, and returns the first error one
// of them returned. The caller then closes the fleet.
func (ws *Workers) Stop() error {
	ws.cancel()
	ws.wg.Wait()
	close(ws.errs)
	return <-ws.errs
}

// Loop is one socket's side of the cycle. One goroutine drives it.
type Loop struct {
	s     *xdp.Socket
	batch int
	busy  bool
	mem   []byte
	size  uint64     // frame size
	done  []uint64   // completed addresses
	home  []xdp.Desc // the same, as descriptors for Recycle
}

// NewLoop prepares the loop of s, receiving up to batch frames at a time;
// busy makes it never sleep in Poll (for a socket that busy-polls).
func NewLoop(s *xdp.Socket, batch int, busy bool) *Loop {
	return &Loop{
		s: s, batch: batch, busy: busy, mem: s.UMEM(), size: uint64(s.FrameSize()),
		done: make([]uint64, 0, 4096), home: make([]xdp.Desc, 0, 4096),
	}
}

// reclaim gives the frames the kernel has sent back to the receive pool.
func (l *Loop) reclaim() {
	l.done = l.s.CompleteInto(cap(l.done), l.done[:0])
	if len(l.done) == 0 {
		return
	}
	l.home = l.home[:0]
	for _, a := range l.done {
		l.home = append(l.home, xdp.Desc{Addr: a})
	}
	l.s.Recycle(l.home)
}

// Next reclaims completed frames, refills the fill ring and waits for
// frames: up to 100 ms, or 1 ms while transmitted frames are still to be
// completed, or not at all on a busy-polling loop. It returns what arrived (possibly nothing); ok is false once
// ctx has ended or the socket is closed, and err is set for any other
// failure.
func (l *Loop) Next(ctx context.Context) (descs []xdp.Desc, ok bool, err error) {
	if ctx.Err() != nil {
		return nil, false, nil
	}
	l.reclaim()
	l.s.Fill(l.s.NumFreeFillSlots())
	wait := 100 * time.Millisecond
	switch {
	case l.busy:
		wait = 0
	case l.s.NumTransmitted() > 0:
		wait = time.Millisecond
	}
	if _, err := l.s.Poll(wait); err != nil {
		if errors.Is(err, xdp.ErrClosed) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return l.s.Receive(l.batch), true, nil
}

// Room is d's frame from the packet on to the end of its chunk (a reply
// may use the room after the received bytes), or false when d lies
// outside the UMEM.
func (l *Loop) Room(d xdp.Desc) ([]byte, bool) {
	end := d.Addr&^(l.size-1) + l.size
	if d.Addr >= uint64(len(l.mem)) || end > uint64(len(l.mem)) {
		return nil, false
	}
	return l.mem[d.Addr:end:end], true
}

// Send transmits tx, gives drop and whatever of tx the ring had no room
// for back to the receive pool, collects completions, and returns how
// many of tx were sent.
func (l *Loop) Send(tx, drop []xdp.Desc) int {
	sent := l.s.Transmit(tx)
	l.s.Recycle(tx[sent:])
	l.s.Recycle(drop)
	l.reclaim()
	return sent
}
