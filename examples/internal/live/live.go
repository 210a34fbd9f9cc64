// Package live transmits one frame from inside the kernel, as fast as the
// kernel runs it or at a rate, through internal/trafficgen (BPF_PROG_RUN
// with live frames, XDP_TX): one generator per CPU given, each on its own
// thread pinned there. On a veth pair it offers several times what any
// user-space sender can, so a receiver fed by it is measured, not its
// feeder.
//
// A veth sends these frames only while its peer's NAPI is on: the peer runs
// a native XDP program (an afxdp receiver) or has GRO on
// (testbed.Bed.GRO). Otherwise the kernel drops every one without a word
// (the run itself succeeds), so Run asks the kernel first (Takes) and
// refuses with ErrNotTaken.
//
// Each generator loads one small XDP program when the Source is made, and
// no more: a Source is made once and run many times, never made in a loop.
package live

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/internal/trafficgen"
)

// How many frames one generator sends per BPF_PROG_RUN call. Each call
// sets up and tears down a page pool in the kernel, and the CPU sits idle
// for about 30 ms of it (measured on a 2-CPU VM: 2^14 frames a call ran at
// 0.5 Mpps, 2^16 at 1.3, 2^18 at 2.2, 2^20 at 2.9). So a call should last
// several times that; but Run waits for the call in progress when it
// stops, and Sent moves once a call. Run sizes each call to last about
// CallTime at the rate the last one ran, between MinBatch and MaxBatch
// frames (the interface's own counter, Transmitted, moves smoothly
// meanwhile).
const (
	MinBatch = 1 << 14
	MaxBatch = 1 << 22
	CallTime = 250 * time.Millisecond
)

// firstBatch is the first call's size, before a rate is known.
const firstBatch = 1 << 18

// nextBatch is the size of the call after one that sent n frames in d.
func nextBatch(n uint32, d time.Duration) uint32 {
	if d <= 0 {
		return MaxBatch
	}
	next := float64(n) * float64(CallTime) / float64(d)
	return uint32(max(min(next, MaxBatch), MinBatch))
}

// Flows varies a 16-bit big-endian field of the frame (a UDP source port,
// say) through N values from the one in the frame, so a receiver that
// hashes flows over queues sees N flows. N < 2 leaves the frame alone.
type Flows struct {
	Offset, N int
}

// Source is a set of generators sending the same frame out of one
// interface.
//
// On a kernel that refuses live frames (trafficgen.Probe) each generator
// is a trafficgen.Circuit instead: frames going round a veth pair of its
// own in the namespace, a copy out of the interface on every turn. String
// says which, and why.
type Source struct {
	ifname  string
	gens    []*trafficgen.Generator
	circs   []*trafficgen.Circuit // instead of gens where live frames are refused
	refused error                 // the kernel's refusal of live frames
	cpus    []int
	ns      netns.NsHandle // the namespace the generators send in

	mu      sync.Mutex // one Run at a time
	sent    atomic.Uint64
	closeMu sync.Mutex
	closed  bool
}

// New loads one generator per CPU in cpus (nil or empty: one generator,
// on no CPU in particular) for frame on ifname, in the calling thread's
// network namespace.
func New(ifname string, frame []byte, flows Flows, cpus []int) (*Source, error) {
	s := &Source{ifname: ifname, cpus: append([]int(nil), cpus...), ns: -1}
	if len(s.cpus) == 0 {
		s.cpus = []int{-1}
	}
	ns, err := netns.Get()
	if err != nil {
		return nil, fmt.Errorf("live: the current network namespace: %w", err)
	}
	s.ns = ns
	for _, cpu := range s.cpus {
		var opts []trafficgen.Option
		if flows.N > 1 {
			opts = append(opts, trafficgen.WithFlows(flows.Offset, flows.N))
		}
		if cpu >= 0 {
			opts = append(opts, trafficgen.WithCPU(cpu))
		}
		if s.refused == nil {
			g, err := trafficgen.New(ifname, frame, opts...)
			if err == nil {
				s.gens = append(s.gens, g)
				continue
			}
			if !errors.Is(err, packetio.ErrUnsupported) || len(s.gens) > 0 {
				s.Close()
				return nil, fmt.Errorf("live: %w", err)
			}
			s.refused = err // New's probe: live frames refused; circuits from here on
		}
		c, err := trafficgen.NewCircuit(ifname, frame, opts...)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("live: %w (the kernel refuses live frames: %w)", err, s.refused)
		}
		s.circs = append(s.circs, c)
	}
	return s, nil
}

// Generators is how many generators the source runs.
func (s *Source) Generators() int { return len(s.gens) + len(s.circs) }

// Refused is the kernel's refusal of live frames when the source runs
// circuits instead of generators, else nil.
func (s *Source) Refused() error { return s.refused }

// String describes the source for output.
func (s *Source) String() string {
	where := "unpinned"
	if s.cpus[0] >= 0 {
		where = fmt.Sprintf("on CPU %v", s.cpus)
	}
	if s.refused != nil {
		return fmt.Sprintf("%d in-kernel circuit(s) to %s (frames going round a veth pair of its own, a copy out of %s each turn: this kernel refuses live frames, %s), %s", len(s.circs), s.ifname, s.ifname, why(s.refused), where)
	}
	return fmt.Sprintf("%d in-kernel generator(s) on %s (BPF_PROG_RUN live frames, XDP_TX), %s", len(s.gens), s.ifname, where)
}

