package xdp

import (
	"errors"
	"strings"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/pool"
)

// TestZeroDescIsRefused: a zero Desc names frame 0 with no bytes; Transmit
// and Recycle refuse it in every build, count it and report it.
func TestZeroDescIsRefused(t *testing.T) {
	p := vethPair(t)
	s := openIn(t, p.A, WithFilter(filter.MatchNone()), WithNumFrames(256)).Socket(0)
	if n := s.Transmit([]Desc{{}}); n != 0 {
		t.Fatalf("Transmit took a zero Desc")
	}
	s.Fill(s.NumFreeFillSlots())
	free := s.FreeRxFrames()
	s.Recycle([]Desc{{}})
	if s.FreeRxFrames() != free {
		t.Fatalf("Recycle took a zero Desc: pool %d -> %d", free, s.FreeRxFrames())
	}
	st, _ := s.Stats()
	if st.Rejected != 2 {
		t.Fatalf("rejected %d, want 2", st.Rejected)
	}
	if err := s.Misuse(); !errors.Is(err, packetio.ErrNotOwned) || !strings.Contains(err.Error(), "zero descriptor") {
		t.Fatalf("Misuse = %v", err)
	}
}

// TestRecycleOfAFilledFrameIsRefused: the frame posted to the fill ring is
// the NIC's; a stale copy recycled must not put it in the pool too (two
// packets would land in it).
func TestRecycleOfAFilledFrameIsRefused(t *testing.T) {
	if !pool.Checked() {
		t.Skip("ownership is tracked only with -tags packetio_checked")
	}
	p := vethPair(t)
	s := openIn(t, p.A, WithFilter(filter.MatchNone()), WithNumFrames(256)).Socket(0)
	s.Fill(4)
	free := s.FreeRxFrames()
	// The pool hands out the lowest frame first: frame 0 is on the fill ring.
	s.Recycle([]Desc{{Addr: 0, Len: 60}})
	descs := s.Alloc(1)
	stale := descs[0]
	stale.Len = 60
	if n := s.Transmit([]Desc{stale}); n != 1 {
		t.Fatal("transmit refused")
	}
	s.Free([]Desc{stale}) // in flight
	st, _ := s.Stats()
	if s.FreeRxFrames() != free || st.Rejected != 2 {
		t.Fatalf("pool %d -> %d, rejected %d", free, s.FreeRxFrames(), st.Rejected)
	}
	err := s.Misuse()
	if !errors.Is(err, packetio.ErrNotOwned) || err.Error() != "recycle frame 0x0: the NIC holds it (posted to the fill ring)" {
		t.Fatalf("Misuse = %v", err)
	}
}
