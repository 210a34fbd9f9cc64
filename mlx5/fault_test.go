package mlx5

import (
	"errors"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/mlx5/internal/mockdev"
)

// On the model card: closing one receive queue (not the device) from
// another goroutine wakes a Poll blocked on it at once with ErrClosed, and
// leaves the other queues working.
func TestModelCloseRxQueueWakesPoll(t *testing.T) {
	for _, timeout := range []time.Duration{-1, 10 * time.Second} {
		d, err := mockdev.Open(mockdev.Config{RxQueues: 2})
		if err != nil {
			t.Fatal(err)
		}
		rx := d.RxQueue(0)
		rx.Fill(rx.NumFreeFillSlots())
		woke := make(chan error, 1)
		go func() {
			_, err := rx.Poll(timeout)
			woke <- err
		}()
		time.Sleep(50 * time.Millisecond)
		start := time.Now()
		if err := rx.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-woke:
			var oe *packetio.OpError
			if !errors.Is(err, packetio.ErrClosed) || !errors.As(err, &oe) || oe.Op != "poll" || oe.Queue != 0 {
				t.Errorf("timeout %v: Poll woken by the queue's Close: %v, want a poll OpError matching ErrClosed", timeout, err)
			}
			if took := time.Since(start); took > 100*time.Millisecond {
				t.Errorf("timeout %v: Poll woke %v after Close", timeout, took)
			}
		case <-time.After(time.Second):
			t.Fatalf("timeout %v: closing the receive queue did not wake Poll within 1s", timeout)
		}
		if err := d.RxQueue(1).Err(); err != nil {
			t.Errorf("closing receive queue 0 broke queue 1: %v", err)
		}
		if err := d.TxQueue(0).Err(); err != nil {
			t.Errorf("closing receive queue 0 broke transmit queue 0: %v", err)
		}
		d.Close()
	}
}

// On the model card: a frame longer than the port carries (MTU + 14) is
// refused by Transmit up front and counted, the good frames around it reach
// the wire, and SendFunc abandons a batch that builds one.
func TestModelTooLongFrame(t *testing.T) {
	const mtu = 1000
	a, b, err := mockdev.Pair(mockdev.Config{MTU: mtu}, mockdev.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	if got := a.Capabilities().MaxTxLen; got != mtu+14 {
		t.Fatalf("MaxTxLen %d, want %d", got, mtu+14)
	}
	if got := b.Capabilities().MaxTxLen; got != 1500+14 {
		t.Fatalf("default MaxTxLen %d, want %d", got, 1500+14)
	}
	rx := b.RxQueue(0)
	rx.Fill(rx.NumFreeFillSlots())
	tx := a.TxQueue(0)
	descs := append([]packetio.Desc(nil), tx.Alloc(3)...)
	for i, size := range []int{100, mtu + 15, 200} {
		f := tx.Region().Writable(descs[i])
		for j := range f[:size] {
			f[j] = byte(i)
		}
		descs[i].Len = uint32(size)
	}
	if n := tx.Transmit(descs); n != 1 {
		t.Fatalf("Transmit([good, %d bytes, good]) = %d, want 1", mtu+15, n)
	}
	if st, _ := tx.Stats(); st.Refused != 1 || st.Packets != 1 {
		t.Errorf("after the refusal: Refused %d, Packets %d; want 1, 1", st.Refused, st.Packets)
	}
	tx.Free(descs[1:2])
	if n := tx.Transmit(descs[2:]); n != 1 {
		t.Fatalf("Transmit of the good frame behind = %d, want 1", n)
	}
	got := 0
	for try := 0; try < 100 && got < 2; try++ {
		tx.Complete(1 << 10)
		rx.Poll(time.Millisecond)
		d := rx.Receive(16)
		got += len(d)
		rx.Recycle(d)
	}
	if got != 2 {
		t.Errorf("the peer received %d frames, want the 2 good ones", got)
	}
	free := tx.NumFreeFrames()
	n, err := tx.SendFunc(3, func(i int, f []byte) int {
		if i == 1 {
			return mtu + 15
		}
		return 100
	})
	if n != 0 || !errors.Is(err, packetio.ErrBadLength) {
		t.Errorf("SendFunc building a %d-byte frame = %d, %v; want 0, ErrBadLength", mtu+15, n, err)
	}
	if got := tx.NumFreeFrames(); got != free {
		t.Errorf("the abandoned batch left %d frames in the pool, want %d", got, free)
	}
	if st, _ := tx.Stats(); st.Refused != 2 {
		t.Errorf("Refused %d after SendFunc, want 2", st.Refused)
	}
	if err := tx.Err(); err != nil {
		t.Errorf("Err after refused frames: %v", err)
	}
	if v := append(a.Violations(), b.Violations()...); len(v) > 0 {
		t.Errorf("the model saw violations: %q", v)
	}
}
