package live

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/packetio/packetio/examples/internal/testbed"
	"github.com/packetio/packetio/internal/trafficgen"
)

// Feeder feeds the example's end of its own testbed from the peer's kernel:
// a Source on the peer aimed at the example's interface, with that
// interface made to take XDP frames (GRO on) unless the example runs a
// native XDP program there itself. It is what the sweep feeds its
// receivers with, so an example's first number is the receiver's, not a
// user-space feeder's.
//
// Where the kernel refuses live frames (trafficgen.Probe), the Source runs
// circuits instead of generators (trafficgen.Circuit), and String says so
// and why.
type Feeder struct {
	src    *Source
	gro    bool
	cpus   []int
	bed    *testbed.Bed
	cancel context.CancelFunc
	done   chan struct{}
	err    error
	once   sync.Once
}

// NewFeeder loads one generator per CPU of cpus on the peer of bed (an own
// bed) for frame. nativeXDP says the example's end runs a native XDP
// program (it then takes XDP frames as it is); otherwise GRO is turned on
// there, and put back by Close (and by the bed's Close).
func NewFeeder(bed *testbed.Bed, frame []byte, flows Flows, cpus []int, nativeXDP bool) (*Feeder, error) {
	if !bed.Own() {
		return nil, errors.New("live: a feeder needs the example's own veth pair")
	}
	f := &Feeder{bed: bed, cpus: append([]int(nil), cpus...)}
	if !nativeXDP {
		if _, err := bed.GRO(true); err != nil {
			return nil, err
		}
		f.gro = true
	}
	err := bed.InPeer(func() (err error) {
		f.src, err = New(bed.Peer, frame, flows, cpus)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%w (the in-kernel feeder needs BPF)", err)
	}
	return f, nil
}

// String says what feeds, for an example's first line.
func (f *Feeder) String() string {
	where := "unpinned"
	if len(f.cpus) == 1 {
		where = fmt.Sprintf("on CPU %d", f.cpus[0])
	} else if len(f.cpus) > 1 {
		where = fmt.Sprintf("on CPUs %v", f.cpus)
	}
	s := fmt.Sprintf("fed by the in-kernel generator (trafficgen, XDP_TX) %s from %s", where, f.bed.Peer)
	if err := f.src.Refused(); err != nil {
		s = fmt.Sprintf("fed by an in-kernel circuit (trafficgen.Circuit: frames going round a veth pair of its own, a copy out each turn; this kernel refuses the generator's live frames, %s) %s from %s", why(err), where, f.bed.Peer)
	}
	if f.gro {
		s += fmt.Sprintf(", GRO on at %s so its veth takes XDP frames", f.bed.Name)
	}
	return s
}

// Start feeds at rate frames a second (0: as fast as the kernel runs the
// generators) until ctx ends or Stop.
func (f *Feeder) Start(ctx context.Context, rate float64) {
	ctx, f.cancel = context.WithCancel(ctx)
	f.done = make(chan struct{})
	go func() {
		defer close(f.done)
		_, f.err = f.src.Run(ctx, rate)
	}()
}

// Sent is how many frames the feeder has offered: the peer's transmit
// counter where it can be read.
func (f *Feeder) Sent() uint64 {
	if n, err := f.src.Transmitted(); err == nil {
		return n
	}
	return f.src.Sent()
}

// Stop ends the feed, waits for the batch in progress, and returns why the
// feed ended early, if it did.
func (f *Feeder) Stop() error {
	if f.cancel == nil {
		return nil
	}
	f.once.Do(func() {
		f.cancel()
		<-f.done
	})
	return f.err
}

// Close stops the feed and unloads the generators. GRO goes back with the
// bed's Close.
func (f *Feeder) Close() error {
	return errors.Join(f.Stop(), f.src.Close())
}

// why is the kernel's word in err: its errno where it gave one.
func why(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

// FedPattern is a regular expression for the opening words of String on
// this kernel, for the examples' tests: the in-kernel generator's, or,
// where the kernel refuses live frames, the circuit's, which says why.
func FedPattern() string {
	if trafficgen.Probe() != nil {
		return `fed by an in-kernel circuit \(trafficgen.Circuit: frames going round a veth pair of its own, a copy out each turn; this kernel refuses the generator's live frames, [^)]+\) on CPUs? \[?0[^;(]* from \S+`
	}
	return `fed by the in-kernel generator \(trafficgen, XDP_TX\) on CPUs? \[?0[^;(]* from \S+`
}
