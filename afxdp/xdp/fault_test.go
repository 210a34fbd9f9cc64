package xdp

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
)

// TestWedgeWatch: the watch reports a wedge only when kick after kick
// finds the consumer index where it was for wedgeAfter, and reads the
// clock only when the index has not moved.
func TestWedgeWatch(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type kick struct {
		cons uint32
		at   time.Duration
		want bool
	}
	for _, tc := range []struct {
		name  string
		kicks []kick
	}{
		{"moving", []kick{{1, 0, false}, {2, 2 * time.Second, false}, {3, 4 * time.Second, false}}},
		{"stuck", []kick{{5, 0, false}, {5, 10 * time.Millisecond, false}, {5, 500 * time.Millisecond, false}, {5, 1010 * time.Millisecond, true}}},
		{"moves just in time", []kick{{5, 0, false}, {5, 10 * time.Millisecond, false}, {6, 1005 * time.Millisecond, false}, {6, 1500 * time.Millisecond, false}}},
		{"wraps", []kick{{^uint32(0), 0, false}, {^uint32(0), 0, false}, {0, 2 * time.Second, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w wedgeWatch
			clockReads := 0
			for i, k := range tc.kicks {
				now := func() time.Time { clockReads++; return t0.Add(k.at) }
				if got := w.observe(k.cons, now); got != k.want {
					t.Errorf("kick %d (cons %d at %v): wedged %v, want %v", i, k.cons, k.at, got, k.want)
				}
			}
			moved := 0
			for i := 1; i < len(tc.kicks); i++ {
				if tc.kicks[i].cons != tc.kicks[i-1].cons {
					moved++
				}
			}
			if max := len(tc.kicks) - 1 - moved; clockReads > max {
				t.Errorf("%d clock reads for %d kicks that found the ring unmoved", clockReads, max)
			}
		})
	}
}

// TestFaultWedgedRing: a transmit ring that holds descriptors while kick
// after kick moves none fails the socket with ErrWedged (which wraps
// ErrQueueFailed) after about wedgeAfter; from then on Transmit takes
// nothing, SendFunc returns the error, Stats counts it. The kernel never
// does this on a veth, so the kicks go to a datagram socket that answers
// and does nothing, as a hung driver would.
func TestFaultWedgedRing(t *testing.T) {
	p := vethPair(t)
	s := openIn(t, p.A, WithFilter(filter.MatchNone()), WithNeedWakeup()).Socket(0)
	descs := s.Alloc(8)
	for i := range descs {
		descs[i].Len = uint32(len(testFrame(s.UMEM()[descs[i].Addr:], uint32(i), 64)))
	}
	if n := s.TransmitNoKick(descs); n != 8 {
		t.Fatalf("queued %d of 8", n)
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	real := s.fd
	s.fd = pair[0]
	t.Cleanup(func() {
		s.fd = real
		unix.Close(pair[0])
		unix.Close(pair[1])
	})
	start := time.Now()
	var werr error
	for time.Since(start) < 3*time.Second {
		_ = s.Kick()
		if werr = s.Err(); werr != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(start)
	s.fd = real // what follows must not reach the kernel: the socket failed
	t.Logf("wedged after %v: %v", took, werr)
	if !errors.Is(werr, packetio.ErrWedged) || !errors.Is(werr, packetio.ErrQueueFailed) {
		t.Fatalf("Err %v, want ErrWedged", werr)
	}
	if took < wedgeAfter || took > wedgeAfter+500*time.Millisecond {
		t.Errorf("wedged after %v, want about %v", took, wedgeAfter)
	}
	more := s.Alloc(1)
	if len(more) == 1 {
		more[0].Len = 64
		if n := s.Transmit(more); n != 0 {
			t.Errorf("Transmit took %d on a wedged ring", n)
		}
		s.Free(more)
	}
	if n, err := s.SendFunc(1, func(int, []byte) int { return 64 }); n != 0 || !errors.Is(err, packetio.ErrWedged) {
		t.Errorf("SendFunc on a wedged ring: %d, %v", n, err)
	}
	if st, err := s.Stats(); err != nil || st.Wedged != 1 {
		t.Errorf("Stats: Wedged %d, %v", st.Wedged, err)
	}
}

// TestFaultBackPressureIsNotWedge: a caller that never completes fills the
// completion ring, the kernel stops taking descriptors and kicks move
// nothing: that is back-pressure of its own making, not a wedge.
func TestFaultBackPressureIsNotWedge(t *testing.T) {
	p := vethPair(t)
	s := openIn(t, p.A, WithFilter(filter.MatchNone()), WithNeedWakeup(), WithRingSizes(64, 64, 64, 64), WithNumFrames(512), WithTxFrames(256)).Socket(0)
	start := time.Now()
	for time.Since(start) < wedgeAfter+300*time.Millisecond {
		if s.NumFreeTxSlots() > 0 {
			descs := s.Alloc(s.NumFreeTxSlots())
			for i := range descs {
				descs[i].Len = 64
			}
			s.Free(descs[s.TransmitNoKick(descs):])
		}
		_ = s.Kick()
		time.Sleep(5 * time.Millisecond)
	}
	st, _ := s.Stats()
	t.Logf("in flight %d, completions waiting %d, %v", s.NumTransmitted(), s.NumCompleted(), st)
	if err := s.Err(); err != nil {
		t.Errorf("Err %v: a full completion ring the caller does not drain is not a wedge", err)
	}
	settle(s)
	if s.NumTransmitted() != 0 {
		t.Errorf("%d still in flight after completing", s.NumTransmitted())
	}
}

// TestFaultCloseRxWakesPoll: CloseRx wakes a Poll blocked on the socket at
// once with ErrClosed and leaves the transmit side working; Socket.Close
// after it still closes.
func TestFaultCloseRxWakesPoll(t *testing.T) {
	p := vethPair(t)
	s := openIn(t, p.A, WithFilter(filter.MatchNone())).Socket(0)
	done := make(chan error, 1)
	go func() {
		_, err := s.Poll(-1)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	s.CloseRx()
	select {
	case err := <-done:
		if !errors.Is(err, packetio.ErrClosed) {
			t.Errorf("Poll after CloseRx: %v", err)
		}
	case <-time.After(100 * time.Millisecond):
		t.Fatal("CloseRx did not wake Poll")
	}
	if _, err := s.Poll(0); !errors.Is(err, packetio.ErrClosed) {
		t.Errorf("a later Poll: %v", err)
	}
	if n, err := s.SendFunc(1, func(_ int, b []byte) int { return len(testFrame(b, 1, 64)) }); n != 1 || err != nil {
		t.Errorf("SendFunc after CloseRx: %d, %v", n, err)
	}
	if err := s.Err(); err != nil {
		t.Errorf("Err after CloseRx: %v", err)
	}
}

// TestCloseInsideBuildRefuses: Close of the socket or the fleet from inside
// a SendFunc build function on it, which would wait for that call forever,
// refuses at once with ErrBusy and changes nothing: the frame goes, and a
// Close after the call closes. Closing another fleet from inside goes
// ahead.
func TestCloseInsideBuildRefuses(t *testing.T) {
	p := vethPair(t)
	f := openIn(t, p.B, WithFilter(filter.MatchEtherType(testEtherType)))
	other := openIn(t, p.A, WithFilter(filter.MatchEtherType(testEtherType)))
	s, otherSock := f.Sockets()[0], other.Sockets()[0]
	var sockErr, fleetErr, otherErr error
	n, err := s.SendFunc(1, func(i int, frame []byte) int {
		sockErr, fleetErr, otherErr = s.Close(), f.Close(), other.Close()
		return len(testFrame(frame, 1, 64))
	})
	if n != 1 || err != nil {
		t.Errorf("SendFunc around the refused Closes: %d, %v; want 1, nil", n, err)
	}
	for what, err := range map[string]error{"socket": sockErr, "fleet": fleetErr} {
		var oe *packetio.OpError
		if !errors.Is(err, packetio.ErrBusy) || !errors.As(err, &oe) || oe.Op != "close" {
			t.Errorf("%s Close inside the build: %v; want an OpError of close matching ErrBusy", what, err)
		}
	}
	if otherErr != nil || !otherSock.Closed() {
		t.Errorf("Close of another fleet inside the build: %v (closed %v); want it closed", otherErr, otherSock.Closed())
	}
	if s.Closed() {
		t.Fatal("the socket is closed after its Close refused")
	}
	if err := f.Close(); err != nil || !s.Closed() {
		t.Errorf("Close after the build: %v (closed %v)", err, s.Closed())
	}
}
