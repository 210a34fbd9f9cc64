package pool

import (
	"errors"
	"strings"
	"testing"

	"github.com/packetio/packetio"
)

// TestOwnershipMoves walks one frame through each legal and illegal move.
// Illegal moves are refused only in a checked build; legal ones everywhere.
func TestOwnershipMoves(t *testing.T) {
	const size = 2048
	type step func(p *Frames, a uint64) bool
	pop := func(p *Frames, _ uint64) bool { return len(p.Pop(1, nil)) == 1 }
	fill := func(p *Frames, _ uint64) bool { return len(p.PopFill(1, nil)) == 1 }
	recycle := func(p *Frames, a uint64) bool { return p.Put(OpRecycle, a) }
	free := func(p *Frames, a uint64) bool { return p.Put(OpFree, a) }
	send := func(p *Frames, a uint64) bool { return p.Send(a) }
	done := func(p *Frames, a uint64) bool { return p.Done(a) }
	tryDone := func(p *Frames, a uint64) bool { return p.TryPut(a) || p.Done(a) }
	receive := func(p *Frames, a uint64) bool { return p.Take(OpReceive, a) }
	reclaim := func(p *Frames, a uint64) bool { return p.Take(OpReclaim, a) }
	for _, tc := range []struct {
		name  string
		steps []step
		want  string // the misuse of the last step, "" when every step is legal
	}{
		{"alloc free", []step{pop, free}, ""},
		{"alloc transmit complete", []step{pop, send, done}, ""},
		{"alloc transmit complete (TryPut)", []step{pop, send, tryDone}, ""},
		{"alloc transmit reclaim recycle", []step{pop, send, reclaim, recycle}, ""},
		{"fill receive recycle", []step{fill, receive, recycle}, ""},
		{"fill receive transmit complete", []step{fill, receive, send, done}, ""},
		{"fill taken back unused", []step{fill, done}, ""},
		{"recycle a filled frame", []step{fill, recycle}, "recycle frame 0x1000: the NIC holds it (posted to the fill ring)"},
		{"free an in-flight frame", []step{pop, send, free}, "free frame 0x1000: the NIC holds it (in flight on transmit)"},
		{"double recycle", []step{fill, receive, recycle, recycle}, "recycle frame 0x1000: it is in the pool"},
		{"transmit twice", []step{pop, send, send}, "transmit frame 0x1000: the NIC holds it (in flight on transmit)"},
		{"complete a held frame", []step{pop, done}, "complete frame 0x1000: the caller holds it"},
		{"complete a held frame (TryPut)", []step{pop, tryDone}, "complete frame 0x1000: the caller holds it"},
		{"receive a sent frame", []step{pop, send, receive}, "receive frame 0x1000: the NIC holds it (in flight on transmit)"},
		{"reclaim a held frame", []step{pop, reclaim}, "reclaim frame 0x1000: the caller holds it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustNew(t, 2, 4, size)
			const a = 2 * size // the first frame popped
			for i, s := range tc.steps {
				ok := s(p, a)
				last := i == len(tc.steps)-1
				if !last || tc.want == "" || !Checked() {
					if !ok && (tc.want == "" || !last) {
						t.Fatalf("step %d refused: %v", i, p.Misuse())
					}
					continue
				}
				if ok {
					t.Fatalf("misuse accepted")
				}
			}
			err := p.Misuse()
			if tc.want == "" || !Checked() {
				if err != nil && tc.want == "" {
					t.Fatalf("legal moves reported %v", err)
				}
				return
			}
			if !errors.Is(err, packetio.ErrNotOwned) || err.Error() != tc.want || p.Misuses() != 1 {
				t.Fatalf("misuse %q (%d), want %q matching ErrNotOwned", err, p.Misuses(), tc.want)
			}
		})
	}
}

// TestMisuseKeepsTheFirstAndThePoolWorks: later misuses are counted, only
// the first is reported, and legal moves still go through.
func TestMisuseKeepsTheFirstAndThePoolWorks(t *testing.T) {
	if !Checked() {
		t.Skip("ownership is tracked only with -tags packetio_checked")
	}
	p := mustNew(t, 0, 8, 64)
	got := p.PopFill(2, nil)
	p.Put(OpRecycle, got[0])
	p.Put(OpFree, got[1])
	if p.Misuses() != 2 || p.Rejected() != 2 || !strings.HasPrefix(p.Misuse().Error(), "recycle frame 0x0:") {
		t.Fatalf("misuses %d rejected %d first %v", p.Misuses(), p.Rejected(), p.Misuse())
	}
	if !p.Take(OpReceive, got[0]) || !p.Put(OpRecycle, got[0]) || !p.Done(got[1]) {
		t.Fatal("legal moves refused after a misuse")
	}
	if inPool, held, nic := p.Counts(); inPool != 8 || held != 0 || nic != 0 || p.Len() != 8 {
		t.Fatalf("counts %d/%d/%d len %d", inPool, held, nic, p.Len())
	}
}

func TestRefuseZeroInEveryBuild(t *testing.T) {
	for _, tc := range []struct {
		op       Op
		rejected uint64
		want     string
	}{
		{OpRecycle, 1, "recycle a zero descriptor: it names no frame"},
		{OpFree, 1, "free a zero descriptor: it names no frame"},
		{OpTransmit, 0, "transmit a zero descriptor: it names no frame"},
	} {
		p := mustNew(t, 0, 4, 64)
		p.RefuseZero(tc.op)
		if err := p.Misuse(); !errors.Is(err, packetio.ErrNotOwned) || err.Error() != tc.want || p.Rejected() != tc.rejected {
			t.Errorf("%v: misuse %v rejected %d", tc.op, err, p.Rejected())
		}
	}
}

func TestForeignFramesAreNotTracked(t *testing.T) {
	p := mustNew(t, 4, 4, 64)
	// Another pool's frame: Send and Take cannot judge it and let it pass.
	if !p.Send(0) || !p.Take(OpReclaim, 0) || p.Misuse() != nil {
		t.Fatalf("foreign frame judged: %v", p.Misuse())
	}
}

func TestOwnershipMovesDoNotAllocate(t *testing.T) {
	p := mustNew(t, 0, 512, 2048)
	buf := make([]uint64, 0, 64)
	allocs := testing.AllocsPerRun(1000, func() {
		buf = p.PopFill(64, buf[:0])
		for _, a := range buf {
			p.Take(OpReceive, a)
			p.Send(a)
			p.Done(a)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per run", allocs)
	}
}
