package mockdev

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/mlx5/internal/ring"
	"github.com/packetio/packetio/packetiotest"
)

func checkViolations(t *testing.T, d *Device) {
	t.Cleanup(func() {
		if v := d.Violations(); len(v) > 0 {
			t.Errorf("the model card saw violations: %q", v)
		}
	})
}

func opener(cfg Config) packetiotest.OpenFunc {
	return func(t *testing.T) packetiotest.Device {
		d, err := Open(cfg)
		if err != nil {
			t.Fatalf("open the model device: %v", err)
		}
		checkViolations(t, d)
		return d
	}
}

// pairOpeners returns an opener for a device and one for its peer: each call
// of the first makes a fresh pair and keeps the far end for the second.
func pairOpeners(cfg Config) (open, peer packetiotest.OpenFunc) {
	var far *Device
	open = func(t *testing.T) packetiotest.Device {
		a, b, err := Pair(cfg, Config{})
		if err != nil {
			t.Fatalf("open the model pair: %v", err)
		}
		checkViolations(t, a)
		checkViolations(t, b)
		far = b
		return a
	}
	peer = func(t *testing.T) packetiotest.Device {
		p := far
		far = nil
		if p == nil {
			t.Fatal("peer opened before its device")
		}
		return p
	}
	return open, peer
}

func TestConform(t *testing.T) {
	for name, cfg := range map[string]Config{
		"send":                 {},
		"send, small rings":    {TxDepth: 16, RxDepth: 16},
		"multi-packet pointer": {Mode: ring.ModeMPWPointer},
		"multi-packet copied":  {Mode: ring.ModeMPWCopied, Rings: 4},
		"two queues each way":  {TxQueues: 2, RxQueues: 2},
		"no inline header":     {Inline: -1},
	} {
		if cfg.Inline == -1 {
			cfg.Inline = 0
			cfg.Mode = ring.ModeSend
		}
		t.Run(name, func(t *testing.T) {
			open, peer := pairOpeners(cfg)
			packetiotest.Run(t, open, packetiotest.WithPeer(peer))
		})
	}
}

