package pipe_test

import (
	"errors"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/packetiotest"
	"github.com/packetio/packetio/pipe"
)

// conformPair opens pipes for the suite: the device under test is end a, and
// the peer is the b of the same pipe.
func conformPair(opts ...pipe.Option) (open, peer packetiotest.OpenFunc) {
	var b packetio.Device
	open = func(t *testing.T) packetiotest.Device {
		a, bb, err := pipe.New(opts...)
		if err != nil {
			t.Fatal(err)
		}
		b = bb
		t.Cleanup(func() { bb.Close() })
		return a
	}
	peer = func(t *testing.T) packetiotest.Device { return b }
	return open, peer
}

func TestConform(t *testing.T) {
	open, peer := conformPair()
	packetiotest.Run(t, open, packetiotest.WithPeer(peer))
}

func TestConformFourQueuesSmallRings(t *testing.T) {
	open, peer := conformPair(pipe.WithQueues(4), pipe.WithRingSize(64), pipe.WithFrames(1024))
	packetiotest.Run(t, open, packetiotest.WithPeer(peer))
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, o := range []pipe.Option{
		pipe.WithQueues(0), pipe.WithQueues(65), pipe.WithFrameSize(3000), pipe.WithFrameSize(64),
		pipe.WithRingSize(100), pipe.WithFrames(1), pipe.WithFrames(1 << 21),
	} {
		_, _, err := pipe.New(o)
		var oe *packetio.OpError
		if !errors.As(err, &oe) || oe.Op != "open" || oe.Backend != "pipe" || !errors.Is(err, packetio.ErrInvalid) {
			t.Errorf("New with a bad option: %v, want an open OpError matching ErrInvalid", err)
		}
	}
}

func TestDropHookAndNoBufferAreCounted(t *testing.T) {
	drops := 0
	a, b, err := pipe.New(pipe.WithDrop(func(f []byte) bool {
		if f[0] == 0xdd {
			drops++
			return true
		}
		return false
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	tx, rx := a.TxQueue(0), b.RxQueue(0)
	send := func(first byte, n int) {
		t.Helper()
		if got, err := tx.SendFunc(n, func(i int, f []byte) int { f[0] = first; return 60 }); got != n || err != nil {
			t.Fatalf("SendFunc = %d, %v", got, err)
		}
	}
	send(0x01, 4) // nothing posted: the far end drops them
	rx.Fill(8)
	send(0xdd, 3) // the hook drops them
	send(0x02, 2)
	if n, err := rx.Poll(time.Second); n != 2 || err != nil {
		t.Fatalf("Poll = %d, %v", n, err)
	}
	got := rx.Receive(16)
	if len(got) != 2 || rx.Region().Frame(got[0])[0] != 0x02 {
		t.Fatalf("received %+v", got)
	}
	rx.Recycle(got)
	s, _ := rx.Stats()
	if s.Dropped != 4 || s.Backend["wire_dropped"] != 3 || drops != 3 {
		t.Fatalf("dropped %d, wire_dropped %d, hook %d", s.Dropped, s.Backend["wire_dropped"], drops)
	}
}

func TestConformReorderingWire(t *testing.T) {
	swap := pipe.WithWire(func(f [][]byte, order []int) []int {
		for i := range f {
			order = append(order, min(i^1, len(f)-1))
		}
		return order
	})
	open, peer := conformPair(swap)
	packetiotest.Run(t, open, packetiotest.WithPeer(peer))
}

func TestWireReordersLosesAndDuplicates(t *testing.T) {
	// Frame i of a batch arrives as: 3, 1, 1, 0 and a bogus index; 2 is lost.
	a, b, err := pipe.New(pipe.WithWire(func(f [][]byte, order []int) []int {
		return append(order, 3, 1, 1, 0, 99)
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	rx := b.RxQueue(0)
	rx.Fill(16)
	if n, err := a.TxQueue(0).SendFunc(4, func(i int, f []byte) int { f[0] = byte(i); return 60 }); n != 4 || err != nil {
		t.Fatalf("SendFunc = %d, %v", n, err)
	}
	rx.Poll(time.Second)
	var got []byte
	descs := rx.Receive(16)
	for _, d := range descs {
		got = append(got, rx.Region().Frame(d)[0])
	}
	rx.Recycle(descs)
	if string(got) != string([]byte{3, 1, 1, 0}) {
		t.Fatalf("arrived in order %v, want [3 1 1 0]", got)
	}
	// Frame 2 was never named and index 99 names nothing: two losses.
	if s, _ := rx.Stats(); s.Backend["wire_dropped"] != 2 {
		t.Fatalf("wire_dropped %d, want 2", s.Backend["wire_dropped"])
	}
}

// A program written against packetio, tested with a pipe: no root, no NIC.
func Example() {
	a, b, err := pipe.New()
	if err != nil {
		panic(err)
	}
	defer a.Close()
	defer b.Close()

	rx := b.RxQueue(0)
	rx.Fill(rx.NumFreeFillSlots())
	a.TxQueue(0).SendFunc(1, func(i int, frame []byte) int { return copy(frame, "hello, pipe") })

	rx.Poll(time.Second)
	descs := rx.Receive(8)
	for _, d := range descs {
		println(string(rx.Region().Frame(d)))
	}
	rx.Recycle(descs)
}
