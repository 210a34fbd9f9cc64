package ring

import (
	"bytes"
	"errors"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/mlx5/internal/clock"
	"github.com/packetio/packetio/mlx5/internal/wqe"
)

var nsClock = clock.Info{Mult: 1 << 31, Shift: 31, Mask: 1<<41 - 1}

// rxFillReceive: buffers posted, packets scattered into them in order, every
// field of the descriptor right.
func rxFillReceive(tb testing.TB, f faults) {
	r := newRxRig(tb, rxOpts{headroom: 64, cfg: RxConfig{Clock: nsClock}}, f)
	if n := r.fill(8); n != 8 {
		tb.Fatalf("Fill posted %d", n)
	}
	r.nic.TicksPerPacket = 10
	var sent [][]byte
	for i := 0; i < 5; i++ {
		sent = append(sent, frame(i, 60+i))
	}
	n := r.nic.Deliver(sent...)
	r.noViolations()
	if n != 5 {
		tb.Fatalf("model delivered %d", n)
	}
	if r.ring.Ready(100) != 5 {
		tb.Fatalf("Ready %d", r.ring.Ready(100))
	}
	got := r.receive(64, true)
	if len(got) != 5 || len(r.ts) != 5 {
		tb.Fatalf("received %d packets, %d stamps", len(got), len(r.ts))
	}
	for i, d := range got {
		if d.Addr%2048 != 64 {
			tb.Fatalf("packet %d at %#x: not past the 64-byte headroom", i, d.Addr)
		}
		if !bytes.Equal(r.region[d.Addr:d.Addr+uint64(d.Len)], sent[i]) {
			tb.Fatalf("packet %d differs", i)
		}
		if d.Options != packetio.OptChecksumOK|packetio.OptL3ChecksumOK {
			tb.Fatalf("options %#x", d.Options)
		}
		if r.ts[i] != uint64(10*(i+1)) {
			tb.Fatalf("stamp %d = %d", i, r.ts[i])
		}
	}
	c := r.ring.Counters()
	if c.Packets.Load() != 5 || c.Batches.Load() != 1 || c.Filled.Load() != 8 || c.Completions.Load() != 5 {
		tb.Fatal("counters")
	}
	if r.ring.Outstanding() != 3 || r.oracle.deviceOwns() != 3 {
		tb.Fatalf("outstanding %d", r.ring.Outstanding())
	}
}

func TestRxFillReceive(t *testing.T) { rxFillReceive(t, faults{}) }

func TestRxChecksumBits(t *testing.T) {
	for _, tc := range []struct {
		bits uint8
		want uint32
	}{
		{wqe.CQEL2OK | wqe.CQEL3OK | wqe.CQEL4OK, packetio.OptChecksumOK | packetio.OptL3ChecksumOK},
		{wqe.CQEL2OK | wqe.CQEL3OK, packetio.OptL3ChecksumOK},
		{wqe.CQEL2OK | wqe.CQEL4OK, 0}, // L4 alone says nothing without L3
		{0, 0},
	} {
		r := newRxRig(t, rxOpts{}, faults{})
		r.nic.Checksum = tc.bits
		r.fill(1)
		r.nic.Deliver(frame(0, 64))
		got := r.receive(1, false)
		if len(got) != 1 || got[0].Options != tc.want {
			t.Fatalf("bits %#x: %+v", tc.bits, got)
		}
	}
}

func TestRxNoClockNoStamps(t *testing.T) {
	r := newRxRig(t, rxOpts{}, faults{})
	r.fill(2)
	r.nic.Deliver(frame(0, 64), frame(1, 64))
	got := r.receive(8, true)
	if len(got) != 2 || len(r.ts) != 0 {
		t.Fatalf("%d packets, %d stamps without a clock", len(got), len(r.ts))
	}
}

func TestRxFillStopsAtQueueSize(t *testing.T) {
	r := newRxRig(t, rxOpts{entries: 8, frames: 32}, faults{})
	if n := r.fill(20); n != 8 {
		t.Fatalf("Fill posted %d into 8", n)
	}
	if r.ring.FreeSlots() != 0 || r.fill(1) != 0 {
		t.Fatal("a full RQ took more")
	}
	if r.ring.Fill([]uint64{5}) != 0 && r.ring.Counters().BadDesc.Load() == 0 {
		t.Fatal("unaligned frame")
	}
}

func TestRxFillRefusesBadFrames(t *testing.T) {
	r := newRxRig(t, rxOpts{frames: 8}, faults{})
	for _, a := range []uint64{1, 2047, 8 * 2048, ^uint64(0) &^ 2047} {
		if r.ring.Fill([]uint64{a}) != 0 {
			t.Fatalf("Fill took %#x", a)
		}
	}
	if r.ring.Counters().BadDesc.Load() != 4 {
		t.Fatal("BadDesc not counted")
	}
}

