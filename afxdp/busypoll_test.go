package afxdp_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// TestBusyPoll: WithBusyPoll reaches the kernel (Info reads the socket
// options back), and a loop that never sleeps in Poll still receives every
// frame: the zero-timeout Poll is what drives the queue's NAPI.
func TestBusyPoll(t *testing.T) {
	testenv.NeedBPF(t)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := netns.New(t)
			d := openOn(t, p.A, afxdp.WithSteering(testFilter), afxdp.WithFrames(1024), afxdp.WithBusyPoll(50, 64), m.opt)
			if got, want := d.Info().BusyPoll, "50us budget 64, preferred"; got != want {
				t.Fatalf("Info().BusyPoll = %q, want %q", got, want)
			}
			peer := openOn(t, p.B, afxdp.WithSteering(testFilter), afxdp.WithFrames(1024), m.opt)
			rx := d.RxQueue(0)
			rx.Fill(rx.NumFreeFillSlots())
			const want = 200
			sent := 0
			for sent < want {
				sent += sendTestFrames(t, peer.TxQueue(0), min(16, want-sent))
			}
			got := 0
			for deadline := time.Now().Add(5 * time.Second); got < sent && time.Now().Before(deadline); {
				if _, err := rx.Poll(0); err != nil {
					t.Fatal(err)
				}
				descs := rx.Receive(64)
				got += len(descs)
				rx.Recycle(descs)
				rx.Fill(rx.NumFreeFillSlots())
			}
			if got != sent {
				t.Fatalf("received %d of %d frames busy-polling", got, sent)
			}
		})
	}
	t.Run("default is off", func(t *testing.T) {
		p := netns.New(t)
		d := openOn(t, p.A, afxdp.WithSteering(testFilter), afxdp.WithFrames(1024))
		if got := d.Info().BusyPoll; got != "off" {
			t.Fatalf("Info().BusyPoll = %q without WithBusyPoll, want off", got)
		}
		if d.Capabilities().RxTimestamps {
			t.Fatal("Capabilities().RxTimestamps without WithTimestamps")
		}
		if got := d.Info().Timestamps; got != "off" {
			t.Fatalf("Info().Timestamps = %q without WithTimestamps, want off", got)
		}
	})
}

