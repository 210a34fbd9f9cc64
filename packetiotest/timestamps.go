package packetiotest

import (
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/testenv"
)

// RunTimestamps checks TimestampReceiver: a device that does not stamp
// returns nothing rather than invented times, and a device that does returns
// one non-zero stamp per packet. send puts frames on the link toward the
// device's receive queue 0 and returns how many it sent.
func RunTimestamps(t *testing.T, open OpenFunc, send func(t *testing.T, d Device) int) {
	d := device(t, open)
	if d.NumRxQueues() == 0 {
		testenv.CannotRun(t, "%s: no receive queue to stamp", d.Capabilities().Backend)
		return
	}
	rx := d.RxQueue(0)
	tr, ok := rx.(packetio.TimestampReceiver)
	if !d.Capabilities().RxTimestamps {
		if ok {
			if descs, ts := tr.ReceiveTimestamps(8); descs != nil || ts != nil {
				t.Fatalf("RxTimestamps is false but ReceiveTimestamps returned %d descs, %d stamps", len(descs), len(ts))
			}
		}
		t.Skipf("%s does not stamp arrivals (RxTimestamps false), and says so", d.Capabilities().Backend)
	}
	if !ok {
		t.Fatal("RxTimestamps is true but the receive queue is not a TimestampReceiver")
	}
	rx.Fill(rx.NumFreeFillSlots())
	sent := send(t, d)
	if sent == 0 {
		testenv.CannotRun(t, "the sender sent nothing")
		return
	}
	var stamps []uint64
	deadline := time.Now().Add(3 * time.Second)
	for len(stamps) < sent && time.Now().Before(deadline) {
		if _, err := rx.Poll(100 * time.Millisecond); err != nil {
			t.Fatalf("Poll: %v", err)
		}
		descs, ts := tr.ReceiveTimestamps(64)
		if len(ts) != len(descs) {
			t.Fatalf("ReceiveTimestamps returned %d descs and %d stamps", len(descs), len(ts))
		}
		for i, s := range ts {
			if s == 0 {
				t.Fatalf("packet %d stamped 0", len(stamps)+i)
			}
		}
		stamps = append(stamps, ts...)
		rx.Recycle(descs)
		rx.Fill(rx.NumFreeFillSlots())
	}
	if len(stamps) == 0 {
		testenv.CannotRun(t, "%d frames sent and none arrived in 3s", sent)
		return
	}
	inversions := 0
	for i := 1; i < len(stamps); i++ {
		if stamps[i] < stamps[i-1] {
			inversions++
		}
	}
	if len(stamps) > 4 && inversions > len(stamps)/2 {
		t.Errorf("%d of %d stamps go backwards", inversions, len(stamps))
	}
	// A plain Receive still works after timestamped ones.
	rx.Fill(rx.NumFreeFillSlots())
	if got := rx.Receive(8); got == nil && rx.Err() != nil {
		t.Fatalf("plain Receive after ReceiveTimestamps failed: %v", rx.Err())
	} else {
		rx.Recycle(got)
	}
}