func TestConformTimestamps(t *testing.T) {
	send := func(t *testing.T, d packetiotest.Device) int {
		n, err := d.TxQueue(0).SendFunc(16, func(i int, f []byte) int {
			for j := range f[:64] {
				f[j] = byte(i + j)
			}
			return 64
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	t.Run("with clock", func(t *testing.T) { packetiotest.RunTimestamps(t, opener(Config{Clock: true}), send) })
	t.Run("without clock", func(t *testing.T) { packetiotest.RunTimestamps(t, opener(Config{}), send) })
}

// A card failure reaches Err and SendFunc as ErrQueueFailed with the
// syndrome, and the flushed frames still come home.
func TestCardFailureSurfaces(t *testing.T) {
	d, err := Open(Config{TxFailAfter: 10, NoRx: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tx := d.TxQueue(0)
	start := tx.NumFreeFrames()
	var sendErr error
	for i := 0; i < 10 && sendErr == nil; i++ {
		_, sendErr = tx.SendFunc(4, func(int, []byte) int { return 64 })
	}
	if !errors.Is(sendErr, packetio.ErrQueueFailed) || !errors.Is(tx.Err(), packetio.ErrQueueFailed) {
		t.Fatalf("SendFunc %v, Err %v", sendErr, tx.Err())
	}
	d.TxNICs[0][0].Poll() // the flush
	tx.Complete(1 << 20)
	if tx.NumInFlight() != 0 || tx.NumFreeFrames() != start {
		t.Fatalf("after the flush: %d in flight, %d of %d free", tx.NumInFlight(), tx.NumFreeFrames(), start)
	}
	s, _ := tx.Stats()
	if s.Backend["last_syndrome"] != 4 || s.Errors == 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestPollTimesOut(t *testing.T) {
	d, err := Open(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rx := d.RxQueue(0)
	rx.Fill(rx.NumFreeFillSlots())
	start := time.Now()
	if n, err := rx.Poll(20 * time.Millisecond); n != 0 || err != nil {
		t.Fatalf("Poll on a quiet queue: %d, %v", n, err)
	}
	if time.Since(start) < 20*time.Millisecond {
		t.Fatal("Poll returned before its timeout")
	}
}

func TestMultiQueueSpreadsAndForwards(t *testing.T) {
	d, err := Open(Config{TxQueues: 2, RxQueues: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for i := 0; i < 2; i++ {
		rx := d.RxQueue(i)
		rx.Fill(rx.NumFreeFillSlots())
	}
	for q := 0; q < 2; q++ {
		d.TxQueue(q).SendFunc(64, func(i int, f []byte) int {
			clear(f[:64])
			f[14], f[15] = byte(q), byte(i)
			return 64
		})
	}
	got := 0
	for i := 0; i < 2; i++ {
		n := len(d.RxQueue(i).Receive(256))
		if n == 0 {
			t.Errorf("receive queue %d got nothing: no spread", i)
		}
		got += n
	}
	if got != 128 {
		t.Fatalf("received %d of 128", got)
	}
}

// Reclaim appends to what the caller already holds and bounds its work by
// what it adds, not by the caller's slice.
func TestReclaimAppends(t *testing.T) {
	d, err := Open(Config{NoRx: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tx := d.TxQueue(0)
	descs := append([]packetio.Desc(nil), tx.Alloc(8)...)
	for i := range descs {
		descs[i].Len = 64
	}
	if n := tx.Transmit(descs); n != 8 {
		t.Fatalf("Transmit took %d", n)
	}
	held := make([]packetio.Desc, 20, 64) // the caller's own 20
	back := tx.Reclaim(4, held)
	if len(back) != 28 {
		t.Fatalf("Reclaim(4) onto 20 held returned %d, want 28 (one completion for the batch)", len(back))
	}
	for i, b := range back[20:] {
		if b != descs[i] {
			t.Fatalf("reclaimed %+v, sent %+v", b, descs[i])
		}
	}
	tx.Free(back[20:])
	if tx.NumInFlight() != 0 {
		t.Fatal("frames still in flight")
	}
}

func TestReceiveChecksumAndTimestamps(t *testing.T) {
	d, err := Open(Config{Clock: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rx := d.RxQueue(0).(packetio.TimestampReceiver)
	rx.Fill(rx.NumFreeFillSlots())
	d.TxQueue(0).SendFunc(3, func(i int, f []byte) int { clear(f[:60]); return 60 })
	descs, ts := rx.ReceiveTimestamps(8)
	if len(descs) != 3 || len(ts) != 3 || ts[0] == 0 || ts[1] <= ts[0] {
		t.Fatalf("%d descs, stamps %v", len(descs), ts)
	}
	if descs[0].Options != packetio.OptChecksumOK|packetio.OptL3ChecksumOK || descs[0].Len != 60 || descs[0].Addr%2048 != Headroom {
		t.Fatalf("%+v", descs[0])
	}
	rx.Recycle(descs)
}

// TestCloseWaitsForCalls: Close from another goroutine while a call is
// inside a queue (a SendFunc whose build function is still writing, a
// Receive) does not release the hardware under it: Release, which destroys
// the rings and unmaps the region on a card, runs only after the call has
// returned; the call itself ends normally or with ErrClosed. On a card a
// ring written after Release is a write into unmapped or recycled device
// memory.
func TestCloseWaitsForCalls(t *testing.T) {
	d, err := Open(Config{})
	if err != nil {
		t.Fatal(err)
	}
	checkViolations(t, d)
	var inCall, releasedInCall atomic.Bool
	release := d.Release
	d.Release = func() error {
		if inCall.Load() {
			releasedInCall.Store(true)
		}
		if release != nil {
			return release()
		}
		return nil
	}
	building, resume := make(chan struct{}), make(chan struct{})
	sent := make(chan error, 1)
	go func() {
		n, err := d.TxQueue(0).SendFunc(1, func(_ int, f []byte) int {
			inCall.Store(true)
			close(building)
			<-resume
			inCall.Store(false) // still inside SendFunc: Transmit follows
			return 64
		})
		if err == nil && n != 1 {
			err = fmt.Errorf("sent %d of 1 with no error", n)
		}
		sent <- err
	}()
	<-building
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while SendFunc was building", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(resume)
	// Close had begun: the frame is sent, or the call ends with ErrClosed.
	if err := <-sent; err != nil && !errors.Is(err, packetio.ErrClosed) {
		t.Fatalf("SendFunc under Close: %v, want nil or ErrClosed", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if releasedInCall.Load() {
		t.Fatal("Release ran while SendFunc was inside the queue")
	}
	if _, err := d.TxQueue(0).SendFunc(1, func(_ int, f []byte) int { return 64 }); !errors.Is(err, packetio.ErrClosed) {
		t.Fatalf("SendFunc after Close: %v, want ErrClosed", err)
	}
}