func TestRxPacketsWithoutABufferAreLost(t *testing.T) {
	r := newRxRig(t, rxOpts{}, faults{})
	r.fill(2)
	if n := r.nic.Deliver(frame(0, 64), frame(1, 64), frame(2, 64)); n != 2 || r.nic.Dropped != 1 {
		t.Fatalf("delivered %d dropped %d", n, r.nic.Dropped)
	}
	if got := r.receive(8, false); len(got) != 2 {
		t.Fatalf("received %d", len(got))
	}
}

// rxLaps: many laps of a small queue with random refill and receive sizes,
// checked byte for byte.
func rxLaps(tb testing.TB, f faults) {
	r := newRxRig(tb, rxOpts{entries: 8, frames: 24}, f)
	rng := lcg(3)
	seq, next := 0, 0
	for lap := 0; lap < 300; lap++ {
		r.fill(rng.intn(9))
		var in [][]byte
		for i := rng.intn(r.nic.Posted() + 1); i > 0; i-- {
			in = append(in, frame(seq, 14+rng.intn(1500)))
			seq++
		}
		r.nic.Deliver(in...)
		r.noViolations()
		got := r.receive(1+rng.intn(8), false)
		for _, d := range got {
			if want := frame(next, int(d.Len)); !bytes.Equal(r.region[d.Addr:d.Addr+uint64(d.Len)], want) {
				tb.Fatalf("lap %d: packet %d differs", lap, next)
			}
			next++
		}
	}
	for r.ring.Ready(1) > 0 {
		next += len(r.receive(64, false))
	}
	if next != seq {
		tb.Fatalf("received %d of %d", next, seq)
	}
	r.out = r.ring.Drain(r.out[:0])
	for _, d := range r.out {
		r.oracle.take("Drain", d)
		r.pool.Push(r.pool.Base(d.Addr))
	}
	if r.pool.Len() != r.pool.Cap() {
		tb.Fatalf("%d of %d frames back", r.pool.Len(), r.pool.Cap())
	}
}

func TestRxLaps(t *testing.T) { rxLaps(t, faults{}) }

func TestRxFailedPacketsReturnBuffers(t *testing.T) {
	r := newRxRig(t, rxOpts{}, faults{})
	r.nic.FailEvery = 3
	r.fill(9)
	r.nic.Deliver(frame(0, 64), frame(1, 64), frame(2, 64), frame(3, 64), frame(4, 64), frame(5, 64))
	got := r.receive(64, false)
	if len(got) != 4 || len(r.out) != 6 {
		t.Fatalf("good %d, all %d", len(got), len(r.out))
	}
	if r.ring.Counters().Errors.Load() != 2 || r.ring.Err() != nil {
		t.Fatal("error completions should be counted, not fatal")
	}
	if r.ring.Outstanding() != 3 {
		t.Fatal("outstanding")
	}
}

func TestRxTooLongForTheBuffer(t *testing.T) {
	r := newRxRig(t, rxOpts{headroom: 64}, faults{})
	r.fill(2)
	r.nic.Deliver(frame(0, 2048-64+1), frame(1, 2048-64))
	got := r.receive(8, false)
	if len(got) != 1 || got[0].Len != 2048-64 {
		t.Fatalf("%+v", got)
	}
}

// rxWrongBuffer: a completion that names a buffer other than the oldest
// outstanding one is refused; the ring fails rather than hand it out.
func rxWrongBuffer(tb testing.TB, f faults) {
	r := newRxRig(tb, rxOpts{}, f)
	r.fill(4)
	r.nic.Deliver(frame(0, 64))
	r.receive(8, false)
	// Oldest outstanding is WQE 1; forge a completion naming WQE 2.
	if err := r.nic.WriteCQE(wqe.CQE{Opcode: wqe.CQERespSend, WQECounter: 2, ByteCount: 64}); err != nil {
		tb.Fatal(err)
	}
	if got := r.receive(8, false); len(got) != 0 || len(r.out) != 0 {
		tb.Fatalf("a completion naming the wrong buffer handed out %d frames", len(r.out))
	}
	if !errors.Is(r.ring.Err(), packetio.ErrQueueFailed) {
		tb.Fatalf("Err() = %v", r.ring.Err())
	}
	if r.ring.FreeSlots() != 0 || r.ring.Outstanding() != 3 {
		tb.Fatal("a ring that lost track keeps going")
	}
}

func TestRxCompletionNamingTheWrongBuffer(t *testing.T) { rxWrongBuffer(t, faults{}) }

