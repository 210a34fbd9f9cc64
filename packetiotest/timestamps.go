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

// txStampFrames is how many frames RunTxTimestamps sends.
const txStampFrames = 64

// RunTxTimestamps checks TimestampTransmitter on transmit queue 0 of a
// fresh device from open: a device that does not stamp departures says so
// (Capabilities().TxTimestamps false) and returns no stamps; a device that
// does returns, for 64 frames sent, one stamp per frame, numbered by Seq 0
// to 63, never zero, rising with Seq, and reading them with room in out
// allocates nothing. The frames are 60-byte broadcasts of EtherType
// 0x88b5, so open a device on a link made for the test.
func RunTxTimestamps(t *testing.T, open OpenFunc) {
	d := device(t, open)
	tx := d.TxQueue(0)
	tt, ok := tx.(packetio.TimestampTransmitter)
	build := func(i int, f []byte) int {
		if len(f) < 60 {
			return 0
		}
		clear(f[:60])
		for j := range 6 {
			f[j] = 0xff
		}
		f[6] = 0x02
		f[12], f[13] = EtherType>>8, EtherType&0xff
		f[14] = byte(i)
		return 60
	}
	send := func(n int) int {
		sent := 0
		for tries := 0; sent < n && tries < 1000; tries++ {
			tx.Complete(1 << 20)
			k, err := tx.SendFunc(n-sent, build)
			if err != nil {
				t.Fatalf("SendFunc: %v", err)
			}
			sent += k
			if k == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		settle(tx)
		return sent
	}
	if !d.Capabilities().TxTimestamps {
		if ok {
			send(8)
			if got := tt.TxTimestamps(nil); len(got) != 0 {
				t.Fatalf("TxTimestamps is false but TxTimestamps returned %d stamps", len(got))
			}
		}
		t.Skipf("%s does not stamp departures (TxTimestamps false), and says so", d.Capabilities().Backend)
	}
	if !ok {
		t.Fatal("TxTimestamps is true but the transmit queue is not a TimestampTransmitter")
	}
	sent := send(txStampFrames)
	if sent != txStampFrames {
		testenv.CannotRun(t, "sent %d of %d frames", sent, txStampFrames)
		return
	}
	out := make([]packetio.TxStamp, 0, 2*txStampFrames)
	deadline := time.Now().Add(3 * time.Second)
	for len(out) < sent && time.Now().Before(deadline) {
		n := len(out)
		out = tt.TxTimestamps(out)
		if len(out) == n {
			time.Sleep(time.Millisecond)
		}
	}
	if len(out) != sent {
		t.Fatalf("%d stamps for %d frames", len(out), sent)
	}
	byseq := make([]uint64, sent)
	for _, s := range out {
		if s.Seq >= uint64(sent) || byseq[s.Seq] != 0 {
			t.Fatalf("stamp with Seq %d: want each of 0 to %d once", s.Seq, sent-1)
		}
		if s.Time == 0 {
			t.Fatalf("frame %d stamped 0", s.Seq)
		}
		byseq[s.Seq] = s.Time
	}
	for i := 1; i < sent; i++ {
		if byseq[i] < byseq[i-1] {
			t.Errorf("frame %d stamped %d, before frame %d (%d)", i, byseq[i], i-1, byseq[i-1])
		}
	}
	// Reading with room in out allocates nothing, stamps or none.
	send(8)
	if n := testing.AllocsPerRun(20, func() { out = tt.TxTimestamps(out[:0]) }); n != 0 {
		t.Errorf("TxTimestamps allocates %.1f times a call", n)
	}
}
