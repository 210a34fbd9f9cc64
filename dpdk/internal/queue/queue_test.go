package queue

import (
	"bytes"
	"errors"
	"testing"

	"github.com/packetio/packetio"
)

func TestAllocReservesHeadroom(t *testing.T) {
	q := newRig(t, 64).tx(64)
	d := q.Alloc(8)
	if len(d) != 8 {
		t.Fatalf("Alloc(8) = %d", len(d))
	}
	seen := map[uint64]bool{}
	for _, x := range d {
		if x.Addr%testFrameSize != DataStart || x.Len != 0 {
			t.Fatalf("desc %+v: want Addr at frame+%d, Len 0", x, DataStart)
		}
		if seen[x.Addr] {
			t.Fatalf("frame %#x handed out twice", x.Addr)
		}
		seen[x.Addr] = true
	}
	if q.NumFreeFrames() != 56 {
		t.Fatalf("pool %d, want 56", q.NumFreeFrames())
	}
}

func TestTransmitRefusesDescriptorsOutsideOneFrame(t *testing.T) {
	g := newRig(t, 8)
	q := g.tx(8)
	base := q.Alloc(1)[0].Addr &^ (testFrameSize - 1)
	other := q.Alloc(1)[0].Addr &^ (testFrameSize - 1) // one frame is sent once
	for _, tc := range []struct {
		name string
		d    packetio.Desc
		ok   bool
	}{
		{"past the region", packetio.Desc{Addr: 8 * testFrameSize, Len: 64}, false},
		{"wrapping address", packetio.Desc{Addr: ^uint64(0), Len: 64}, false},
		{"past its frame", packetio.Desc{Addr: base + DataStart, Len: testFrameSize}, false},
		{"one byte past", packetio.Desc{Addr: base + DataStart, Len: testFrameSize - DataStart + 1}, false},
		{"zero length", packetio.Desc{Addr: base + DataStart, Len: 0}, false},
		{"into the mbuf", packetio.Desc{Addr: base + ObjHeader + 8, Len: 64}, false},
		{"at the frame start", packetio.Desc{Addr: base, Len: 64}, false},
		{"inside the headroom", packetio.Desc{Addr: base + BufferStart + 2, Len: 64}, true},
		{"ending at the frame end", packetio.Desc{Addr: other + DataStart, Len: testFrameSize - DataStart}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			free := q.NumFreeFrames()
			n, err := q.Transmit([]packetio.Desc{tc.d})
			if tc.ok != (n == 1) {
				t.Fatalf("Transmit = %d, %v; want accepted=%v", n, err, tc.ok)
			}
			if !tc.ok && !errors.Is(err, packetio.ErrBadLength) {
				t.Fatalf("err = %v, want ErrBadLength", err)
			}
			if q.NumFreeFrames() != free {
				t.Fatal("a refused descriptor touched the pool")
			}
		})
	}
	if q.Err() != nil {
		t.Fatalf("bad descriptors killed the queue: %v", q.Err())
	}
}

func TestTransmitTakesAPrefix(t *testing.T) {
	g := newRig(t, 64)
	q := g.tx(64)
	g.pmd.accept = 3
	d := build(t, q, 8)
	n, err := q.Transmit(d)
	if n != 3 || err != nil {
		t.Fatalf("Transmit = %d, %v; want 3, nil", n, err)
	}
	q.Free(d[n:])
	if q.NumFreeFrames() != 64-3 || q.NumInFlight() != 3 {
		t.Fatalf("free %d in flight %d", q.NumFreeFrames(), q.NumInFlight())
	}
}

func TestFirstBadDescriptorEndsTheBatch(t *testing.T) {
	g := newRig(t, 64)
	q := g.tx(64)
	d := build(t, q, 6)
	d[2].Len = 0
	n, err := q.Transmit(d)
	if n != 2 || !errors.Is(err, packetio.ErrBadLength) {
		t.Fatalf("Transmit = %d, %v; want 2, ErrBadLength", n, err)
	}
}

