package ring

import (
	"errors"
	"strings"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/mlx5/internal/wqe"
)

func lengths(n, l int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = l
	}
	return s
}

// txPostComplete: one batch posted, sent byte for byte, completed with one
// completion, every frame back.
func txPostComplete(tb testing.TB, f faults) {
	r := newTxRig(tb, txOpts{cfg: TxConfig{Inline: 18}}, f)
	descs := r.build(8, func(int) int { return 64 }, nil)
	if n := r.post(descs); n != 8 {
		tb.Fatalf("Post took %d of 8", n)
	}
	if r.poll() != 8 {
		tb.Fatalf("model sent %d", r.nic.Sent())
	}
	r.checkSent(0, lengths(8, 64))
	if got := r.ring.Completable(); got != 8 {
		tb.Fatalf("Completable %d, want 8", got)
	}
	if got := r.complete(1 << 20); got != 8 {
		tb.Fatalf("Complete released %d, want 8", got)
	}
	c := r.ring.Counters()
	if c.Completions.Load() != 1 || c.Batches.Load() != 1 || c.Packets.Load() != 8 || c.Bytes.Load() != 512 {
		tb.Fatalf("counters: completions %d batches %d packets %d bytes %d", c.Completions.Load(), c.Batches.Load(), c.Packets.Load(), c.Bytes.Load())
	}
	if r.ring.InFlight() != 0 || r.oracle.deviceOwns() != 0 || r.pool.Len() != r.pool.Cap() {
		tb.Fatal("frames not all back")
	}
	for _, p := range r.nic.Packets {
		if p.Inlined != 18 || p.Addr == 0 {
			tb.Fatalf("packet %+v: want 18 inline bytes and a data segment", p)
		}
	}
}

func TestTxPostComplete(t *testing.T) { txPostComplete(t, faults{}) }

// txLaps: many laps of a small ring with random batch sizes, packet lengths
// and completion limits.
func txLaps(tb testing.TB, f faults) {
	for _, o := range []txOpts{
		{blocks: 8, cfg: TxConfig{Inline: 18}},
		{blocks: 8, cfg: TxConfig{Inline: 40}}, // two blocks per entry
		{blocks: 16, cfg: TxConfig{Mode: ModeMPWPointer}, empw: true},
		{blocks: 16, cfg: TxConfig{Mode: ModeMPWCopied}, empw: true},
		{blocks: 8, cfg: TxConfig{SignalEvery: 3}},
	} {
		r := newTxRig(tb, o, f)
		rng := lcg(7)
		var want []int
		for lap := 0; lap < 200; lap++ {
			n := 1 + rng.intn(r.ring.FreeSlots()+1)
			var ls []int
			descs := r.build(n, func(int) int {
				l := 1 + rng.intn(1500)
				if rng.intn(3) == 0 {
					l = 1 + rng.intn(200)
				}
				ls = append(ls, l)
				return l
			}, nil)
			k := r.post(descs)
			want = append(want, ls[:k]...)
			r.poll()
			r.complete(1 + rng.intn(40))
		}
		r.settle()
		if r.nic.Sent() != len(want) {
			tb.Fatalf("%v: model sent %d, posted %d", o.cfg.Mode, r.nic.Sent(), len(want))
		}
		r.checkSent(0, want)
		if r.pool.Len() != r.pool.Cap() || r.oracle.deviceOwns() != 0 {
			tb.Fatalf("%v: %d of %d frames back", o.cfg.Mode, r.pool.Len(), r.pool.Cap())
		}
	}
}

func TestTxLaps(t *testing.T) { txLaps(t, faults{}) }

