package trafficgen_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/trafficgen"
)

// needLiveFrames stops a test that needs the generator on a kernel that
// refuses live frames (Probe), with testenv.KernelLimit's "kernel limit"
// skip, after checking what a caller sees of the refusal: New's error,
// matching packetio.ErrUnsupported. On any other kernel it returns,
// having checked testenv.NeedBPF.
func needLiveFrames(t testing.TB) {
	t.Helper()
	testenv.NeedBPF(t)
	refused := trafficgen.Probe()
	if refused == nil {
		return
	}
	_, err := trafficgen.New("lo", make([]byte, 60))
	if !errors.Is(err, packetio.ErrUnsupported) || !errors.Is(refused, packetio.ErrUnsupported) {
		t.Fatalf("the kernel refuses live frames (%v), and New says %v: want both to match packetio.ErrUnsupported", refused, err)
	}
	testenv.KernelLimit(t, "%v", err)
}

func frame() []byte {
	b := make([]byte, 60)
	copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x88, 0xb5})
	binary.BigEndian.PutUint16(b[14:], 1000)
	return b
}

// TestGeneratorFeedsAReceiver: frames sent from inside the kernel on one
// end of a veth arrive at an AF_XDP receiver on the other, with the flow
// counter advancing.
func TestGeneratorFeedsAReceiver(t *testing.T) {
	needLiveFrames(t)
	p := netns.New(t)
	var f *xdp.Fleet
	if err := p.B.Do(func() (err error) {
		f, err = xdp.Open(p.B.Link, xdp.WithFilter(filter.MatchEtherType(0x88b5)), xdp.WithDriverMode(), xdp.WithNeedWakeup())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var g *trafficgen.Generator
	if err := p.A.Do(func() (err error) {
		g, err = trafficgen.New(p.A.Link, frame(), trafficgen.WithFlows(14, 16))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer g.Close()

	s := f.Socket(0)
	s.Fill(s.NumFreeFillSlots())
	const n = 200000
	start := time.Now()
	done := make(chan error, 1)
	go func() { _, err := g.Send(n); done <- err }()
	got, flows := 0, map[uint16]bool{}
	deadline := time.Now().Add(5 * time.Second)
	sendErr := error(nil)
	finished := false
	for time.Now().Before(deadline) {
		if _, err := s.Poll(10 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		descs := s.Receive(1024)
		for _, d := range descs {
			b := s.GetFrame(d)
			if len(b) == 60 && b[12] == 0x88 && b[13] == 0xb5 {
				got++
				flows[binary.BigEndian.Uint16(b[14:])] = true
			}
		}
		s.Recycle(descs)
		s.Fill(s.NumFreeFillSlots())
		select {
		case sendErr = <-done:
			finished = true
		default:
		}
		if finished && len(descs) == 0 {
			break
		}
	}
	elapsed := time.Since(start)
	if sendErr != nil {
		t.Fatal(sendErr)
	}
	if !finished {
		t.Fatal("the generator did not finish in 5 s")
	}
	st, _ := f.Stats()
	t.Logf("sent %d in %v (%.2f Mpps offered), received %d, %d flows; %v", n, elapsed, float64(n)/elapsed.Seconds()/1e6, got, len(flows), st)
	if got == 0 {
		t.Fatal("nothing arrived")
	}
	if len(flows) < 2 || len(flows) > 16 {
		t.Errorf("%d flows, want 2 to 16", len(flows))
	}
	for fl := range flows {
		if fl < 1000 || fl >= 1016 {
			t.Errorf("flow counter %d outside 1000-1015", fl)
		}
	}
}

// TestGeneratorRefusesBadFrames: sizes outside what a live frame takes.
func TestGeneratorRefusesBadFrames(t *testing.T) {
	for _, n := range []int{0, 13, 4000} {
		if _, err := trafficgen.New("lo", make([]byte, n)); err == nil {
			t.Errorf("a %d-byte frame was accepted", n)
		}
	}
	if _, err := trafficgen.New("lo", frame(), trafficgen.WithFlows(59, 4)); err == nil {
		t.Error("a flow counter past the frame was accepted")
	}
}

// TestLoopOverlapsPinnedCalls: a pinned generator's Loop has two calls in
// progress at once (so its program stays in the kernel's XDP dispatcher
// between calls, see the package comment), an unpinned one never more
// than one; every frame a call sent reaches next, and Loop ends when next
// returns 0.
func TestLoopOverlapsPinnedCalls(t *testing.T) {
	needLiveFrames(t)
	p := netns.New(t)
	for _, tc := range []struct {
		name string
		opts []trafficgen.Option
		most int
	}{
		{"pinned", []trafficgen.Option{trafficgen.WithCPU(0)}, 2},
		{"unpinned", nil, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGenerator(t, p, tc.opts...)
			const calls, per = 10, 1 << 18 // long calls: see the package comment
			inFlight, most, asked := 0, 0, 0
			var passed uint64
			start := time.Now()
			err := g.Loop(func(sent uint32, took time.Duration) uint32 {
				if sent > 0 { // a thread's call ended
					inFlight--
					passed += uint64(sent)
					if took <= 0 {
						t.Errorf("a call of %d frames took %v", sent, took)
					}
				}
				if asked == calls {
					return 0
				}
				asked++
				inFlight++
				most = max(most, inFlight)
				return per
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d calls of %d frames in %v", calls, per, time.Since(start)) // BenchmarkLoop measures it
			if inFlight != 0 {
				t.Errorf("%d calls were not passed back to next", inFlight)
			}
			if passed != calls*per || g.Sent() != passed {
				t.Errorf("next was passed %d frames, the generator sent %d; want %d", passed, g.Sent(), calls*per)
			}
			if most != tc.most {
				t.Errorf("at most %d calls in progress at once, want %d", most, tc.most)
			}
		})
	}
}

// TestCloseEndsALoop: Close during a Loop that would go on for ever ends it
// after the calls in progress, without an error, and the generator refuses
// work afterwards.
func TestCloseEndsALoop(t *testing.T) {
	needLiveFrames(t)
	p := netns.New(t)
	g := newGenerator(t, p, trafficgen.WithCPU(0))
	started := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	go func() {
		done <- g.Loop(func(uint32, time.Duration) uint32 {
			once.Do(func() { close(started) })
			return 20000
		})
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("Loop ended before its first call: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Loop ended by Close: %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Loop still running 10 s after Close returned")
	}
	if _, err := g.Send(1); err == nil {
		t.Error("Send after Close succeeded")
	}
}

// TestLoopReportsAFailedCall: when a call fails (here because the
// interface it sends from was deleted), Loop returns the kernel's refusal,
// the other thread's loop ends too, and every frame the calls before it
// sent has reached next.
func TestLoopReportsAFailedCall(t *testing.T) {
	needLiveFrames(t)
	p := netns.New(t)
	g := newGenerator(t, p, trafficgen.WithCPU(0))
	const per = 20000
	first := make(chan struct{})
	var once sync.Once
	var passed uint64
	done := make(chan error, 1)
	go func() {
		done <- g.Loop(func(sent uint32, _ time.Duration) uint32 {
			passed += uint64(sent)
			if sent > 0 {
				once.Do(func() { close(first) })
			}
			return per
		})
	}()
	select {
	case <-first:
	case err := <-done:
		t.Fatalf("Loop ended before a call finished: %v", err)
	}
	if err := p.A.Do(func() error {
		l, err := netlink.LinkByName(p.A.Link)
		if err != nil {
			return err
		}
		return netlink.LinkDel(l)
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, unix.ENODEV) || !strings.Contains(err.Error(), "live-frames run on "+p.A.Link) {
			t.Fatalf("Loop after the interface went: %v, want the live-frames run's ENODEV naming %s", err, p.A.Link)
		}
		t.Logf("Loop returned: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Loop still running 10 s after its interface was deleted")
	}
	if passed == 0 || passed%per != 0 || passed != g.Sent() {
		t.Errorf("next was passed %d frames, the generator sent %d (calls of %d)", passed, g.Sent(), per)
	}
}

// newGenerator loads a generator of frame() on p's A end, closed when the
// test ends.
func newGenerator(t testing.TB, p *netns.Pair, opts ...trafficgen.Option) *trafficgen.Generator {
	t.Helper()
	var g *trafficgen.Generator
	if err := p.A.Do(func() (err error) {
		g, err = trafficgen.New(p.A.Link, frame(), opts...)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// BenchmarkLoop: frames a second through Loop on a pinned generator (two
// overlapping threads) and an unpinned one (one thread, whose every call
// waits out two RCU grace periods), in calls of 1 Mi frames; the peer
// drops them.
func BenchmarkLoop(b *testing.B) {
	needLiveFrames(b)
	p := netns.New(b)
	for _, bc := range []struct {
		name string
		opts []trafficgen.Option
	}{
		{"pinned", []trafficgen.Option{trafficgen.WithCPU(0)}},
		{"unpinned", nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			g := newGenerator(b, p, bc.opts...)
			const per = 1 << 20
			calls := 0
			start := time.Now()
			if err := g.Loop(func(sent uint32, _ time.Duration) uint32 {
				if calls == b.N {
					return 0
				}
				calls++
				return per
			}); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(g.Sent())/time.Since(start).Seconds()/1e6, "Mpps")
		})
	}
}
