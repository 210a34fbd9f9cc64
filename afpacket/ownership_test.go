//go:build linux

package afpacket_test

import (
	"errors"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afpacket"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/pool"
	"github.com/packetio/packetio/packetiotest"
)

// TestOwnership drives a million random frame moves, misuses among them, on
// one end of a veth pair fed by the other (a tenth under -race).
func TestOwnership(t *testing.T) {
	pair := netns.New(t)
	packetiotest.RunOwnership(t, opener(pair.A, afpacket.WithQueues(1), afpacket.WithFrames(256)), 1_000_000, pool.Checked(),
		packetiotest.WithPeer(opener(pair.B, afpacket.WithQueues(1), afpacket.WithFrames(256))))
}

// TestOwnershipMisuse hands queue 0 a frame the caller does not hold, one
// misuse per case: it must be refused (the pool does not grow, nothing is
// sent), counted in Refused or pool_rejected, and reported by Err as
// ErrNotOwned, while the queue keeps working. A zero Desc is refused in every
// build, the rest only in a packetio_checked one.
func TestOwnershipMisuse(t *testing.T) {
	pair := netns.New(t)
	open := opener(pair.A, afpacket.WithQueues(1), afpacket.WithFrames(64))
	peer := opener(pair.B, afpacket.WithQueues(1), afpacket.WithFrames(64))
	cases := []struct {
		name    string
		checked bool // needs packetio_checked
		do      func(t *testing.T, d, p packetio.Device)
	}{
		{"free in flight", true, func(t *testing.T, d, _ packetio.Device) {
			tx := d.TxQueue(0)
			ds := tx.Alloc(1)
			ds[0].Len = 60
			sent := []packetio.Desc{ds[0]}
			if n := tx.Transmit(sent); n != 1 {
				t.Fatalf("Transmit = %d", n)
			}
			free := tx.NumFreeFrames()
			tx.Free(sent)
			if tx.NumFreeFrames() != free {
				t.Fatalf("Free of a frame in flight was taken: pool %d -> %d", free, tx.NumFreeFrames())
			}
			wantRefused(t, tx, 1) // sends one more frame
			if n := tx.Complete(1 << 20); n != 2 || tx.NumFreeFrames() != free+1 {
				t.Fatalf("Complete = %d, pool %d, want 2 and %d: the frame freed in flight came back twice", n, tx.NumFreeFrames(), free+1)
			}
		}},
		{"transmit twice", true, func(t *testing.T, d, _ packetio.Device) {
			tx := d.TxQueue(0)
			ds := tx.Alloc(1)
			ds[0].Len = 60
			twice := []packetio.Desc{ds[0], ds[0]}
			if n := tx.Transmit(twice); n != 1 {
				t.Fatalf("Transmit of one frame twice = %d, want 1", n)
			}
			wantRefused(t, tx, 1)
		}},
		{"free twice", true, func(t *testing.T, d, _ packetio.Device) {
			tx := d.TxQueue(0)
			one := []packetio.Desc{tx.Alloc(1)[0]}
			tx.Free(one)
			free := tx.NumFreeFrames()
			tx.Free(one)
			if tx.NumFreeFrames() != free {
				t.Fatalf("second Free was taken")
			}
			wantRefused(t, tx, 1)
		}},
		{"recycle twice", true, func(t *testing.T, d, p packetio.Device) {
			rx := d.RxQueue(0)
			got := receiveOne(t, rx, p.TxQueue(0))
			rx.Recycle(got)
			free := rx.NumFreeFrames()
			rx.Recycle(got)
			if rx.NumFreeFrames() != free {
				t.Fatalf("second Recycle was taken: two packets would land in frame %#x", got[0].Addr)
			}
			wantRejected(t, rx, 1)
			if again := receiveOne(t, rx, p.TxQueue(0)); len(again) != 1 {
				t.Fatalf("the queue stopped receiving after a misuse")
			}
		}},
		{"transmit zero", false, func(t *testing.T, d, _ packetio.Device) {
			tx := d.TxQueue(0)
			if n := tx.Transmit([]packetio.Desc{{}}); n != 0 {
				t.Fatalf("Transmit of a zero Desc = %d", n)
			}
			wantRefused(t, tx, 1)
		}},
		{"free zero", false, func(t *testing.T, d, _ packetio.Device) {
			tx := d.TxQueue(0)
			free := tx.NumFreeFrames()
			tx.Free([]packetio.Desc{{}})
			if tx.NumFreeFrames() != free {
				t.Fatalf("Free took a zero Desc")
			}
			wantRefused(t, tx, 1)
		}},
		{"recycle zero", false, func(t *testing.T, d, _ packetio.Device) {
			rx := d.RxQueue(0)
			free := rx.NumFreeFrames()
			rx.Recycle([]packetio.Desc{{}})
			if rx.NumFreeFrames() != free {
				t.Fatalf("Recycle took a zero Desc: frame 0 would be handed out twice")
			}
			wantRejected(t, rx, 1)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.checked && !pool.Checked() {
				t.Skip("needs the packetio_checked build")
			}
			d, p := open(t), peer(t)
			t.Cleanup(func() { d.Close(); p.Close() })
			c.do(t, d, p)
		})
	}
}

