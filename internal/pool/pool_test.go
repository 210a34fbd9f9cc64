package pool

import (
	"testing"
)

func mustNew(t *testing.T, first, count, size int) *Frames {
	t.Helper()
	p, err := New(first, count, size)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNewRefusesBadGeometry(t *testing.T) {
	for _, tc := range []struct{ first, count, size int }{
		{0, 8, 0}, {0, 8, 3000}, {0, 8, -2048}, {-1, 8, 2048}, {0, -1, 2048},
	} {
		if _, err := New(tc.first, tc.count, tc.size); err == nil {
			t.Errorf("New(%d, %d, %d) accepted", tc.first, tc.count, tc.size)
		}
	}
}

func TestPopCounts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		n, want   int
		remaining int
	}{
		{"zero", 0, 0, 8},
		{"negative", -3, 0, 8},
		{"some", 3, 3, 5},
		{"all", 8, 8, 0},
		{"more than free", 20, 8, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustNew(t, 0, 8, 2048)
			got := p.Pop(tc.n, nil)
			if len(got) != tc.want || p.Len() != tc.remaining {
				t.Fatalf("Pop(%d) = %d frames, %d left; want %d, %d", tc.n, len(got), p.Len(), tc.want, tc.remaining)
			}
		})
	}
	p := mustNew(t, 0, 0, 2048)
	if got := p.Pop(4, nil); len(got) != 0 {
		t.Fatalf("empty pool popped %d", len(got))
	}
}

func TestPopHandsOutEveryFrameOnce(t *testing.T) {
	const first, count, size = 5, 64, 4096
	p := mustNew(t, first, count, size)
	got := p.Pop(count, nil)
	seen := map[uint64]bool{}
	for i, a := range got {
		if seen[a] {
			t.Fatalf("frame %#x handed out twice", a)
		}
		seen[a] = true
		if !p.Owns(a) || a%size != 0 {
			t.Fatalf("frame %#x outside the pool or unaligned", a)
		}
		if i == 0 && a != first*size {
			t.Fatalf("first pop %#x, want lowest address %#x", a, first*size)
		}
	}
	if p.Owns(first*size-1) || p.Owns((first+count)*size) || !p.Owns((first+count)*size-1) {
		t.Fatal("Owns bounds wrong")
	}
}

func TestPoolsCarvedFromOneRegionAreDisjoint(t *testing.T) {
	a := mustNew(t, 0, 32, 2048)
	b := mustNew(t, 32, 32, 2048)
	fa := a.Pop(32, nil)
	for _, x := range fa {
		if b.Owns(x) {
			t.Fatalf("%#x owned by both pools", x)
		}
		if b.Push(x) {
			t.Fatalf("pool b took a's frame %#x", x)
		}
	}
	if b.Rejected() != 32 {
		t.Fatalf("b rejected %d, want 32", b.Rejected())
	}
}

func TestBaseRoundsDown(t *testing.T) {
	for size := 64; size <= 4096; size <<= 1 {
		p := mustNew(t, 0, 4, size)
		for f := 0; f < 4; f++ {
			for off := 0; off < size; off++ {
				addr := uint64(f*size + off)
				if got := p.Base(addr); got != uint64(f*size) {
					t.Fatalf("size %d: Base(%#x) = %#x", size, addr, got)
				}
			}
		}
	}
}

func TestIndexAgreesWithDivision(t *testing.T) {
	for size := 64; size <= 65536; size <<= 1 {
		for _, first := range []int{0, 1, 7, 100} {
			p := mustNew(t, first, 16, size)
			for i := 0; i < 16; i++ {
				addr := uint64((first + i) * size)
				if got, want := p.index(addr), int((addr-uint64(first*size))/uint64(size)); got != want {
					t.Fatalf("size %d first %d: index(%#x) = %d, want %d", size, first, addr, got, want)
				}
			}
		}
	}
}