func TestCompletionsWaitForThreshold(t *testing.T) {
	g := newRig(t, 256)
	q := g.tx(256)
	if n, _ := q.Transmit(build(t, q, 4)); n != 4 {
		t.Fatalf("sent %d", n)
	}
	if got := q.Complete(1 << 20); got != 0 {
		t.Fatalf("4 packets came back before the driver's threshold: %d", got)
	}
	if g.pmd.pokes != 1 || q.NumInFlight() != 4 {
		t.Fatalf("pokes %d in flight %d; want 1, 4", g.pmd.pokes, q.NumInFlight())
	}
	if n, _ := q.Transmit(build(t, q, 64)); n != 64 {
		t.Fatalf("sent %d", n)
	}
	got := 0
	for i := 0; i < 3 && got < 68; i++ {
		got += q.Complete(1 << 20)
	}
	if got != 68 || q.NumInFlight() != 0 || q.NumFreeFrames() != 256 {
		t.Fatalf("completed %d, in flight %d, free %d; want 68, 0, 256", got, q.NumInFlight(), q.NumFreeFrames())
	}
	// Frames waiting in the returned ring are collected without a poke.
	q.Transmit(build(t, q, 40))
	q.Transmit(build(t, q, 1)) // this burst completes the 40
	pokes := g.pmd.pokes
	if got := q.Complete(1 << 20); got != 40 || g.pmd.pokes != pokes {
		t.Fatalf("Complete = %d with %d pokes; want 40 with none", got, g.pmd.pokes-pokes)
	}
	st := q.Stats()
	if st.Completed != 108 || st.Packets != 109 || st.Backend["pool_rejected"] != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestDepthBoundsInFlight(t *testing.T) {
	g := newRig(t, 1024)
	c := g.cfg(1024, 0xa0)
	c.Depth = 64
	q, err := NewTx(c)
	if err != nil {
		t.Fatal(err)
	}
	g.pmd.compThresh = 1 << 30 // never completes
	d := q.Alloc(100)
	if len(d) != 64 {
		t.Fatalf("Alloc past depth gave %d", len(d))
	}
	for i := range d {
		d[i].Len = 64
	}
	if n, _ := q.Transmit(d); n != 64 {
		t.Fatalf("Transmit = %d", n)
	}
	if q.NumFreeSlots() != 0 || q.Alloc(1) != nil || q.Stats().RingFull == 0 {
		t.Fatal("a full ring still hands out frames")
	}
}

func TestForeignCompletionLatchesQueueFailed(t *testing.T) {
	g := newRig(t, 64)
	q := g.tx(64)
	q.Transmit(build(t, q, 4))
	q.cfg.Returned.PushOne(testRegionVA + 1<<40)
	q.Complete(16)
	if !errors.Is(q.Err(), packetio.ErrQueueFailed) {
		t.Fatalf("Err = %v, want ErrQueueFailed", q.Err())
	}
	if d := q.Alloc(4); d != nil {
		t.Fatal("a dead queue allocated")
	}
	if n, err := q.Transmit([]packetio.Desc{{Addr: DataStart, Len: 64}}); n != 0 || !errors.Is(err, packetio.ErrQueueFailed) {
		t.Fatalf("dead Transmit = %d, %v", n, err)
	}
	if q.Stats().Backend["foreign"] != 1 {
		t.Fatal("foreign not counted")
	}
}

func TestMisalignedCompletionLatches(t *testing.T) {
	g := newRig(t, 64)
	q := g.tx(64)
	q.cfg.Returned.PushOne(testRegionVA + ObjHeader + 8) // inside a frame, not its mbuf
	q.Complete(16)
	if !errors.Is(q.Err(), packetio.ErrQueueFailed) {
		t.Fatalf("Err = %v", q.Err())
	}
}

func TestForeignReceiveLatchesQueueFailed(t *testing.T) {
	g := newRig(t, 64)
	q := g.rx(64, 64)
	q.Fill(32)
	g.pmd.foreign = 0x1234
	if d := q.Receive(8); len(d) != 0 {
		t.Fatalf("foreign delivery produced %d descriptors", len(d))
	}
	if !errors.Is(q.Err(), packetio.ErrQueueFailed) || q.Stats().Backend["foreign"] != 1 {
		t.Fatalf("Err = %v", q.Err())
	}
	if q.Fill(8) != 0 || q.Receive(8) != nil || q.Ready() != 0 {
		t.Fatal("a dead receive queue still works")
	}
}

func TestForeignReturnLatchesReceive(t *testing.T) {
	g := newRig(t, 64)
	q := g.rx(64, 64)
	q.cfg.Returned.PushOne(7)
	q.Fill(8)
	if !errors.Is(q.Err(), packetio.ErrQueueFailed) {
		t.Fatalf("Err = %v", q.Err())
	}
}

func TestReceiveDeliversBytesAndFlags(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags uint64
		want  uint32
	}{
		{"none", 0, 0},
		{"l3 only", RxIPCksumGood, packetio.OptL3ChecksumOK},
		{"l3 and l4", RxIPCksumGood | RxL4CksumGood, packetio.OptL3ChecksumOK | packetio.OptChecksumOK},
		{"l4 without l3", RxL4CksumGood, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRig(t, 64)
			c := g.cfg(64, 0xb0)
			c.Supply, c.RxChecksums = NewRing(64), true
			g.pmd.supply = c.Supply
			q, err := NewRx(c)
			if err != nil {
				t.Fatal(err)
			}
			pkt := bytes.Repeat([]byte{0xab, 0xcd}, 50)
			g.pmd.incoming = [][]byte{pkt}
			g.pmd.rxFlags = tc.flags
			q.Fill(q.NumFreeFillSlots())
			d := q.Receive(8)
			if len(d) != 1 || d[0].Len != 100 || d[0].Options != tc.want {
				t.Fatalf("Receive = %+v", d)
			}
			if d[0].Addr%testFrameSize != DataStart || !bytes.Equal(g.region[d[0].Addr:d[0].Addr+100], pkt) {
				t.Fatal("wrong bytes")
			}
			if st := q.Stats(); st.Packets != 1 || st.Bytes != 100 || st.Batches != 1 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestSupplyIsAllOrNothing(t *testing.T) {
	g := newRig(t, 64)
	q := g.rx(64, 64)
	g.pmd.bulk = 8
	q.Fill(3)
	g.pmd.incoming = [][]byte{make([]byte, 60)}
	if d := q.Receive(4); len(d) != 0 || g.pmd.noBuf != 1 {
		t.Fatalf("a short supply delivered %d (noBuf %d)", len(d), g.pmd.noBuf)
	}
	q.Fill(16)
	if d := q.Receive(4); len(d) != 1 {
		t.Fatalf("after Fill: %d", len(d))
	}
}

// TestReceiveAsksForNoMoreThanTheSupplyHolds: with a driver that refills
// before it delivers (net_af_xdp), a supply shorter than the packets waiting
// still delivers as many packets as it holds, and a dry one delivers none
// and is counted by the driver.
func TestReceiveAsksForNoMoreThanTheSupplyHolds(t *testing.T) {
	g := newRig(t, 64)
	q := g.rx(64, 64)
	g.pmd.refillFirst = true
	for range 10 {
		g.pmd.incoming = append(g.pmd.incoming, make([]byte, 60))
	}
	for _, step := range []struct {
		fill, want, noBuf int
	}{
		{3, 3, 0},  // 3 posted, 10 waiting: the 3
		{0, 0, 1},  // none posted: nothing, and the driver counts it
		{16, 7, 1}, // plenty: the 7 left
	} {
		q.Fill(step.fill)
		if d := q.Receive(8); len(d) != step.want || g.pmd.noBuf != step.noBuf {
			t.Fatalf("%d more posted: received %d (noBuf %d), want %d (noBuf %d)", step.fill, len(d), g.pmd.noBuf, step.want, step.noBuf)
		}
	}
}

func TestFillGivesBackWhatTheSupplyRefuses(t *testing.T) {
	g := newRig(t, 64)
	q := g.rx(64, 8)
	for i := 0; i < 51; i++ {
		q.Fill(20)
	}
	if q.NumFreeFrames() != 56 || q.cfg.Supply.Len() != 8 || q.Stats().Backend["pool_rejected"] != 0 {
		t.Fatalf("pool %d supply %d", q.NumFreeFrames(), q.cfg.Supply.Len())
	}
	if q.NumFreeFillSlots() != 0 {
		t.Fatal("fill slots on a full supply")
	}
}

func TestChainedPacketsAreRefused(t *testing.T) {
	g := newRig(t, 64)
	q := g.rx(64, 64)
	g.pmd.chained = true
	g.pmd.incoming = [][]byte{make([]byte, 60)}
	q.Fill(64)
	if d := q.Receive(4); len(d) != 0 {
		t.Fatal("a chained packet was delivered")
	}
	if q.Stats().Backend["chained"] != 1 || q.Err() != nil {
		t.Fatalf("stats %+v, err %v", q.Stats(), q.Err())
	}
}

func TestReadyKeepsTheBurstForReceive(t *testing.T) {
	g := newRig(t, 64)
	q := g.rx(64, 64)
	q.Fill(64)
	g.pmd.incoming = [][]byte{make([]byte, 60), make([]byte, 61), make([]byte, 62)}
	if q.Ready() != 3 {
		t.Fatal("Ready did not see 3")
	}
	a := q.Receive(2)
	if len(a) != 2 || a[0].Len != 60 {
		t.Fatalf("first Receive %+v", a)
	}
	q.Recycle(a)
	if b := q.Receive(8); len(b) != 1 || b[0].Len != 62 {
		t.Fatalf("second Receive %+v", b)
	}
}

// TestForwardedFramesGoHome: frames received on one pool and transmitted on
// another are freed by the driver to the transmitting queue, handed back by
// Reclaim and recycled to the receive pool, leaving the transmit pool as it
// was.
func TestForwardedFramesGoHome(t *testing.T) {
	g := newRig(t, 128)
	rx := g.rx(64, 64)
	tx := g.tx(64)
	rx.Fill(64)
	for i := 0; i < 16; i++ {
		g.pmd.incoming = append(g.pmd.incoming, make([]byte, 64))
	}
	d := rx.Receive(16)
	if n, _ := tx.Transmit(d); n != 16 {
		t.Fatalf("forwarded %d", n)
	}
	var back []packetio.Desc
	for i := 0; i < 3 && len(back) < 16; i++ {
		tx.Transmit(build(t, tx, 32))
		back = tx.Reclaim(1<<20, back)
	}
	var mine []packetio.Desc
	for _, b := range back {
		if rx.Owns(b.Addr) {
			mine = append(mine, b)
		} else {
			tx.Free([]packetio.Desc{b})
		}
	}
	if len(mine) != 16 {
		t.Fatalf("reclaimed %d receive frames, want 16", len(mine))
	}
	rx.Recycle(mine)
	tx.Complete(1 << 20)
	if rx.Stats().Backend["pool_rejected"] != 0 || tx.Stats().Backend["pool_rejected"] != 0 {
		t.Fatal("a pool refused a frame")
	}
	if got := rx.NumFreeFrames() + rx.NumOutstanding(); got != 64 {
		t.Fatalf("receive side holds %d frames, want 64", got)
	}
}

// forward runs one forwarding round: receive, transmit, reclaim, recycle,
// refill. It is the loop the zero-allocation test measures too.
func forward(rx *Rx, tx *Tx, back []packetio.Desc) []packetio.Desc {
	d := rx.Receive(64)
	n, _ := tx.Transmit(d)
	rx.Recycle(d[n:])
	back = tx.Reclaim(1<<20, back[:0])
	rx.Recycle(back)
	rx.Fill(rx.NumFreeFillSlots())
	return back
}

// forwardRounds runs rounds of forward with waiting 100-byte packets
// offered to the driver before each, calls each after it, and fails t the
// first round a frame of rx's 512 is not somewhere: the receive pool, the
// supply, the driver's cache, or in flight on transmit.
func forwardRounds(t *testing.T, g *rig, rx *Rx, tx *Tx, rounds, waiting int, each func(round int)) {
	t.Helper()
	pkt := make([]byte, 100)
	back := make([]packetio.Desc, 0, 512)
	for i := 0; i < rounds; i++ {
		for len(g.pmd.incoming) < waiting {
			g.pmd.incoming = append(g.pmd.incoming, pkt)
		}
		back = forward(rx, tx, back)
		each(i)
		if total := rx.NumFreeFrames() + rx.cfg.Supply.Len() + len(g.pmd.cache) + tx.NumInFlight(); total != 512 {
			t.Fatalf("round %d: %d frames accounted for, want 512", i, total)
		}
	}
}

func TestForwardingCycleConservesFrames(t *testing.T) {
	g := newRig(t, 1024)
	rx := g.rx(512, 512)
	tx := g.tx(512)
	g.pmd.accept = 50 // a short burst now and then
	rx.Fill(512)
	forwardRounds(t, g, rx, tx, 10000, 64, func(int) {})
	if tx.NumFreeFrames() != 512 || rx.Stats().Backend["pool_rejected"] != 0 || tx.Stats().Backend["pool_rejected"] != 0 {
		t.Fatal("a pool gained, lost or refused frames")
	}
	if rx.Stats().Packets < 10000 || rx.Err() != nil || tx.Err() != nil {
		t.Fatalf("forwarded %d, errors %v %v", rx.Stats().Packets, rx.Err(), tx.Err())
	}
}

func TestZeroAllocations(t *testing.T) {
	g := newRig(t, 1024)
	rx := g.rx(512, 512)
	tx := g.tx(512)
	rx.Fill(512)
	pkt := make([]byte, 100)
	back := make([]packetio.Desc, 0, 512)
	g.pmd.incoming = make([][]byte, 0, 1<<16)
	g.pmd.pending = make([]uint64, 0, 1024)
	g.pmd.bulk = 1
	fwd := testing.AllocsPerRun(1000, func() {
		for len(g.pmd.incoming) < 64 {
			g.pmd.incoming = append(g.pmd.incoming, pkt)
		}
		back = forward(rx, tx, back)
	})
	send := testing.AllocsPerRun(1000, func() {
		tx.Complete(1 << 20)
		d := tx.Alloc(32)
		for i := range d {
			d[i].Len = 64
		}
		tx.Transmit(d)
	})
	if fwd != 0 || send != 0 {
		t.Fatalf("allocations per round: forward %v, send %v", fwd, send)
	}
}

// TestOneDriverCallPerBurst counts crossings into the driver: one per
// Transmit and one per Receive, whatever the batch size, and a Poke only
// when nothing has come back.
func TestOneDriverCallPerBurst(t *testing.T) {
	g := newRig(t, 1024)
	rx := g.rx(512, 512)
	tx := g.tx(512)
	rx.Fill(512)
	for _, n := range []int{1, 32, 64, 200} {
		tc, rc := g.pmd.txCalls, g.pmd.rxCalls
		sent, _ := tx.Transmit(build(t, tx, n))
		for i := 0; i < n; i++ {
			g.pmd.incoming = append(g.pmd.incoming, make([]byte, 64))
		}
		got := rx.Receive(n)
		if g.pmd.txCalls-tc != 1 || g.pmd.rxCalls-rc != 1 || sent != n {
			t.Fatalf("batch of %d: %d tx calls, %d rx calls", n, g.pmd.txCalls-tc, g.pmd.rxCalls-rc)
		}
		rx.Recycle(got)
		rx.Fill(512)
		for tx.NumInFlight() > 0 {
			p := g.pmd.pokes
			tx.Complete(1 << 20)
			if g.pmd.pokes-p > 1 {
				t.Fatal("Complete poked more than once")
			}
			if tx.NumInFlight() > 0 {
				tx.Transmit(build(t, tx, 32)) // push past the threshold
			}
		}
	}
}

func TestConfigIsValidated(t *testing.T) {
	g := newRig(t, 8)
	good := g.cfg(8, 0xa)
	for name, mod := range map[string]func(*Config){
		"frame size": func(c *Config) { c.FrameSize = 3000 },
		"range":      func(c *Config) { c.Frames = 9 },
		"depth":      func(c *Config) { c.Depth = 0 },
		"returned":   func(c *Config) { c.Returned = nil },
		"driver":     func(c *Config) { c.PMD = nil },
	} {
		c := good
		mod(&c)
		if _, err := NewTx(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := NewRx(good); err == nil {
		t.Error("receive queue without a supply accepted")
	}
}

// TestResupplyKeepsBorrowedFramesPosted: frames the driver took from the
// supply and freed unreceived (net_af_xdp's transmit copies) go straight
// back to the supply, still posted; anything not of this queue stops the
// move and is left for DrainReturned to refuse.
func TestResupplyKeepsBorrowedFramesPosted(t *testing.T) {
	g := newRig(t, 128)
	tx := g.tx(64)
	q := g.rx(64, 64)
	if n := q.Fill(16); n != 16 {
		t.Fatalf("Fill = %d", n)
	}
	borrowed := make([]uint64, 4)
	if !q.cfg.Supply.PopBulk(borrowed) {
		t.Fatal("supply short")
	}
	for _, va := range borrowed {
		g.pmd.free(va)
	}
	free := q.NumFreeFrames()
	if n := q.Resupply(nil); n != 4 {
		t.Fatalf("Resupply moved %d, want 4", n)
	}
	if q.cfg.Supply.Len() != 16 || q.cfg.Returned.Len() != 0 || q.NumOutstanding() != 16 || q.NumFreeFrames() != free {
		t.Fatalf("supply %d returned %d outstanding %d free %d", q.cfg.Supply.Len(), q.cfg.Returned.Len(), q.NumOutstanding(), q.NumFreeFrames())
	}
	if n := q.Resupply(nil); n != 0 {
		t.Fatalf("Resupply of nothing moved %d", n)
	}
	// A transmit queue's frame in this pool's ring is not this queue's.
	d := tx.Alloc(1)
	q.cfg.Supply.PopBulk(borrowed[:1])
	q.cfg.Returned.PushOne(borrowed[0])
	q.cfg.Returned.PushOne(testRegionVA + d[0].Addr&^(testFrameSize-1) + ObjHeader)
	q.cfg.Returned.PushOne(borrowed[0])
	if n := q.Resupply(nil); n != 1 {
		t.Fatalf("Resupply moved %d past a foreign frame, want 1", n)
	}
	if q.cfg.Returned.Len() != 2 {
		t.Fatalf("returned holds %d, want the foreign frame and the one after it", q.cfg.Returned.Len())
	}
	q.Fill(0)
	if q.Stats().Backend["pool_rejected"] == 0 && q.Err() == nil {
		t.Fatal("DrainReturned took a transmit queue's frame without complaint")
	}
}

// TestBrokenRingIndicesNeverPanic: a driver that overruns a ring leaves
// more entries than it holds; Push then takes nothing rather than move the
// tail backwards and hand its caller a negative count.
func TestBrokenRingIndicesNeverPanic(t *testing.T) {
	var head, tail uint32 = 0, 100
	r := NewRingOver(make([]uint64, 8), &head, &tail)
	if r.Room() != 0 {
		t.Fatalf("Room = %d on an overrun ring", r.Room())
	}
	if n := r.Push([]uint64{1, 2, 3}); n != 0 || tail != 100 {
		t.Fatalf("Push = %d, tail %d", n, tail)
	}
	if r.PushOne(1) {
		t.Fatal("PushOne took an entry on an overrun ring")
	}
}

// TestSupplyDepth: Prime posts past SupplyDepth (a driver's setup may take
// a ring's worth), Trim takes the surplus back into the pool, newest
// first, Fill never posts past it, and a forwarding cycle on a shallow
// supply conserves every frame with the driver never short of a buffer.
func TestSupplyDepth(t *testing.T) {
	g := newRig(t, 1024)
	rx := g.rx(512, 512)
	tx := g.tx(512)
	rx.cfg.SupplyDepth = 64
	if n := rx.Prime(512); n != 512 || rx.cfg.Supply.Len() != 512 {
		t.Fatalf("Prime(512) = %d, supply %d", n, rx.cfg.Supply.Len())
	}
	oldest := rx.cfg.Supply.buf[*rx.cfg.Supply.head&rx.cfg.Supply.mask]
	if n := rx.Trim(); n != 448 || rx.cfg.Supply.Len() != 64 || rx.NumFreeFrames() != 448 || rx.NumOutstanding() != 64 {
		t.Fatalf("Trim = %d: supply %d, pool %d, outstanding %d; want 448, 64, 448, 64", n, rx.cfg.Supply.Len(), rx.NumFreeFrames(), rx.NumOutstanding())
	}
	if got := rx.cfg.Supply.buf[*rx.cfg.Supply.head&rx.cfg.Supply.mask]; got != oldest {
		t.Errorf("Trim took the oldest post (%#x left at the head, want %#x)", got, oldest)
	}
	if rx.Trim() != 0 || rx.NumFreeFillSlots() != 0 || rx.Fill(512) != 0 {
		t.Fatal("a supply at its depth took more")
	}
	forwardRounds(t, g, rx, tx, 2000, 48, func(i int) {
		if s := rx.cfg.Supply.Len(); s > 64 {
			t.Fatalf("round %d: supply %d, past its depth of 64", i, s)
		}
	})
	if g.pmd.noBuf != 0 || rx.Stats().Packets < 2000*32 || rx.Stats().Backend["pool_rejected"] != 0 || rx.Err() != nil || tx.Err() != nil {
		t.Fatalf("driver short of buffers %d times, %d forwarded, rejected %d, errors %v %v", g.pmd.noBuf, rx.Stats().Packets, rx.Stats().Backend["pool_rejected"], rx.Err(), tx.Err())
	}
}

// TestRingUnpush: the producer takes back its newest entries, newest
// first, and never more than the ring holds.
func TestRingUnpush(t *testing.T) {
	r := NewRing(8)
	r.Push([]uint64{1, 2, 3, 4, 5})
	if got := r.Unpush(2, nil); len(got) != 2 || got[0] != 5 || got[1] != 4 || r.Len() != 3 {
		t.Fatalf("Unpush(2) = %v, %d left", got, r.Len())
	}
	r.Push([]uint64{6})
	if got := r.Unpush(10, nil); len(got) != 4 || got[0] != 6 || got[3] != 1 || r.Len() != 0 {
		t.Fatalf("Unpush(10) = %v, %d left", got, r.Len())
	}
	if got := r.Pop(1, nil); len(got) != 0 {
		t.Fatalf("Pop after Unpush took %v", got)
	}
}
