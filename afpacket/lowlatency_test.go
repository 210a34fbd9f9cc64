//go:build linux

package afpacket

import (
	"bytes"
	"testing"
	"time"

	"github.com/packetio/packetio/internal/netns"
)

// WithLowLatency gives every receive queue a TPACKET_V2 ring; without it
// they keep TPACKET_V3.
func TestIntegrationLowLatencyRingVersion(t *testing.T) {
	pair := netns.New(t)
	def := openIn(t, pair.A, WithQueues(2), WithFrames(256))
	low := openIn(t, pair.B, WithLowLatency(), WithQueues(2), WithFrames(256))
	for i := range 2 {
		if q := def.RxQueue(i).(*RxQueue); q.ring == nil || q.ring2 != nil {
			t.Errorf("default rx %d: not a V3 ring", i)
		}
		if q := low.RxQueue(i).(*RxQueue); q.ring != nil || q.ring2 == nil {
			t.Errorf("WithLowLatency rx %d: not a V2 ring", i)
		}
	}
	if def.Capabilities() != low.Capabilities() {
		t.Errorf("capabilities differ: %+v and %+v", def.Capabilities(), low.Capabilities())
	}
}

// On a V2 ring a packet bigger than a frame is clipped by the kernel to its
// slot and dropped and counted as oversize; the packets around it arrive,
// and the kernel's PACKET_STATISTICS are read.
func TestIntegrationLowLatencyOversizeAndStats(t *testing.T) {
	pair := netns.New(t)
	a := openIn(t, pair.A, WithRxQueues(0))
	b := openIn(t, pair.B, WithLowLatency(), WithTxQueues(0), WithFrameSize(512), WithFrames(256))
	rx := b.RxQueue(0).(*RxQueue)
	frames := [][]byte{
		testFrame(t, pair.B.MAC, 1, 100),
		testFrame(t, pair.B.MAC, 2, 1400), // 1400 > 512-64
		testFrame(t, pair.B.MAC, 3, 448),  // exactly a frame's room
	}
	sendFrames(t, a.TxQueue(0), frames)
	got := receiveOurs(t, rx, 2, 3*time.Second)
	if len(got) != 2 || !bytes.Equal(got[0], frames[0]) || !bytes.Equal(got[1], frames[2]) {
		t.Fatalf("got %d frames, want the 100- and 448-byte ones", len(got))
	}
	st, err := rx.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Backend["oversize"] != 1 || st.Backend["malformed"] != 0 {
		t.Fatalf("oversize %d, malformed %d; want 1, 0", st.Backend["oversize"], st.Backend["malformed"])
	}
	if st.Backend["kernel_packets"] < 3 {
		t.Fatalf("kernel_packets %d, want at least 3", st.Backend["kernel_packets"])
	}
	if st.Packets < 2 || st.Batches == 0 {
		t.Fatalf("packets %d, batches %d", st.Packets, st.Batches)
	}
	if n := rx.ring2.released; n < 3 {
		t.Fatalf("%d slots handed back, want at least 3", n)
	}
}

// A packet that arrives while a poller sleeps wakes it (not a timed
// assertion: Poll is given far longer than either ring needs).
func TestIntegrationLowLatencyPollWakes(t *testing.T) {
	pair := netns.New(t)
	a := openIn(t, pair.A, WithRxQueues(0))
	b := openIn(t, pair.B, WithLowLatency(), WithTxQueues(0))
	rx := b.RxQueue(0)
	done := make(chan error, 1)
	go func() {
		for {
			n, err := rx.Poll(10 * time.Second)
			if err != nil || n == 0 {
				done <- err
				return
			}
			for _, d := range rx.Receive(64) {
				if ours(rx.Region().Frame(d)) {
					done <- nil
					return
				}
			}
		}
	}()
	time.Sleep(20 * time.Millisecond)
	sendFrames(t, a.TxQueue(0), [][]byte{testFrame(t, pair.B.MAC, 7, 64)})
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the poller never saw the frame")
	}
}
