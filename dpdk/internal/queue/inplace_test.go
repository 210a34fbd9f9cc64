package queue

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/packetio/packetio"
)

// xskFake is net_af_xdp's transmit queue as the fake models it: an mbuf of
// the receive queue's pool (its UMEM) is sent in place and freed to that
// pool at completion; any other is copied into a buffer taken from the
// receive queue's supply, freed at once, and the buffer freed to the
// receive pool at completion. In front of it sits what the dpdk package's
// xskTx does under the pair's lock: put borrowed buffers back, hand lent
// frames to the transmit queue, mark the burst lent, unmark what the driver
// did not take.
type xskFake struct {
	*fakePMD
	rx       *Rx
	rxPool   uint64
	returned *Ring // the transmit queue's
	copies   int
}

func (x *xskFake) settle() {
	x.rx.Resupply(x.returned)
	x.rx.ReturnLent(x.returned)
}

func (x *xskFake) TxBurst(mbufs []uint64) int {
	x.settle()
	x.rx.LendFrames(mbufs)
	n := x.burst(mbufs)
	x.rx.UnlendFrames(mbufs[n:])
	x.settle()
	return n
}

func (x *xskFake) Poke() { x.fakePMD.Poke(); x.settle() }

// burst is the driver's af_xdp_tx_zc.
func (x *xskFake) burst(mbufs []uint64) int {
	f := x.fakePMD
	f.txCalls++
	f.complete()
	n := len(mbufs)
	if f.accept > 0 && n > f.accept {
		n = f.accept
	}
	for i, va := range mbufs[:n] {
		m := va - testRegionVA
		if ne.Uint64(f.r[m+offPool:]) == x.rxPool {
			f.pending = append(f.pending, va)
			continue
		}
		var buf [1]uint64
		if !x.rx.cfg.Supply.PopBulk(buf[:]) {
			return i
		}
		dataOff, _, l, _ := f.r.rxRead(m)
		b := buf[0] - testRegionVA
		f.r.prepareTx(b, x.rxPool, txRearm|Headroom, uint32(l), 0, 0)
		copy(f.r[b+MbufSize+Headroom:], f.r[m+MbufSize+uint64(dataOff):][:l])
		x.copies++
		f.free(va)
		f.pending = append(f.pending, buf[0])
	}
	return n
}

