package mockdev

import (
	"errors"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/pool"
	"github.com/packetio/packetio/mlx5/internal/ring"
	"github.com/packetio/packetio/packetiotest"
)

// TestOwnership drives a million random frame moves, misuses among them,
// through the mlx5 queue code on the model card (a tenth under -race).
func TestOwnership(t *testing.T) {
	for name, cfg := range map[string]Config{
		"send":                 {TxDepth: 32, RxDepth: 32},
		"multi-packet pointer": {TxDepth: 32, RxDepth: 32, Mode: ring.ModeMPWPointer},
	} {
		t.Run(name, func(t *testing.T) {
			open, peer := pairOpeners(cfg)
			packetiotest.RunOwnership(t, open, 1_000_000, pool.Checked(), packetiotest.WithPeer(peer))
		})
	}
}

// TestRecycleOfAFilledFrameIsRefused: a frame received, recycled and posted
// to the card again by Fill belongs to the card. Recycling it once more
// must be refused (the pool does not grow), counted and reported, or the
// card and a later Fill would both put a packet into it.
func TestRecycleOfAFilledFrameIsRefused(t *testing.T) {
	if !pool.Checked() {
		t.Skip("needs the packetio_checked build")
	}
	a, b, err := Pair(Config{RxDepth: 16}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	rx := a.RxQueue(0)
	rx.Fill(rx.NumFreeFillSlots())
	frame := func(_ int, f []byte) int { return copy(f, make([]byte, 60)) }
	if n, err := b.TxQueue(0).SendFunc(1, frame); n != 1 || err != nil {
		t.Fatalf("SendFunc = %d, %v", n, err)
	}
	got := append([]packetio.Desc(nil), rx.Receive(1)...)
	if len(got) != 1 {
		t.Fatalf("received %d packets", len(got))
	}
	rx.Recycle(got)
	if n := rx.Fill(1); n != 1 {
		t.Fatalf("Fill = %d", n) // posts the frame just recycled (the pool is LIFO)
	}
	free := rx.NumFreeFrames()
	rx.Recycle(got)
	if rx.NumFreeFrames() != free {
		t.Fatalf("Recycle of frame %#x, posted to the card, was taken: two packets would land in it", got[0].Addr)
	}
	s, _ := rx.Stats()
	if s.Backend["pool_rejected"] != 1 {
		t.Errorf("pool_rejected = %d, want 1", s.Backend["pool_rejected"])
	}
	if err := rx.Err(); !errors.Is(err, packetio.ErrNotOwned) {
		t.Errorf("Err() = %v, want ErrNotOwned", err)
	}
	// The queue keeps working.
	b.TxQueue(0).SendFunc(1, frame)
	if len(rx.Receive(1)) != 1 {
		t.Errorf("the queue stopped receiving after a misuse")
	}
}