// wantRefused checks tx counted n refusals and reports the first misuse.
func wantRefused(t *testing.T, tx packetio.TxQueue, n uint64) {
	t.Helper()
	s, _ := tx.Stats()
	if s.Refused != n {
		t.Errorf("TxStats.Refused = %d, want %d", s.Refused, n)
	}
	if err := tx.Err(); !errors.Is(err, packetio.ErrNotOwned) {
		t.Errorf("Err() = %v, want ErrNotOwned", err)
	}
	ds := tx.Alloc(1)
	ds[0].Len = 60
	if k := tx.Transmit(ds[:1]); k != 1 {
		t.Errorf("the queue stopped sending after a misuse (Transmit = %d)", k)
	}
}

// wantRejected checks rx counted n refusals and reports the first misuse.
func wantRejected(t *testing.T, rx packetio.RxQueue, n uint64) {
	t.Helper()
	s, _ := rx.Stats()
	if got := s.Backend["pool_rejected"]; got != n {
		t.Errorf("pool_rejected = %d, want %d", got, n)
	}
	if err := rx.Err(); !errors.Is(err, packetio.ErrNotOwned) {
		t.Errorf("Err() = %v, want ErrNotOwned", err)
	}
}

// receiveOne sends from peer until rx receives one of the suite's frames and
// returns it, the caller's to recycle.
func receiveOne(t *testing.T, rx packetio.RxQueue, peer packetio.TxQueue) []packetio.Desc {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		peer.Complete(1 << 20)
		if _, err := peer.SendFunc(1, func(_ int, f []byte) int { return copy(f, testFrameBytes) }); err != nil {
			t.Fatalf("SendFunc: %v", err)
		}
		rx.Fill(rx.NumFreeFillSlots())
		if _, err := rx.Poll(20 * time.Millisecond); err != nil {
			t.Fatalf("Poll: %v", err)
		}
		var mine []packetio.Desc
		for _, d := range rx.Receive(64) {
			if f := rx.Region().Frame(d); len(mine) == 0 && len(f) == len(testFrameBytes) && f[12] == 0x88 && f[13] == 0xb5 {
				mine = append(mine, d)
				continue
			}
			rx.Recycle([]packetio.Desc{d})
		}
		if len(mine) == 1 {
			return mine
		}
	}
	t.Fatal("nothing received in 5s")
	return nil
}

// testFrameBytes is a 60-byte broadcast frame of EtherType 0x88b5.
var testFrameBytes = append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 2, 0x88, 0xb5}, make([]byte, 46)...)