// Sent is how many frames the source has run through the kernel since it
// was made. It moves once per call of each generator (CallTime); a
// circuit's count moves with every frame.
func (s *Source) Sent() uint64 {
	n := s.sent.Load()
	for _, c := range s.circs {
		n += c.Sent()
	}
	return n
}

// Transmitted is the interface's transmit counter (netlink link
// statistics), which on a veth counts every XDP frame it passed to its
// peer as it goes, where Sent moves a whole batch at a time. Other traffic
// the interface sends (its kernel's replies) is in it too.
func (s *Source) Transmitted() (uint64, error) {
	h, err := netlink.NewHandleAt(s.ns)
	if err != nil {
		return 0, fmt.Errorf("live: netlink: %w", err)
	}
	defer h.Close()
	l, err := h.LinkByName(s.ifname)
	if err != nil {
		return 0, fmt.Errorf("live: %s: %w", s.ifname, err)
	}
	st := l.Attrs().Statistics
	if st == nil {
		return 0, fmt.Errorf("live: %s reports no statistics", s.ifname)
	}
	return st.TxPackets, nil
}

// Takes reports whether the interface would pass XDP frames on now, asked
// of the kernel (the netdev family's xdp-features: a veth is a redirect
// target only while its peer runs a native XDP program or has GRO on). A
// kernel that cannot say gives an error.
func (s *Source) Takes() (bool, error) {
	var f xdp.XSKFeatures
	err := s.in(func() (err error) { f, err = xdp.QueryXSKFeatures(s.ifname); return err })
	if err != nil {
		return false, fmt.Errorf("live: %w", err)
	}
	return f.XDP&xdpActNdoXmit != 0, nil
}

// xdpActNdoXmit is NETDEV_XDP_ACT_NDO_XMIT (uapi/linux/netdev.h).
const xdpActNdoXmit = 0x4

// in runs fn on a thread inside the source's namespace.
func (s *Source) in(fn func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("the current namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(s.ns); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter the namespace: %w", err)
	}
	defer func() {
		// A thread that cannot go back stays locked and is thrown away.
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
	}()
	return fn()
}

// ErrNotTaken is returned by Run when the interface would drop every frame:
// the kernel runs them without a word, so Run asks first.
var ErrNotTaken = errors.New("the interface passes on no XDP frames now: a veth does only while its peer runs a native XDP program or has GRO on")

// Run sends until ctx ends, at rate frames a second over all generators
// (0: as fast as the kernel runs them), and returns how many it sent in
// this run and the first error a generator met (a peer that does not take
// XDP frames, a closed source). Cancelling ctx is not an error.
func (s *Source) Run(ctx context.Context, rate float64) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeMu.Lock()
	closed := s.closed
	s.closeMu.Unlock()
	if closed {
		return 0, errors.New("live: closed")
	}
	if ok, err := s.Takes(); err == nil && !ok {
		return 0, fmt.Errorf("live: %s: %w", s.ifname, ErrNotTaken)
	}
	if len(s.circs) > 0 {
		return s.runCircuits(ctx, rate)
	}
	per := rate / float64(len(s.gens))
	var wg sync.WaitGroup
	var total atomic.Uint64
	errs := make([]error, len(s.gens))
	for i, g := range s.gens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.run(ctx, g, per, &total)
		}()
	}
	wg.Wait()
	return total.Load(), errors.Join(errs...)
}

// runCircuits is Run on circuits: each runs until ctx ends, at its share
// of rate.
func (s *Source) runCircuits(ctx context.Context, rate float64) (uint64, error) {
	before := s.Sent()
	per := rate / float64(len(s.circs))
	var wg sync.WaitGroup
	errs := make([]error, len(s.circs))
	for i, c := range s.circs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Run(ctx.Done(), per)
		}()
	}
	wg.Wait()
	return s.Sent() - before, errors.Join(errs...)
}

// run drives one generator, its calls back to back on its own threads
// (trafficgen's Loop). With a rate it sends a twentieth of a second's worth
// per call and sleeps while it is ahead.
func (s *Source) run(ctx context.Context, g *trafficgen.Generator, rate float64, total *atomic.Uint64) error {
	batch := uint32(firstBatch)
	if rate > 0 {
		batch = uint32(max(min(rate/20, MaxBatch), 1))
	}
	start := time.Now()
	var mine uint64
	return g.Loop(func(sent uint32, took time.Duration) uint32 {
		if sent > 0 {
			mine += uint64(sent)
			total.Add(uint64(sent))
			s.sent.Add(uint64(sent))
			if rate == 0 {
				batch = nextBatch(sent, took)
			}
		}
		for ctx.Err() == nil {
			if rate <= 0 {
				return batch
			}
			ahead := float64(mine) - rate*time.Since(start).Seconds()
			if ahead <= 0 {
				return batch
			}
			if sleep(ctx, time.Duration(ahead/rate*float64(time.Second))) != nil {
				break
			}
		}
		return 0
	})
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Close unloads every generator, after the batch each is running. It is
// idempotent; a Run after it fails.
func (s *Source) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, g := range s.gens {
		if err := g.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range s.circs {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if s.ns >= 0 {
		s.ns.Close()
		s.ns = -1
	}
	return errors.Join(errs...)
}
