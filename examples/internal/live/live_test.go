package live

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afpacket"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/examples/internal/testbed"
	"github.com/packetio/packetio/internal/testenv"
)

const etherType = 0x88b5

// testFrame is a broadcast of the local experimental EtherType, a 16-bit
// counter at byte 14.
func testFrame(src net.HardwareAddr) []byte {
	b := make([]byte, 60)
	copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(b[6:], src)
	binary.BigEndian.PutUint16(b[12:], etherType)
	binary.BigEndian.PutUint16(b[14:], 100)
	return b
}

func bed(t *testing.T) *testbed.Bed {
	t.Helper()
	testenv.NeedBPF(t)
	b, err := testbed.Setup("", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return b
}

// source makes a Source on the peer of b, sending to b's interface.
func source(t *testing.T, b *testbed.Bed, flows Flows, cpus []int) *Source {
	t.Helper()
	var s *Source
	if err := b.InPeer(func() (err error) {
		s, err = New(b.Peer, testFrame(net.HardwareAddr{2, 0, 0, 0, 0, 1}), flows, cpus)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// drain receives for d on rx and returns the frames of the test EtherType
// and their counters.
func drain(rx packetio.RxQueue, d time.Duration) (int, map[uint16]bool) {
	got, flows := 0, map[uint16]bool{}
	rx.Fill(rx.NumFreeFillSlots())
	for end := time.Now().Add(d); time.Now().Before(end); {
		rx.Poll(10 * time.Millisecond)
		descs := rx.Receive(256)
		for _, desc := range descs {
			if f := rx.Region().Frame(desc); len(f) >= 16 && binary.BigEndian.Uint16(f[12:]) == etherType {
				got++
				flows[binary.BigEndian.Uint16(f[14:])] = true
			}
		}
		rx.Recycle(descs)
		rx.Fill(rx.NumFreeFillSlots())
	}
	return got, flows
}

// run runs s for d in the background.
func run(s *Source, d time.Duration, rate float64) (done <-chan error, sent *uint64) {
	ch := make(chan error, 1)
	var n uint64
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		var err error
		n, err = s.Run(ctx, rate)
		ch <- err
	}()
	return ch, &n
}

// TestFeedsANativeReceiver: an afxdp receiver (native XDP on the veth)
// takes the frames, with the flow counter running through its values.
func TestFeedsANativeReceiver(t *testing.T) {
	b := bed(t)
	d, err := b.Open(func(name string) (packetio.Device, error) {
		return afxdp.Open(name, afxdp.WithSteering(packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchEtherType(etherType)}}))
	})
	if err != nil {
		t.Fatal(err)
	}
	s := source(t, b, Flows{Offset: 14, N: 8}, []int{0})
	if s.Generators() != 1 || !strings.Contains(s.String(), "CPU [0]") {
		t.Errorf("source %s", s)
	}
	done, sent := run(s, 400*time.Millisecond, 0)
	got, flows := drain(d.RxQueue(0), 600*time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	tx, err := s.Transmitted()
	t.Logf("sent %d, the interface counted %d (%v), received %d, %d flows", *sent, tx, err, got, len(flows))
	if got == 0 || uint64(got) > *sent || s.Sent() != *sent {
		t.Fatalf("sent %d (Sent %d), received %d", *sent, s.Sent(), got)
	}
	if err != nil || tx < *sent {
		t.Fatalf("the interface counted %d of %d sent: %v", tx, *sent, err)
	}
	for f := range flows {
		if f < 100 || f >= 108 {
			t.Errorf("flow %d outside 100-107", f)
		}
	}
	if len(flows) < 2 {
		t.Errorf("%d flows", len(flows))
	}
}

// TestNeedsGROWithoutXDP: a receiver with no XDP program of its own gets
// nothing, and Run says why, until GRO is on; restoring GRO turns it off
// again.
func TestNeedsGROWithoutXDP(t *testing.T) {
	b := bed(t)
	d, err := b.Open(func(name string) (packetio.Device, error) { return afpacket.Open(name) })
	if err != nil {
		t.Fatal(err)
	}
	s := source(t, b, Flows{}, nil)
	done, _ := run(s, 200*time.Millisecond, 0)
	if err := <-done; !errors.Is(err, ErrNotTaken) {
		t.Fatalf("a veth with neither XDP nor GRO on its peer: %v, want ErrNotTaken", err)
	}
	restore, err := b.GRO(true)
	if err != nil {
		t.Fatal(err)
	}
	done, sent := run(s, 300*time.Millisecond, 0)
	got, _ := drain(d.RxQueue(0), 500*time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got == 0 {
		t.Fatalf("GRO on: sent %d, received nothing", *sent)
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if on, err := b.GROOn(); err != nil || on {
		t.Fatalf("GRO on after restore: %v, %v", on, err)
	}
}

// TestRate: a rate is a ceiling, one batch of slack.
func TestRate(t *testing.T) {
	b := bed(t)
	d, err := b.Open(func(name string) (packetio.Device, error) {
		return afxdp.Open(name, afxdp.WithSteering(packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchEtherType(etherType)}}))
	})
	if err != nil {
		t.Fatal(err)
	}
	s := source(t, b, Flows{}, nil)
	done, sent := run(s, time.Second, 20000)
	got, _ := drain(d.RxQueue(0), 1200*time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if *sent > 20000+1000 || got == 0 {
		t.Fatalf("sent %d in 1s at 20000/s, %d received", *sent, got)
	}
}

func TestClosed(t *testing.T) {
	b := bed(t)
	s := source(t, b, Flows{}, nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Run(context.Background(), 0); err == nil {
		t.Fatal("Run after Close")
	}
}

func TestNextBatch(t *testing.T) {
	for _, tc := range []struct {
		n    uint32
		d    time.Duration
		want uint32
	}{
		{1 << 18, CallTime, 1 << 18},         // on time: the same
		{1 << 18, CallTime / 2, 1 << 19},     // twice as fast: twice as many
		{1 << 18, 4 * CallTime, 1 << 16},     // a quarter of the rate
		{1 << 18, 1000 * CallTime, MinBatch}, // never below the floor
		{MaxBatch, CallTime / 100, MaxBatch}, // nor above the ceiling
		{1 << 18, 0, MaxBatch},
	} {
		if got := nextBatch(tc.n, tc.d); got != tc.want {
			t.Errorf("nextBatch(%d, %v) = %d, want %d", tc.n, tc.d, got, tc.want)
		}
	}
}
