package queue

import (
	"errors"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/pool"
)

// TestMisusedFramesAreRefused hands a queue a frame the caller does not
// hold: it must be refused (the pool does not grow, the driver gets
// nothing), counted, and reported by Err as ErrNotOwned while the queue
// keeps working. A zero Desc is refused in every build, the rest need
// packetio_checked.
func TestMisusedFramesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		checked bool
		do      func(t *testing.T, g *rig, rx *Rx, tx *Tx)
	}{
		{"recycle a filled frame", true, func(t *testing.T, g *rig, rx *Rx, _ *Tx) {
			g.pmd.incoming = [][]byte{make([]byte, 60)}
			rx.Fill(rx.NumFreeFillSlots())
			got := append([]packetio.Desc(nil), rx.Receive(1)...)
			if len(got) != 1 {
				t.Fatalf("received %d", len(got))
			}
			rx.Recycle(got)
			if rx.Fill(1) != 1 { // posts the frame just recycled (the pool is LIFO)
				t.Fatal("Fill")
			}
			free := rx.NumFreeFrames()
			rx.Recycle(got)
			if rx.NumFreeFrames() != free {
				t.Fatalf("Recycle of frame %#x, posted to the driver, was taken: two packets would land in it", got[0].Addr)
			}
			wantRx(t, rx)
		}},
		{"recycle twice", true, func(t *testing.T, g *rig, rx *Rx, _ *Tx) {
			g.pmd.incoming = [][]byte{make([]byte, 60)}
			rx.Fill(rx.NumFreeFillSlots())
			got := append([]packetio.Desc(nil), rx.Receive(1)...)
			rx.Recycle(got)
			free := rx.NumFreeFrames()
			rx.Recycle(got)
			if rx.NumFreeFrames() != free {
				t.Fatal("second Recycle was taken")
			}
			wantRx(t, rx)
		}},
		{"free in flight", true, func(t *testing.T, _ *rig, _ *Rx, tx *Tx) {
			d := build(t, tx, 1)
			sent := []packetio.Desc{d[0]}
			if n, err := tx.Transmit(sent); n != 1 {
				t.Fatalf("Transmit = %d, %v", n, err)
			}
			free := tx.NumFreeFrames()
			tx.Free(sent)
			if tx.NumFreeFrames() != free {
				t.Fatal("Free of a frame in flight was taken")
			}
			wantTx(t, tx)
		}},
		{"transmit twice", true, func(t *testing.T, _ *rig, _ *Rx, tx *Tx) {
			d := build(t, tx, 1)
			n, err := tx.Transmit([]packetio.Desc{d[0], d[0]})
			if n != 1 || !errors.Is(err, packetio.ErrNotOwned) {
				t.Fatalf("Transmit of one frame twice = %d, %v; want 1 and ErrNotOwned", n, err)
			}
			wantTx(t, tx)
		}},
		{"transmit zero", false, func(t *testing.T, _ *rig, _ *Rx, tx *Tx) {
			if n, err := tx.Transmit([]packetio.Desc{{}}); n != 0 || !errors.Is(err, packetio.ErrNotOwned) {
				t.Fatalf("Transmit of a zero Desc = %d, %v", n, err)
			}
			wantTx(t, tx)
		}},
		{"free zero", false, func(t *testing.T, _ *rig, _ *Rx, tx *Tx) {
			free := tx.NumFreeFrames()
			tx.Free([]packetio.Desc{{}})
			if tx.NumFreeFrames() != free {
				t.Fatal("Free took a zero Desc")
			}
			wantTx(t, tx)
		}},
		{"recycle zero", false, func(t *testing.T, _ *rig, rx *Rx, _ *Tx) {
			rx.Fill(4)
			free := rx.NumFreeFrames()
			rx.Recycle([]packetio.Desc{{}})
			if rx.NumFreeFrames() != free {
				t.Fatal("Recycle took a zero Desc")
			}
			wantRx(t, rx)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.checked && !pool.Checked() {
				t.Skip("needs the packetio_checked build")
			}
			g := newRig(t, 64)
			rx := g.rx(32, 32)
			tx := g.tx(32)
			tc.do(t, g, rx, tx)
		})
	}
}

func wantRx(t *testing.T, rx *Rx) {
	t.Helper()
	if s := rx.Stats(); s.Backend["pool_rejected"] != 1 {
		t.Errorf("pool_rejected = %d, want 1", s.Backend["pool_rejected"])
	}
	if err := rx.Err(); !errors.Is(err, packetio.ErrNotOwned) {
		t.Errorf("Err() = %v, want ErrNotOwned", err)
	}
	if rx.Failure() != nil || rx.NumFreeFillSlots() > 0 && rx.Fill(1) != 1 {
		t.Errorf("the queue stopped after a misuse (%v)", rx.Failure())
	}
}

func wantTx(t *testing.T, tx *Tx) {
	t.Helper()
	if s := tx.Stats(); s.Refused != 1 {
		t.Errorf("Refused = %d, want 1", s.Refused)
	}
	if err := tx.Err(); !errors.Is(err, packetio.ErrNotOwned) {
		t.Errorf("Err() = %v, want ErrNotOwned", err)
	}
	if n, _ := tx.Transmit(build(t, tx, 1)); n != 1 {
		t.Errorf("the queue stopped sending after a misuse")
	}
}