func TestTxQueueFullAndRecovery(t *testing.T) {
	r := newTxRig(t, txOpts{blocks: 8, cfg: TxConfig{Inline: 18}}, faults{})
	if r.ring.FreeSlots() != 8 {
		t.Fatalf("FreeSlots %d, want 8", r.ring.FreeSlots())
	}
	if n := r.post(r.build(12, func(int) int { return 100 }, nil)); n != 8 {
		t.Fatalf("Post took %d into 8 slots", n)
	}
	if r.ring.FreeSlots() != 0 {
		t.Fatal("FreeSlots not 0 on a full ring")
	}
	if n := r.post(r.build(1, func(int) int { return 100 }, nil)); n != 0 {
		t.Fatal("a full ring took a packet")
	}
	if r.ring.Counters().RingFull.Load() != 1 {
		t.Fatal("RingFull not counted")
	}
	r.poll()
	r.complete(1 << 20)
	if r.ring.FreeSlots() != 8 {
		t.Fatal("room did not come back")
	}
	if n := r.post(r.build(8, func(int) int { return 100 }, nil)); n != 8 {
		t.Fatal("ring did not recover")
	}
	r.settle()
}

func TestTxCompleteHonoursItsLimit(t *testing.T) {
	r := newTxRig(t, txOpts{cfg: TxConfig{SignalEvery: 1}}, faults{})
	r.post(r.build(8, func(int) int { return 64 }, nil))
	r.poll()
	if n := r.complete(3); n != 3 {
		t.Fatalf("Complete(3) released %d", n)
	}
	if n := r.ring.Completable(); n != 5 {
		t.Fatalf("Completable %d after, want 5", n)
	}
	r.settle()
	// With one completion per batch, a limit never splits it.
	r = newTxRig(t, txOpts{}, faults{})
	r.post(r.build(8, func(int) int { return 64 }, nil))
	r.poll()
	if n := r.complete(1); n != 8 {
		t.Fatalf("Complete(1) with one completion for 8 released %d, want 8", n)
	}
}

func TestTxOneCompletionPerBatch(t *testing.T) {
	r := newTxRig(t, txOpts{}, faults{})
	for i := 0; i < 5; i++ {
		r.post(r.build(10, func(int) int { return 64 }, nil))
	}
	r.poll()
	r.complete(1 << 20)
	if c := r.ring.Counters().Completions.Load(); c != 5 {
		t.Fatalf("%d completions for 5 batches", c)
	}
}

// txFailureThenFlush: the device fails the 5th packet; the error releases
// everything up to it, the ring refuses more work, and the flush releases the
// rest.
func TestTxFailureThenFlush(t *testing.T) {
	r := newTxRig(t, txOpts{cfg: TxConfig{Inline: 18}}, faults{})
	r.nic.FailAfter = 5
	r.post(r.build(8, func(int) int { return 64 }, nil))
	r.poll()
	if !r.nic.Failed() {
		t.Fatal("model did not fail")
	}
	if n := r.complete(1 << 20); n != 5 {
		t.Fatalf("error completion released %d, want the 5 up to the failing entry", n)
	}
	err := r.ring.Err()
	if !errors.Is(err, packetio.ErrQueueFailed) || !strings.Contains(err.Error(), "local protection") {
		t.Fatalf("Err() = %v", err)
	}
	if f := r.ring.Failure(); f.Syndrome != wqe.SyndromeLocalProtection || f.QPN != testQPN || f.WQECounter != 4 {
		t.Fatalf("failure %+v", f)
	}
	if r.ring.FreeSlots() != 0 || r.ring.Post(r.build(1, func(int) int { return 64 }, nil)) != 0 {
		t.Fatal("a failed ring takes work")
	}
	r.pool.Push(r.scratch[0])
	r.poll()
	if n := r.complete(1 << 20); n != 3 {
		t.Fatalf("flush released %d, want 3", n)
	}
	if r.ring.InFlight() != 0 || r.pool.Len() != r.pool.Cap() {
		t.Fatal("frames lost after flush")
	}
	if !strings.Contains(r.ring.Err().Error(), "local protection") {
		t.Fatal("the flush replaced the real syndrome")
	}
}

