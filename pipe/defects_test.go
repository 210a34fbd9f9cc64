package pipe_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/pool"
	"github.com/packetio/packetio/pipe"
)

func TestNilOptionIsInvalid(t *testing.T) {
	_, _, err := pipe.New(pipe.WithQueues(2), nil)
	if !errors.Is(err, packetio.ErrInvalid) || !strings.Contains(err.Error(), "option 1 is nil") {
		t.Fatalf("New(nil option) = %v, want ErrInvalid naming option 1", err)
	}
}

func TestEveryOptionIsNamedWhenInvalid(t *testing.T) {
	for _, tc := range []struct {
		opt  pipe.Option
		name string
	}{
		{pipe.WithQueues(0), "WithQueues"},
		{pipe.WithQueues(65), "WithQueues"},
		{pipe.WithFrameSize(3000), "WithFrameSize"},
		{pipe.WithFrameSize(64), "WithFrameSize"},
		{pipe.WithRingSize(100), "WithRingSize"},
		{pipe.WithRingSize(0), "WithRingSize"},
		{pipe.WithFrames(1), "WithFrames"},
		{pipe.WithFrames(-5), "WithFrames"},
		{pipe.WithFrames(1 << 21), "WithFrames"},
		{pipe.WithDrop(nil), "WithDrop"},
		{pipe.WithWire(nil), "WithWire"},
	} {
		_, _, err := pipe.New(tc.opt)
		if !errors.Is(err, packetio.ErrInvalid) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: %v, want ErrInvalid naming it", tc.name, err)
		}
	}
}

func TestClosingATxQueueClosesOnlyIt(t *testing.T) {
	a, b, err := pipe.New(pipe.WithQueues(2))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	if err := a.TxQueue(0).Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.TxQueue(0).Err(); !errors.Is(err, packetio.ErrClosed) {
		t.Fatalf("closed queue Err = %v", err)
	}
	rx := b.RxQueue(1)
	rx.Fill(8)
	if n, err := a.TxQueue(1).SendFunc(2, func(i int, f []byte) int { return 60 }); n != 2 || err != nil {
		t.Fatalf("the other queue: SendFunc = %d, %v", n, err)
	}
	if err := a.RxQueue(0).Err(); err != nil {
		t.Fatalf("a receive queue of the device: Err = %v", err)
	}
	if n, _ := rx.Poll(time.Second); n != 2 {
		t.Fatalf("peer received %d", n)
	}
	a.Close()
	if err := a.TxQueue(1).Err(); !errors.Is(err, packetio.ErrClosed) {
		t.Fatalf("after the device's Close: Err = %v", err)
	}
}

func TestRxQueueCloseWakesPoll(t *testing.T) {
	a, b, err := pipe.New()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	rx := a.RxQueue(0)
	done := make(chan error, 1)
	go func() { _, err := rx.Poll(-1); done <- err }()
	time.Sleep(10 * time.Millisecond)
	start := time.Now()
	rx.Close()
	select {
	case err := <-done:
		if !errors.Is(err, packetio.ErrClosed) || time.Since(start) > 100*time.Millisecond {
			t.Fatalf("Poll returned %v after %v", err, time.Since(start))
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close of the queue did not wake Poll")
	}
	if err := a.TxQueue(0).Err(); err != nil {
		t.Fatalf("the transmit queue: %v", err)
	}
}

func TestNilDeviceDoesNotPanic(t *testing.T) {
	var d *pipe.Device
	if err := d.Close(); !errors.Is(err, packetio.ErrClosed) {
		t.Errorf("Close = %v", err)
	}
	if d.NumTxQueues() != 0 || d.NumRxQueues() != 0 || d.TxQueue(0) != nil || d.RxQueue(0) != nil {
		t.Error("a nil device has queues")
	}
	if c := d.Capabilities(); c.Backend != "pipe" || c.MaxFrameSize != 0 {
		t.Errorf("Capabilities = %+v", c)
	}
	_ = d.String()
}

func TestMaxTxLen(t *testing.T) {
	a, b, err := pipe.New(pipe.WithFrameSize(4096))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	if got := a.Capabilities().MaxTxLen; got != 4096 {
		t.Fatalf("MaxTxLen %d, want 4096", got)
	}
}

func TestRegionSliceOutlivesClose(t *testing.T) {
	a, b, err := pipe.New()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mem := a.TxQueue(0).Region().Bytes()
	a.Close()
	mem[0], mem[len(mem)-1] = 1, 2 // Go memory: no fault after Close
}

func TestZeroDescIsRefused(t *testing.T) {
	a, b, err := pipe.New()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	tx, rx := a.TxQueue(0), a.RxQueue(0)
	if n := tx.Transmit([]packetio.Desc{{}}); n != 0 {
		t.Fatalf("Transmit took a zero Desc")
	}
	free := rx.NumFreeFrames()
	rx.Fill(4)
	rx.Recycle([]packetio.Desc{{}})
	if rx.NumFreeFrames() != free-4 {
		t.Fatalf("Recycle took a zero Desc")
	}
	ts, _ := tx.Stats()
	rs, _ := rx.Stats()
	if ts.Refused != 1 || rs.Backend["pool_rejected"] != 1 {
		t.Fatalf("refused %d, pool_rejected %d", ts.Refused, rs.Backend["pool_rejected"])
	}
	for _, err := range []error{tx.Err(), rx.Err()} {
		if !errors.Is(err, packetio.ErrNotOwned) || !strings.Contains(err.Error(), "zero descriptor") {
			t.Fatalf("Err = %v", err)
		}
	}
}

func TestRecycleOfAFilledFrameIsRefused(t *testing.T) {
	if !pool.Checked() {
		t.Skip("ownership is tracked only with -tags packetio_checked")
	}
	a, b, err := pipe.New()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	rx := b.RxQueue(0)
	rx.Fill(1)
	a.TxQueue(0).SendFunc(1, func(int, []byte) int { return 60 })
	got := append([]packetio.Desc(nil), rx.Receive(1)...)
	rx.Recycle(got)
	rx.Fill(1) // the same frame (the pool is LIFO) goes back to the NIC
	rx.Recycle(got)
	err = rx.Err()
	want := "recycle frame " // ...: the NIC holds it (posted to the fill ring)
	if !errors.Is(err, packetio.ErrNotOwned) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "posted to the fill ring") {
		t.Fatalf("Err = %v", err)
	}
	// The frame stays posted: the next packet lands in it, once.
	a.TxQueue(0).SendFunc(1, func(int, []byte) int { return 60 })
	if n := len(rx.Receive(4)); n != 1 {
		t.Fatalf("received %d", n)
	}
}