// xskRig is a receive queue and a transmit queue paired as net_af_xdp
// pairs them: with inPlace the transmit queue sends the receive queue's
// frames in place, and with hosted its own frames are in the receive
// queue's pool too, as the dpdk package lays a pair out.
func xskRig(t testing.TB, inPlace, hosted bool) (*Rx, *Tx, *xskFake) {
	t.Helper()
	g := newRig(t, 1024)
	rx := g.rx(512, 512)
	tc := g.cfg(512, 0xa000+uint64(g.next))
	if hosted {
		// The driver frees them into the receive queue's returned
		// ring; the transmit queue's own ring only gets what
		// ReturnLent hands it.
		tc.PoolVA, tc.Returned = rx.cfg.PoolVA, NewRing(1024)
	}
	x := &xskFake{fakePMD: g.pmd, rx: rx, rxPool: rx.cfg.PoolVA, returned: tc.Returned}
	tc.PMD = x
	tx, err := NewTx(tc)
	if err != nil {
		t.Fatal(err)
	}
	if inPlace || hosted {
		s := rx.Lend()
		if inPlace {
			if err := tx.SendInPlace(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	if hosted {
		if err := rx.HostFrames(Span{FirstFrame: tc.FirstFrame, Frames: tc.Frames, PoolVA: tc.PoolVA}); err != nil {
			t.Fatal(err)
		}
	}
	rx.Fill(512)
	return rx, tx, x
}

func (x *xskFake) feed(n int) {
	for i := 0; i < n; i++ {
		x.incoming = append(x.incoming, make([]byte, 64))
	}
}

// TestForwardedFramesAreSentInPlace: a frame received on the paired queue
// and transmitted goes to the driver with the receive queue's pool, so the
// driver copies nothing, and comes back through the transmit queue's
// Reclaim like any other frame. Without SendInPlace every forwarded frame
// is copied.
func TestForwardedFramesAreSentInPlace(t *testing.T) {
	for _, inPlace := range []bool{false, true} {
		rx, tx, x := xskRig(t, inPlace, false)
		x.feed(16)
		d := rx.Receive(16)
		if n, err := tx.Transmit(d); n != 16 || err != nil {
			t.Fatalf("forwarded %d, %v", n, err)
		}
		wantCopies, wantInPlace := 16, uint64(0)
		if inPlace {
			wantCopies, wantInPlace = 0, 16
		}
		if x.copies != wantCopies || tx.Stats().Backend["sent_in_place"] != wantInPlace {
			t.Fatalf("in place %v: the driver copied %d, sent_in_place %d; want %d, %d", inPlace, x.copies, tx.Stats().Backend["sent_in_place"], wantCopies, wantInPlace)
		}
		x.compThresh = 1
		var back []packetio.Desc
		for i := 0; i < 3 && len(back) < 16; i++ {
			back = tx.Reclaim(1<<20, back)
		}
		if len(back) != 16 || tx.NumInFlight() != 0 {
			t.Fatalf("in place %v: reclaimed %d of 16, %d still in flight", inPlace, len(back), tx.NumInFlight())
		}
		for _, b := range back {
			if !rx.Owns(b.Addr) {
				t.Fatalf("in place %v: reclaimed %#x, not a receive frame", inPlace, b.Addr)
			}
		}
		rx.Recycle(back)
		rx.Fill(0)
		if got := rx.NumFreeFrames() + rx.NumOutstanding(); got != 512 || rx.Err() != nil || tx.Err() != nil {
			t.Fatalf("in place %v: receive side holds %d frames, want 512; errors %v, %v", inPlace, got, rx.Err(), tx.Err())
		}
	}
}

// TestLentFramesSurviveFill: a lent frame the driver freed is in the
// receive queue's returned ring; a Fill there before the transmit queue's
// next burst must not take it into the receive pool.
func TestLentFramesSurviveFill(t *testing.T) {
	rx, tx, x := xskRig(t, true, false)
	x.feed(8)
	d := rx.Receive(8)
	tx.Transmit(d)
	x.compThresh = 1
	x.fakePMD.Poke() // the driver completes them; nothing settles yet
	if rx.cfg.Returned.Len() != 8 {
		t.Fatalf("returned ring holds %d, want the 8 sent", rx.cfg.Returned.Len())
	}
	free := rx.NumFreeFrames()
	rx.Fill(0)
	if rx.NumFreeFrames() != free || rx.NumLentBack() != 8 {
		t.Fatalf("Fill took lent frames: free %d (was %d), waiting to go back %d", rx.NumFreeFrames(), free, rx.NumLentBack())
	}
	if back := tx.Reclaim(1<<20, nil); len(back) != 8 {
		t.Fatalf("reclaimed %d, want 8", len(back))
	}
}

// TestInPlaceForwardingConservesFrames: forwarding mixed with the transmit
// queue's own frames, the driver taking short bursts now and then, keeps
// every frame somewhere and leaves no frame marked lent; with the
// transmit queue's frames hosted, the driver copies nothing.
func TestInPlaceForwardingConservesFrames(t *testing.T) {
	for _, hosted := range []bool{false, true} {
		t.Run(fmt.Sprintf("hosted=%v", hosted), func(t *testing.T) { inPlaceForwardingConservesFrames(t, hosted) })
	}
}

func inPlaceForwardingConservesFrames(t *testing.T, hosted bool) {
	rx, tx, x := xskRig(t, true, hosted)
	x.accept = 50
	back := make([]packetio.Desc, 0, 512)
	for i := 0; i < 5000; i++ {
		x.feed(64 - len(x.incoming))
		d := rx.Receive(64)
		n, _ := tx.Transmit(d)
		rx.Recycle(d[n:])
		back = sendHome(rx, tx, tx.Reclaim(1<<20, back[:0]))
		rx.Fill(rx.NumFreeFillSlots())
		if i%7 == 0 {
			d := build(t, tx, 8)
			n, _ := tx.Transmit(d)
			tx.Free(d[n:])
		}
		total := rx.NumFreeFrames() + rx.cfg.Supply.Len() + len(x.cache) + inRing(rx, rx.lent.back) + inRing(rx, rx.cfg.Returned)
		for _, va := range x.pending {
			if _, ok := rx.ownMbuf(va); ok {
				total++
			}
		}
		if total+inRing(rx, tx.cfg.Returned) != 512 {
			t.Fatalf("round %d: %d receive frames accounted for, want 512", i, total+inRing(rx, tx.cfg.Returned))
		}
	}
	x.compThresh = 1
	for i := 0; i < 10 && tx.NumInFlight() > 0; i++ {
		back = sendHome(rx, tx, tx.Reclaim(1<<20, back[:0]))
	}
	rx.Fill(0)
	if rx.NumFreeFrames()+rx.NumOutstanding() != 512 || tx.NumFreeFrames() != 512 {
		t.Fatalf("receive %d + %d, transmit %d: a pool gained or lost frames", rx.NumFreeFrames(), rx.NumOutstanding(), tx.NumFreeFrames())
	}
	for i, w := range rx.lent.marks {
		if w != 0 {
			t.Fatalf("marks word %d = %#x after everything came back", i, w)
		}
	}
	s := tx.Stats()
	if s.Backend["sent_in_place"] == 0 || (x.copies == 0) != hosted || rx.Stats().Backend["pool_rejected"] != 0 || s.Backend["pool_rejected"] != 0 || rx.Err() != nil || tx.Err() != nil {
		t.Fatalf("in place %d, copies %d (own frames, hosted %v), rx %v, tx %v", s.Backend["sent_in_place"], x.copies, hosted, rx.Stats().Backend, s.Backend)
	}
}

// TestHostedFramesAreSentWithoutACopy: a program that only transmits, its
// frames in the receive queue's pool, sends many times its frames with no
// copy and no receive buffer borrowed; every frame comes back to the
// transmit queue's pool, none to the receive queue's.
func TestHostedFramesAreSentWithoutACopy(t *testing.T) {
	for _, hosted := range []bool{false, true} {
		rx, tx, x := xskRig(t, false, hosted)
		supply := rx.cfg.Supply.Len()
		const rounds = 200 // 6,400 frames through 512
		for i := 0; i < rounds; i++ {
			d := build(t, tx, 32)
			if n, err := tx.Transmit(d); n != len(d) || len(d) != 32 || err != nil {
				t.Fatalf("hosted %v, round %d: sent %d of %d, %v", hosted, i, n, len(d), err)
			}
			tx.Complete(1 << 20)
		}
		x.compThresh = 1
		for i := 0; i < 10 && tx.NumInFlight() > 0; i++ {
			tx.Complete(1 << 20)
		}
		rx.Fill(0)
		wantCopies := rounds * 32
		if hosted {
			wantCopies = 0
		}
		if x.copies != wantCopies || tx.NumFreeFrames() != 512 || tx.NumInFlight() != 0 || tx.Stats().Packets != rounds*32 {
			t.Fatalf("hosted %v: %d copies (want %d), transmit pool %d of 512, %d in flight, %d sent", hosted, x.copies, wantCopies, tx.NumFreeFrames(), tx.NumInFlight(), tx.Stats().Packets)
		}
		if hosted && rx.cfg.Supply.Len() != supply {
			t.Fatalf("supply %d, was %d: a receive buffer was borrowed", rx.cfg.Supply.Len(), supply)
		}
		if rx.NumFreeFrames()+rx.NumOutstanding() != 512 || rx.Err() != nil || tx.Err() != nil || rx.Stats().Backend["pool_rejected"] != 0 {
			t.Fatalf("hosted %v: receive side %d + %d frames; errors %v, %v; rx %v", hosted, rx.NumFreeFrames(), rx.NumOutstanding(), rx.Err(), tx.Err(), rx.Stats().Backend)
		}
	}
}

// TestResupplyHandsFramesStraightBack: the transmit queue's frames the
// driver freed into the receive queue's ring go straight onto the ring
// Resupply is given, the transmit queue's, while it has room; the rest,
// and all of them when Resupply runs on the receive side (no ring), wait
// in the hand-back ring for ReturnLent. None is lost, none is posted for
// receive, and a frame coming back twice fails the queue.
func TestResupplyHandsFramesStraightBack(t *testing.T) {
	rx, tx, _ := xskRig(t, false, true)
	supply := rx.cfg.Supply.Len()
	mbufOf := func(d packetio.Desc) uint64 { return testRegionVA + d.Addr&^(testFrameSize-1) + ObjHeader }
	d := tx.Alloc(10)
	if len(d) != 10 {
		t.Fatalf("Alloc(10) = %d frames", len(d))
	}
	for _, f := range d[:6] {
		rx.cfg.Returned.PushOne(mbufOf(f))
	}
	to := NewRing(4)
	if n := rx.Resupply(to); n != 0 {
		t.Fatalf("Resupply posted %d of the transmit queue's frames for receive", n)
	}
	if to.Len() != 4 || rx.NumLentBack() != 2 || rx.cfg.Returned.Len() != 0 {
		t.Fatalf("given ring %d (want 4), hand-back %d (want 2), returned %d (want 0)", to.Len(), rx.NumLentBack(), rx.cfg.Returned.Len())
	}
	for _, f := range d[6:] {
		rx.cfg.Returned.PushOne(mbufOf(f))
	}
	rx.Resupply(nil) // the receive side
	if rx.NumLentBack() != 6 {
		t.Fatalf("hand-back %d after the receive side's Resupply, want 6", rx.NumLentBack())
	}
	got := to.Pop(4, nil)
	for rx.NumLentBack() > 0 {
		if rx.ReturnLent(to) == 0 {
			t.Fatal("ReturnLent moved nothing into a ring with room")
		}
		got = to.Pop(4, got)
	}
	want := map[uint64]bool{}
	for _, f := range d {
		want[mbufOf(f)] = true
	}
	for _, va := range got {
		if !want[va] {
			t.Fatalf("%#x came back, not one of the frames sent or twice", va)
		}
		delete(want, va)
	}
	if len(want) != 0 || rx.cfg.Supply.Len() != supply || rx.Err() != nil {
		t.Fatalf("%d frames not back; supply %d, was %d; %v", len(want), rx.cfg.Supply.Len(), supply, rx.Err())
	}
	// The hand-back ring holds every frame once: a frame freed twice
	// while it waits there fails the queue.
	full := NewRing(1)
	full.PushOne(1)
	for i := 0; i <= rx.lent.back.Cap(); i++ {
		rx.cfg.Returned.PushOne(mbufOf(d[0]))
		rx.Resupply(full)
	}
	if err := rx.Err(); !errors.Is(err, packetio.ErrQueueFailed) || !strings.Contains(err.Error(), "came back twice") {
		t.Fatalf("Err = %v after a frame came back more often than the ring holds frames", err)
	}
}

// TestHostFramesRefusesABadSpan: a span outside the region, overlapping
// the queue's own frames, with another pool, or given before Lend, is
// refused before the driver can free one.
func TestHostFramesRefusesABadSpan(t *testing.T) {
	g := newRig(t, 64)
	rx := g.rx(16, 16) // frames [0, 16)
	pool := rx.cfg.PoolVA
	if err := rx.HostFrames(Span{FirstFrame: 16, Frames: 8, PoolVA: pool}); err == nil {
		t.Error("HostFrames before Lend accepted")
	}
	rx.Lend()
	for _, s := range []Span{
		{FirstFrame: 60, Frames: 8, PoolVA: pool},
		{FirstFrame: -1, Frames: 8, PoolVA: pool},
		{FirstFrame: 16, Frames: 0, PoolVA: pool},
		{FirstFrame: 8, Frames: 16, PoolVA: pool},
		{FirstFrame: 16, Frames: 8, PoolVA: pool + 1},
	} {
		if err := rx.HostFrames(s); err == nil {
			t.Errorf("HostFrames(%+v) accepted", s)
		}
	}
	if err := rx.HostFrames(Span{FirstFrame: 16, Frames: 8, PoolVA: pool}); err != nil {
		t.Errorf("HostFrames of the frames after the queue's: %v", err)
	}
	rx.lent.back.PushOne(testRegionVA + 16*testFrameSize + ObjHeader) // one on its way back
	if err := rx.HostFrames(Span{FirstFrame: 16, Frames: 8, PoolVA: pool}); err == nil {
		t.Error("HostFrames with a frame waiting to go back accepted")
	}
}

// sendHome gives reclaimed frames back to the queue they belong to.
func sendHome(rx *Rx, tx *Tx, back []packetio.Desc) []packetio.Desc {
	for _, b := range back {
		if rx.Owns(b.Addr) {
			rx.Recycle([]packetio.Desc{b})
		} else {
			tx.Free([]packetio.Desc{b})
		}
	}
	return back
}

// inRing counts the receive queue's frames waiting in r.
func inRing(rx *Rx, r *Ring) int {
	n := 0
	for i := 0; i < r.Len(); i++ {
		if _, ok := rx.ownMbuf(r.buf[(*r.head+uint32(i))&r.mask]); ok {
			n++
		}
	}
	return n
}

// TestSendInPlaceRefusesASpanOutsideTheRegion: a span the region does not
// hold, or with no pool, is refused before any transmit uses it.
func TestSendInPlaceRefusesASpanOutsideTheRegion(t *testing.T) {
	g := newRig(t, 64)
	tx := g.tx(32)
	for _, s := range []Span{
		{FirstFrame: 32, Frames: 64, PoolVA: 1},
		{FirstFrame: -1, Frames: 8, PoolVA: 1},
		{FirstFrame: 32, Frames: 0, PoolVA: 1},
		{FirstFrame: 32, Frames: 8},
	} {
		if err := tx.SendInPlace(s); err == nil {
			t.Errorf("SendInPlace(%+v) accepted", s)
		}
	}
}

func TestInPlaceForwardingAllocatesNothing(t *testing.T) {
	rx, tx, x := xskRig(t, true, true)
	x.compThresh = 1
	back := make([]packetio.Desc, 0, 512)
	pkts := make([][]byte, 64)
	for i := range pkts {
		pkts[i] = make([]byte, 64)
	}
	x.incoming = make([][]byte, 0, 64)
	x.pending = make([]uint64, 0, 1024)
	if a := testing.AllocsPerRun(200, func() {
		x.incoming = append(x.incoming[:0], pkts...)
		back = forward(rx, tx, back)
	}); a != 0 {
		t.Fatalf("%v allocations per forwarding round", a)
	}
}