// txForgedCompletions: completions naming a previous lap, a lap ahead, a
// block never posted or the middle of an entry release nothing.
func txForgedCompletions(tb testing.TB, f faults) {
	r := newTxRig(tb, txOpts{blocks: 8, cfg: TxConfig{Inline: 40, SignalEvery: 1}}, f) // 2 blocks per entry
	// One full lap so the previous lap has entries.
	r.post(r.build(4, func(int) int { return 100 }, nil))
	r.settle()
	r.nic.BlocksPerPoll = -1 // the device holds still from now on
	r.post(r.build(3, func(int) int { return 100 }, nil))
	r.poll()
	head := uint16(r.ring.head)
	for _, tc := range []struct {
		name    string
		counter uint16
	}{
		{"previous lap", head - 8},
		{"one lap ahead", head + 8},
		{"never posted", head + 6},
		{"middle of an entry", head + 1},
	} {
		if err := r.nic.WriteCQE(wqe.CQE{Opcode: wqe.CQEReq, WQECounter: tc.counter, QPN: testQPN}); err != nil {
			tb.Fatal(err)
		}
		if n := r.complete(1 << 20); n != 0 {
			tb.Fatalf("%s: forged completion released %d frames", tc.name, n)
		}
	}
	if r.ring.Counters().Stale.Load() != 4 || r.ring.InFlight() != 3 {
		tb.Fatalf("stale %d in flight %d", r.ring.Counters().Stale.Load(), r.ring.InFlight())
	}
	r.nic.BlocksPerPoll = 0
	r.settle()
}

func TestTxForgedCompletions(t *testing.T) { txForgedCompletions(t, faults{}) }

// txRandomized: 5000 random steps of post, device progress and completion,
// checked by the ownership oracle at every step.
func txRandomized(tb testing.TB, f faults) {
	r := newTxRig(tb, txOpts{blocks: 16, frames: 48, cfg: TxConfig{Inline: 18, SignalEvery: 5}}, f)
	rng := lcg(2026)
	var sent int
	for step := 0; step < 5000; step++ {
		switch rng.intn(3) {
		case 0:
			k := r.post(r.build(rng.intn(12), func(int) int { return 1 + rng.intn(2000) }, nil))
			sent += k
		case 1:
			r.nic.BlocksPerPoll = rng.intn(6)
			r.poll()
		case 2:
			r.complete(rng.intn(10))
		}
		if r.ring.InFlight()+r.pool.Len() != r.pool.Cap() {
			tb.Fatalf("step %d: %d in flight + %d free != %d frames", step, r.ring.InFlight(), r.pool.Len(), r.pool.Cap())
		}
		if r.ring.InFlight() != r.oracle.deviceOwns() {
			tb.Fatalf("step %d: ring says %d in flight, oracle %d", step, r.ring.InFlight(), r.oracle.deviceOwns())
		}
	}
	r.nic.BlocksPerPoll = 0
	r.settle()
	if r.nic.Sent() != sent {
		tb.Fatalf("model sent %d of %d", r.nic.Sent(), sent)
	}
}

func TestTxRandomizedOwnership(t *testing.T) { txRandomized(t, faults{}) }

func TestTxZeroAllocs(t *testing.T) {
	for _, o := range []txOpts{
		{cfg: TxConfig{Inline: 18}},
		{cfg: TxConfig{Mode: ModeMPWPointer}, empw: true},
		{cfg: TxConfig{Mode: ModeMPWCopied}, empw: true},
	} {
		r := newTxRig(t, o, faults{})
		r.nic.Discard = true
		descs := make([]packetio.Desc, 0, 32)
		allocs := testing.AllocsPerRun(200, func() {
			descs = r.build(32, func(int) int { return 64 }, descs[:0])
			r.ring.Post(descs)
			r.nic.Poll()
			r.out = r.ring.Complete(1<<20, r.out[:0])
			for _, d := range r.out {
				r.pool.Push(d.Addr)
			}
		})
		if allocs != 0 {
			t.Fatalf("%v: %.1f allocations per batch", o.cfg.Mode, allocs)
		}
		if r.nic.Sent() == 0 {
			t.Fatal("nothing sent")
		}
	}
}