func TestPushRefusals(t *testing.T) {
	const size = 2048
	for _, tc := range []struct {
		name string
		addr func(p *Frames, held []uint64) uint64
	}{
		{"below the range", func(*Frames, []uint64) uint64 { return 0 }},
		{"past the range", func(*Frames, []uint64) uint64 { return 12 * size }},
		{"far away", func(*Frames, []uint64) uint64 { return 1 << 40 }},
		{"unaligned", func(_ *Frames, held []uint64) uint64 { return held[0] + 64 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustNew(t, 4, 8, size)
			held := p.Pop(2, nil)
			a := tc.addr(p, held)
			// TryPut takes nothing and counts nothing: the frame is Put's.
			if p.TryPut(a) || p.Rejected() != 0 {
				t.Fatalf("TryPut took or counted a frame Put refuses (rejected %d)", p.Rejected())
			}
			if p.Push(a) {
				t.Fatal("refused push was taken")
			}
			if p.Rejected() != 1 || p.Len() != 6 {
				t.Fatalf("rejected %d len %d; want 1, 6", p.Rejected(), p.Len())
			}
			// A checked build must check the holder: only Put may take it.
			if got := p.TryPut(held[0]); got == Checked() {
				t.Fatalf("TryPut of a frame of the pool's = %v with Checked() %v", got, Checked())
			}
		})
	}
	t.Run("surplus", func(t *testing.T) {
		p := mustNew(t, 0, 4, size)
		if p.TryPut(0) || p.Rejected() != 0 {
			t.Fatalf("TryPut took or counted a surplus frame (rejected %d)", p.Rejected())
		}
		if p.Push(0) {
			t.Fatal("full pool took a surplus frame")
		}
		if p.Rejected() != 1 || p.Len() != 4 {
			t.Fatalf("rejected %d len %d", p.Rejected(), p.Len())
		}
	})
}

func TestDoublePushRefusedWhenChecked(t *testing.T) {
	if !Checked() {
		t.Skip("duplicate detection is built only with -tags packetio_checked; make test runs that build too")
	}
	p := mustNew(t, 0, 4, 2048)
	got := p.Pop(2, nil)
	// One frame is lost and another returned twice: the length is right,
	// only the bitmap can tell.
	if !p.Push(got[0]) || p.Push(got[0]) {
		t.Fatal("second return of one frame was taken")
	}
	if p.Rejected() != 1 {
		t.Fatalf("rejected %d, want 1", p.Rejected())
	}
}

func TestPushPastPartialBitmapWord(t *testing.T) {
	const count, size = 70, 64
	p := mustNew(t, 0, count, size)
	p.Pop(count, nil)
	for i := count; i < 128; i++ {
		if p.Push(uint64(i * size)) {
			t.Fatalf("frame %d past the pool was taken", i)
		}
	}
	if p.Rejected() != 128-count {
		t.Fatalf("rejected %d", p.Rejected())
	}
}

func TestRoundTripsKeepEveryFrame(t *testing.T) {
	p := mustNew(t, 0, 256, 2048)
	buf := make([]uint64, 0, 256)
	for round := 0; round < 50; round++ {
		buf = p.Pop(100+round, buf[:0])
		for _, a := range buf {
			if !p.Push(p.Base(a + 17)) {
				t.Fatalf("round %d: push of %#x refused", round, a)
			}
		}
	}
	if p.Rejected() != 0 || p.Len() != 256 {
		t.Fatalf("rejected %d len %d", p.Rejected(), p.Len())
	}
}

func TestPopPushDoNotAllocate(t *testing.T) {
	p := mustNew(t, 0, 512, 2048)
	buf := make([]uint64, 0, 64)
	allocs := testing.AllocsPerRun(1000, func() {
		buf = p.Pop(64, buf[:0])
		for _, a := range buf {
			p.Push(a)
		}
	})
	if allocs != 0 {
		t.Fatalf("Pop/Push allocate %.1f times per run", allocs)
	}
}

func BenchmarkPopPush(b *testing.B) {
	p, _ := New(0, 4096, 2048)
	buf := make([]uint64, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf = p.Pop(64, buf[:0])
		for _, a := range buf {
			p.Push(a)
		}
	}
}