// TestPollSpin: an idle queue spins once and then sleeps at once in every
// later Poll (one miss, however many Polls); packets found waiting turn
// the spin back on, and so do packets that end a sleep within a spin (not
// later); WithPollSpin(-1) never spins; a spin longer than 1ms is
// refused naming the option.
func TestPollSpin(t *testing.T) {
	testenv.NeedBPF(t)
	spins := func(t *testing.T, rx packetio.RxQueue) (hits, misses uint64) {
		t.Helper()
		st, err := rx.Stats()
		if err != nil {
			t.Fatal(err)
		}
		return st.Backend["spin_hits"], st.Backend["spin_misses"]
	}
	idlePolls := func(t *testing.T, rx packetio.RxQueue, n int) {
		t.Helper()
		for range n {
			if k, err := rx.Poll(2 * time.Millisecond); k != 0 || err != nil {
				t.Fatalf("idle Poll = %d, %v", k, err)
			}
		}
	}
	t.Run("default", func(t *testing.T) {
		p := netns.New(t)
		d := openOn(t, p.A, afxdp.WithSteering(testFilter), afxdp.WithFrames(1024))
		peer := openOn(t, p.B, afxdp.WithSteering(testFilter), afxdp.WithFrames(1024))
		rx := d.RxQueue(0)
		rx.Fill(rx.NumFreeFillSlots())
		idlePolls(t, rx, 5)
		if _, misses := spins(t, rx); misses != 1 {
			t.Fatalf("5 idle Polls spun %d times without finding anything, want 1 (then sleep at once)", misses)
		}
		sent := sendTestFrames(t, peer.TxQueue(0), 16)
		got := 0
		for deadline := time.Now().Add(5 * time.Second); got < sent && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond) // let them wait: Poll finds them at once
			if _, err := rx.Poll(time.Second); err != nil {
				t.Fatal(err)
			}
			descs := rx.Receive(64)
			got += len(descs)
			rx.Recycle(descs)
		}
		if got != sent {
			t.Fatalf("received %d of %d", got, sent)
		}
		idlePolls(t, rx, 3)
		if _, misses := spins(t, rx); misses != 2 {
			t.Fatalf("after packets were found waiting, idle Polls spun %d times in all, want 2", misses)
		}
	})
	t.Run("woken", func(t *testing.T) {
		p := netns.New(t)
		d := openOn(t, p.A, afxdp.WithSteering(testFilter), afxdp.WithFrames(1024), afxdp.WithPollSpin(time.Millisecond))
		peer := openOn(t, p.B, afxdp.WithSteering(testFilter), afxdp.WithFrames(1024))
		rx := d.RxQueue(0)
		rx.Fill(rx.NumFreeFillSlots())
		polls := func() uint64 {
			st, err := rx.Stats()
			if err != nil {
				t.Fatal(err)
			}
			return st.Polls
		}
		// wakeAfter lets a cold queue sleep in Poll, ends the sleep with
		// a frame sent after delay, and says whether the next idle Poll
		// spins.
		wakeAfter := func(delay time.Duration) bool {
			idlePolls(t, rx, 1) // a warm spin misses: cold from here
			before := polls()
			done := make(chan error, 1)
			go func() { _, err := rx.Poll(5 * time.Second); done <- err }()
			for deadline := time.Now().Add(time.Second); polls() == before; {
				if time.Now().After(deadline) {
					t.Fatal("Poll did not go to sleep in 1s")
				}
				runtime.Gosched()
			}
			time.Sleep(delay)
			if sendTestFrames(t, peer.TxQueue(0), 1) != 1 {
				t.Fatal("the peer sent nothing")
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			rx.Recycle(rx.Receive(64))
			_, m0 := spins(t, rx)
			idlePolls(t, rx, 1)
			_, m1 := spins(t, rx)
			return m1 > m0
		}
		if wakeAfter(20 * time.Millisecond) {
			t.Error("a sleep that frames ended after 20ms turned the 1ms spin back on")
		}
		warmed := false
		for try := 0; try < 5 && !warmed; try++ {
			warmed = wakeAfter(0)
		}
		if !warmed {
			t.Error("no sleep that frames sent at once ended within the 1ms spin turned it back on, in 5 tries")
		}
	})
	t.Run("never", func(t *testing.T) {
		p := netns.New(t)
		d := openOn(t, p.A, afxdp.WithSteering(testFilter), afxdp.WithFrames(1024), afxdp.WithPollSpin(-1))
		rx := d.RxQueue(0)
		rx.Fill(rx.NumFreeFillSlots())
		idlePolls(t, rx, 3)
		if hits, misses := spins(t, rx); hits+misses != 0 {
			t.Fatalf("WithPollSpin(-1) spun: %d hits, %d misses", hits, misses)
		}
	})
	t.Run("too long", func(t *testing.T) {
		_, err := afxdp.Open("lo", afxdp.WithSteering(testFilter), afxdp.WithPollSpin(2*time.Millisecond))
		if !errors.Is(err, packetio.ErrInvalid) || !strings.Contains(err.Error(), "WithPollSpin(2ms)") {
			t.Fatalf("Open with a 2ms spin: %v, want ErrInvalid naming WithPollSpin(2ms)", err)
		}
	})
}

// TestPollZeroLinkDown: Poll(0) while the link is down is "nothing yet",
// not an error (the kernel answers the wake-up with ENETDOWN), and the
// queue receives again once the link is back up.
func TestPollZeroLinkDown(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t)
	d := openOn(t, p.A, afxdp.WithSteering(testFilter), afxdp.WithFrames(1024))
	peer := openOn(t, p.B, afxdp.WithSteering(testFilter), afxdp.WithFrames(1024))
	rx := d.RxQueue(0)
	rx.Fill(rx.NumFreeFillSlots())
	linkDo(t, p.A, netlink.LinkSetDown)
	for range 3 {
		if n, err := rx.Poll(0); n != 0 || err != nil {
			t.Fatalf("Poll(0) with the link down = %d, %v; want 0, nil", n, err)
		}
	}
	linkDo(t, p.A, netlink.LinkSetUp)
	got := 0
	for deadline := time.Now().Add(5 * time.Second); got == 0 && time.Now().Before(deadline); {
		sendTestFrames(t, peer.TxQueue(0), 4)
		if _, err := rx.Poll(0); err != nil {
			t.Fatalf("Poll(0) after the link came back: %v", err)
		}
		descs := rx.Receive(64)
		got += len(descs)
		rx.Recycle(descs)
		rx.Fill(rx.NumFreeFillSlots())
		time.Sleep(10 * time.Millisecond)
	}
	if got == 0 {
		t.Fatal("nothing received after the link came back up")
	}
}