func TestNewTxRefusesBadConfigs(t *testing.T) {
	var rec [2]uint32
	var cqRec uint32
	var uar uint64
	good := func() TxConfig {
		return TxConfig{SQ: make([]byte, 64*64), CQ: make([]byte, 64*64), SQDbrec: &rec[1], CQDbrec: &cqRec, UAR: &uar,
			Region: make([]byte, 8*2048), FrameSize: 2048, QPN: 1}
	}
	if _, err := NewTx(good()); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*TxConfig){
		"no UAR":                    func(c *TxConfig) { c.UAR = nil },
		"no SQ record":              func(c *TxConfig) { c.SQDbrec = nil },
		"SQ not a power of two":     func(c *TxConfig) { c.SQ = make([]byte, 3*64) },
		"CQ smaller than SQ":        func(c *TxConfig) { c.CQ = make([]byte, 32*64) },
		"CQ not entries":            func(c *TxConfig) { c.CQ = make([]byte, 64*64+1) },
		"frame size":                func(c *TxConfig) { c.FrameSize = 3000 },
		"region too small":          func(c *TxConfig) { c.Region = make([]byte, 100) },
		"inline too long":           func(c *TxConfig) { c.Inline = 1000 },
		"negative SignalEvery":      func(c *TxConfig) { c.SignalEvery = -1 },
		"eMPW with inline":          func(c *TxConfig) { c.Mode, c.Inline = ModeMPWPointer, 18 },
		"eMPW in a tiny SQ":         func(c *TxConfig) { c.Mode, c.SQ, c.CQ = ModeMPWCopied, make([]byte, 8*64), make([]byte, 8*64) },
		"copy length past an entry": func(c *TxConfig) { c.Mode, c.MPWMaxLen = ModeMPWCopied, 2000 },
		"unknown mode":              func(c *TxConfig) { c.Mode = 9 },
		"QPN over 24 bits":          func(c *TxConfig) { c.QPN = 1 << 24 },
	} {
		c := good()
		mod(&c)
		if _, err := NewTx(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestTxEmptyBatchRingsNothing(t *testing.T) {
	r := newTxRig(t, txOpts{}, faults{})
	r.post(r.build(2, func(int) int { return 64 }, nil))
	rec, uar := r.qpRec, r.uar
	if r.ring.Post(nil) != 0 || r.ring.Post([]packetio.Desc{}) != 0 {
		t.Fatal("empty post took something")
	}
	if r.qpRec != rec || r.uar != uar || r.ring.Counters().Batches.Load() != 1 {
		t.Fatal("an empty batch rang the doorbell")
	}
	r.settle()
}

func TestTxDoorbellIsTheLastEntry(t *testing.T) {
	r := newTxRig(t, txOpts{cfg: TxConfig{Inline: 18}}, faults{})
	r.post(r.build(3, func(int) int { return 64 }, nil))
	var want [8]byte
	copy(want[:], r.sq[2*wqe.BlockSize:])
	var got [8]byte
	putNative64(got[:], r.uar)
	if got != want {
		t.Fatalf("UAR %x, want the last entry's first 8 bytes %x", got, want)
	}
	r.settle()
}

func TestTxFullyInlinePacketHasNoDataSegment(t *testing.T) {
	r := newTxRig(t, txOpts{cfg: TxConfig{Inline: 18}}, faults{})
	r.post(r.build(3, func(i int) int { return []int{14, 18, 19}[i] }, nil))
	r.settle()
	for i, p := range r.nic.Packets {
		hasSeg := p.Addr != 0
		if hasSeg != (i == 2) {
			t.Fatalf("packet %d (%d bytes): data segment %v", i, len(p.Bytes), hasSeg)
		}
	}
	r.checkSent(0, []int{14, 18, 19})
}

func TestTxRefusesDescriptorsOutsideOneFrame(t *testing.T) {
	r := newTxRig(t, txOpts{frames: 16}, faults{})
	var good packetio.Desc
	for _, d := range []packetio.Desc{
		{Addr: 0, Len: 0},
		{Addr: 0, Len: 2049},
		{Addr: 2000, Len: 49},
		{Addr: 16 * 2048, Len: 64},
		{Addr: ^uint64(0), Len: 64},
		{Addr: ^uint64(0) - 10, Len: 64},
	} {
		good = r.build(1, func(int) int { return 64 }, nil)[0]
		if d.Addr < 1<<20 {
			d.Addr += good.Addr
		}
		if n := r.ring.Post([]packetio.Desc{d}); n != 0 {
			t.Fatalf("Post took %+v", d)
		}
		if n := r.ring.Post([]packetio.Desc{good, d, good}); n != 1 {
			t.Fatalf("Post of good, %+v, good took %d, want the prefix 1", d, n)
		}
		r.oracle.give("Post", good)
		r.fifo = append(r.fifo, good)
		r.settle()
	}
	if r.ring.Counters().BadDesc.Load() != 12 {
		t.Fatalf("BadDesc %d", r.ring.Counters().BadDesc.Load())
	}
	// The last byte of a frame is fine.
	good = r.build(1, func(int) int { return 64 }, nil)[0]
	if r.ring.Post([]packetio.Desc{{Addr: good.Addr + 2047, Len: 1}}) != 1 {
		t.Fatal("a one-byte descriptor at the frame end was refused")
	}
	r.oracle.give("Post", good)
	r.fifo = append(r.fifo, packetio.Desc{Addr: good.Addr + 2047, Len: 1})
	r.settle()
}

// TestTxFreeSlotsNeverOverPromises posts exactly FreeSlots packets of the
// worst length for each mode and expects them all taken.
func TestTxFreeSlotsNeverOverPromises(t *testing.T) {
	for _, o := range []txOpts{
		{blocks: 32, cfg: TxConfig{Inline: 40}},
		{blocks: 32, cfg: TxConfig{Mode: ModeMPWPointer}, empw: true},
		{blocks: 32, cfg: TxConfig{Mode: ModeMPWCopied}, empw: true},
		{blocks: 32, cfg: TxConfig{Mode: ModeMPWCopied, MPWMaxLen: 64}, empw: true},
	} {
		for _, l := range []int{1, 60, 64, 190, 192, 193, 1500} {
			r := newTxRig(t, o, faults{})
			rng := lcg(l)
			for round := 0; round < 20; round++ {
				n := r.ring.FreeSlots()
				if n == 0 {
					r.nic.BlocksPerPoll = 0
					r.settle()
					n = r.ring.FreeSlots()
				}
				if n == 0 {
					t.Fatalf("%v len %d: no room after completing everything", o.cfg.Mode, l)
				}
				if k := r.post(r.build(n, func(int) int { return l }, nil)); k != n {
					t.Fatalf("%v len %d: FreeSlots promised %d, Post took %d", o.cfg.Mode, l, n, k)
				}
				// Partly complete, so the next promise starts mid-ring.
				r.nic.BlocksPerPoll = 1 + rng.intn(10)
				r.poll()
				r.complete(1 << 20)
			}
			r.nic.BlocksPerPoll = 0
			r.settle()
		}
	}
}

func TestTxMultiPacketSharesEntries(t *testing.T) {
	r := newTxRig(t, txOpts{blocks: 64, cfg: TxConfig{Mode: ModeMPWPointer}, empw: true}, faults{})
	r.post(r.build(100, func(int) int { return 64 }, nil))
	// 100 = 58 + 42: two entries, 15 + 11 blocks.
	if r.ring.pi != 26 {
		t.Fatalf("100 pointer packets took %d blocks, want 26", r.ring.pi)
	}
	r.settle()
	r.checkSent(0, lengths(100, 64))
	// A lone packet is an ordinary SEND.
	r.post(r.build(1, func(int) int { return 64 }, nil))
	if r.ring.sq.DecodeCtrl(26).Opcode != wqe.OpSend {
		t.Fatal("a lone packet did not go as SEND")
	}
	r.settle()
}

func TestTxCopiedModeMixesForms(t *testing.T) {
	r := newTxRig(t, txOpts{blocks: 64, cfg: TxConfig{Mode: ModeMPWCopied}, empw: true}, faults{})
	ls := []int{60, 1500, 192, 193, 1, 64}
	r.post(r.build(len(ls), func(i int) int { return ls[i] }, nil))
	r.settle()
	r.checkSent(0, ls)
	for i, p := range r.nic.Packets {
		copied := p.Inlined > 0
		if copied != (ls[i] <= 192) {
			t.Fatalf("packet %d (%d bytes) copied=%v", i, ls[i], copied)
		}
	}
}

func TestTxModeNames(t *testing.T) {
	for m, s := range map[TxMode]string{ModeSend: "send", ModeMPWPointer: "multi-packet (pointer)", ModeMPWCopied: "multi-packet (copied)", 7: "TxMode(7)"} {
		if m.String() != s {
			t.Errorf("%d: %q", m, m.String())
		}
	}
}

func TestTxUndecodableCompletionFailsTheRing(t *testing.T) {
	r := newTxRig(t, txOpts{}, faults{})
	r.nic.BlocksPerPoll = -1
	r.post(r.build(2, func(int) int { return 64 }, nil))
	r.poll()
	if err := r.nic.WriteCQE(wqe.CQE{Opcode: wqe.CQEReq, Format: wqe.FormatCompressed}); err != nil {
		t.Fatal(err)
	}
	if n := r.complete(1 << 20); n != 0 {
		t.Fatal("a compressed CQE released frames")
	}
	if !errors.Is(r.ring.Err(), packetio.ErrQueueFailed) {
		t.Fatalf("Err() = %v", r.ring.Err())
	}
	r.complete(1 << 20)
	if e := r.ring.Counters().Errors.Load(); e != 1 {
		t.Fatalf("one bad CQE counted %d times", e)
	}
	out := r.ring.Drain(nil)
	if len(out) != 2 || r.ring.InFlight() != 0 {
		t.Fatalf("Drain returned %d", len(out))
	}
}

// FuzzTxDescriptor: whatever a caller passes, Post takes exactly the prefix
// of descriptors naming 1+ bytes inside one frame, and the model never sees
// a bad entry.
func FuzzTxDescriptor(f *testing.F) {
	f.Add(uint64(0), uint32(64), uint64(2048), uint32(2048))
	f.Add(uint64(2047), uint32(1), ^uint64(0), uint32(64))
	f.Add(uint64(100), uint32(0), uint64(16*2048), uint32(1))
	f.Fuzz(func(t *testing.T, a1 uint64, l1 uint32, a2 uint64, l2 uint32) {
		r := newTxRig(t, txOpts{frames: 16, cfg: TxConfig{Inline: 18}}, faults{})
		valid := func(a uint64, l uint32) bool {
			return a < 16*2048 && l >= 1 && a%2048+uint64(l) <= 2048
		}
		descs := []packetio.Desc{{Addr: a1, Len: l1}, {Addr: a2, Len: l2}}
		want := 0
		if valid(a1, l1) {
			want++
			if valid(a2, l2) && a1/2048 != a2/2048 {
				want++
			}
		}
		if want < 2 && valid(a1, l1) && valid(a2, l2) {
			descs = descs[:1] // one frame twice is the caller's bug, not tested here
		}
		n := r.ring.Post(descs)
		if n != want {
			t.Fatalf("Post(%+v) took %d, want %d", descs, n, want)
		}
		r.nic.Poll()
		r.noViolations()
		if got := r.ring.Complete(1<<20, nil); len(got) != n {
			t.Fatalf("completed %d of %d", len(got), n)
		}
	})
}