func TestRxCompletionWithNothingOutstanding(t *testing.T) {
	r := newRxRig(t, rxOpts{}, faults{})
	if err := r.nic.WriteCQE(wqe.CQE{Opcode: wqe.CQERespSend, ByteCount: 64}); err != nil {
		t.Fatal(err)
	}
	if got := r.receive(8, false); len(r.out) != 0 || len(got) != 0 {
		t.Fatal("handed out a frame with nothing posted")
	}
	if r.ring.Counters().Unexpected.Load() != 1 {
		t.Fatal("not counted")
	}
	// A send completion on a receive CQ releases nothing either.
	r.fill(1)
	if err := r.nic.WriteCQE(wqe.CQE{Opcode: wqe.CQEReq}); err != nil {
		t.Fatal(err)
	}
	if r.receive(8, false); len(r.out) != 0 || r.ring.Outstanding() != 1 {
		t.Fatal("a send completion released a receive buffer")
	}
}

func TestRxIdleQueue(t *testing.T) {
	r := newRxRig(t, rxOpts{}, faults{})
	r.fill(8)
	if r.ring.Ready(8) != 0 || len(r.receive(8, false)) != 0 {
		t.Fatal("idle queue returned something")
	}
	if r.ring.Counters().Batches.Load() != 0 {
		t.Fatal("an empty receive counted a batch")
	}
}

func TestRxOversizeByteCountRefused(t *testing.T) {
	r := newRxRig(t, rxOpts{headroom: 64}, faults{})
	r.fill(1)
	if err := r.nic.WriteCQE(wqe.CQE{Opcode: wqe.CQERespSend, ByteCount: 2048 - 64 + 1}); err != nil {
		t.Fatal(err)
	}
	if got := r.receive(8, false); len(got) != 0 || len(r.out) != 1 || r.ring.Counters().Oversize.Load() != 1 {
		t.Fatalf("oversize: good %d, returned %d", len(got), len(r.out))
	}
}

func TestRxUndecodableCompletionIsLatched(t *testing.T) {
	r := newRxRig(t, rxOpts{}, faults{})
	r.fill(2)
	if err := r.nic.WriteCQE(wqe.CQE{Opcode: wqe.CQERespSend, Format: wqe.FormatCompressed, ByteCount: 64}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if got := r.receive(8, false); len(got) != 0 {
			t.Fatal("decoded a compressed CQE")
		}
	}
	if !errors.Is(r.ring.Err(), packetio.ErrQueueFailed) || r.ring.FreeSlots() != 0 {
		t.Fatalf("Err() = %v", r.ring.Err())
	}
	if e := r.ring.Counters().Errors.Load(); e != 1 {
		t.Fatalf("one bad CQE counted %d times", e)
	}
}

func TestRxZeroAllocs(t *testing.T) {
	r := newRxRig(t, rxOpts{cfg: RxConfig{Clock: nsClock}}, faults{})
	pkts := [][]byte{frame(0, 64), frame(1, 64), frame(2, 64), frame(3, 64)}
	allocs := testing.AllocsPerRun(200, func() {
		r.frames = r.pool.Pop(r.ring.FreeSlots(), r.frames[:0])
		r.ring.Fill(r.frames)
		r.nic.Deliver(pkts...)
		r.out, r.ts = r.ring.Receive(64, r.out[:0], r.ts[:0])
		r.out = r.ring.TakeFailed(r.out)
		for _, d := range r.out {
			r.pool.Push(r.pool.Base(d.Addr))
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per round", allocs)
	}
}

func TestNewRxRefusesBadConfigs(t *testing.T) {
	var rq, cq uint32
	good := func() RxConfig {
		return RxConfig{RQ: make([]byte, 64*16), CQ: make([]byte, 64*64), RQDbrec: &rq, CQDbrec: &cq,
			Region: make([]byte, 8*2048), FrameSize: 2048, Headroom: 64}
	}
	if _, err := NewRx(good()); err != nil {
		t.Fatal(err)
	}
	for name, mod := range map[string]func(*RxConfig){
		"no record":           func(c *RxConfig) { c.RQDbrec = nil },
		"RQ not a power of 2": func(c *RxConfig) { c.RQ = make([]byte, 3*16) },
		"RQ not WQEs":         func(c *RxConfig) { c.RQ = make([]byte, 64*16+8) },
		"CQ smaller than RQ":  func(c *RxConfig) { c.CQ = make([]byte, 32*64) },
		"frame size":          func(c *RxConfig) { c.FrameSize = 100 },
		"headroom too big":    func(c *RxConfig) { c.Headroom = 2000 },
		"negative headroom":   func(c *RxConfig) { c.Headroom = -1 },
	} {
		c := good()
		mod(&c)
		if _, err := NewRx(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
