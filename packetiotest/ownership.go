package packetiotest

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio"
)

// RunOwnership drives queue 0 of a device from open through steps random
// frame moves: Alloc, Transmit, Complete, Reclaim, Free on the transmit
// queue, Fill, Receive, Recycle on the receive queue (with frames the peer
// of WithPeer sends, or the device itself under WithLoopback), and
// deliberate misuses: a zero Desc (refused in every build), and in a
// packetio_checked build a frame the caller gave away (recycled twice,
// recycled while posted to the fill ring, freed in flight, transmitted from
// the pool). Every misuse must be refused (the frame is not pooled, not
// sent), counted (TxStats.Refused on transmit, RxStats.Errors plus
// Backend["pool_rejected"] on receive) and reported: the queue's Err matches
// packetio.ErrNotOwned and names the first misuse, while the queue keeps
// working. At the end every frame is accounted for: pool, caller and NIC
// add up to what the queues started with.
//
// Under the race detector it runs a tenth of steps.
//
// checked says whether the backend was built with packetio_checked
// (internal/pool.Checked for the backends of this module); without it only
// the legal moves and the zero Desc run.
func RunOwnership(t *testing.T, open OpenFunc, steps int, checked bool, opts ...Option) {
	var o options
	for _, fn := range opts {
		fn(&o)
	}
	d := device(t, open)
	if d == nil {
		return
	}
	var peer Device
	if d.NumRxQueues() > 0 && (o.peer != nil || o.loopback) {
		_, peer = o.sender(t, d)
	}
	w := NewOwnership(t, d, peer, checked)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 18))
	seed := rng.Uint64()
	t.Logf("seed %#x", seed)
	rng = rand.New(rand.NewPCG(seed, 18))
	if raceEnabled {
		steps /= 10
	}
	start := time.Now()
	for i := 0; i < steps; i++ {
		w.Step(rng.Uint32())
		if i%4096 == 0 {
			w.CheckBalance()
		}
	}
	w.Finish()
	el := time.Since(start)
	t.Logf("%s: %d steps in %v (%.0f steps/s), %d misuses refused, %d received, checked %v",
		d.Capabilities().Backend, steps, el.Round(time.Millisecond), float64(steps)/el.Seconds(), w.Misuses, w.Received, checked)
}

// Ownership is the model RunOwnership and the backends' fuzz targets drive:
// which frames the caller holds, which it gave away, and the counters each
// move must leave. Step runs one move chosen by its argument, so a fuzz
// input can choose the sequence.
type Ownership struct {
	t       testing.TB
	tx      packetio.TxQueue
	rx      packetio.RxQueue // nil without receive queues
	peer    packetio.TxQueue // sends to rx; nil without traffic
	checked bool
	fsize   uint64

	txHeld, rxHeld []packetio.Desc
	held           map[uint64]bool // frame numbers the caller holds
	stale          []stale         // frames given away, newest last
	inFlight       int
	txStart        int
	rxStart        int
	refused        uint64 // misuses the transmit queue must have counted
	rejected       uint64 // misuses the receive queue must have counted

	// Misuses counts the refused moves so far, Received the packets.
	Misuses, Received int
}

// stale is a descriptor the caller gave away and what it came from.
type stale struct {
	d  packetio.Desc
	rx bool
}

// NewOwnership starts the model on queue 0 of d, with peer's transmit queue
// 0 (nil for none) as the sender that reaches d.
func NewOwnership(t testing.TB, d, peer Device, checked bool) *Ownership {
	w := &Ownership{t: t, tx: d.TxQueue(0), checked: checked, held: map[uint64]bool{},
		fsize: uint64(d.TxQueue(0).Region().FrameSize())}
	w.tx.Complete(1 << 20)
	// Counters carry on from earlier sequences on the same device.
	ts, _ := w.tx.Stats()
	w.refused = ts.Refused
	w.txStart = w.tx.NumFreeFrames() + w.tx.NumInFlight()
	w.inFlight = w.tx.NumInFlight()
	if d.NumRxQueues() > 0 {
		w.rx = d.RxQueue(0)
		w.rxStart = w.rx.NumFreeFrames() + w.posted()
		rs, _ := w.rx.Stats()
		w.rejected = rs.Errors + rs.Backend["pool_rejected"]
	}
	if peer != nil && w.rx != nil {
		w.peer = peer.TxQueue(0)
	}
	return w
}

// posted is how many frames the receive queue's NIC holds: posted and not
// yet received.
func (w *Ownership) posted() int {
	s, _ := w.rx.Stats()
	return int(s.Filled - s.Packets)
}

func (w *Ownership) frame(d packetio.Desc) uint64 { return d.Addr / w.fsize }

// Step runs one move chosen by r: its low byte picks the move, the rest the
// batch size and the descriptors.
func (w *Ownership) Step(r uint32) {
	n := int(r>>8)%8 + 1
	pick := int(r >> 16)
	switch op := r & 0xff; {
	case op < 40:
		w.alloc(n)
	case op < 80:
		w.transmit(n)
	case op < 100:
		w.complete(n)
	case op < 115:
		w.reclaim(n)
	case op < 135:
		w.free(n)
	case op < 160:
		w.fill(n)
	case op < 185:
		w.send(n)
	case op < 210:
		w.receive(n)
	case op < 235:
		w.recycle(n)
	case op < 240:
		w.zero(op&1 == 0)
	default:
		w.misuse(pick)
	}
}

func (w *Ownership) alloc(n int) {
	for _, d := range w.tx.Alloc(n) {
		w.take(d, false)
	}
}

// take records a frame the caller now holds.
func (w *Ownership) take(d packetio.Desc, rx bool) {
	f := w.frame(d)
	if w.held[f] {
		w.t.Fatalf("frame %#x handed to the caller twice (%s)", d.Addr, w.where())
	}
	w.held[f] = true
	if rx {
		w.rxHeld = append(w.rxHeld, d)
	} else {
		w.txHeld = append(w.txHeld, d)
	}
}

// give records frames the caller handed on, and forgets them.
func (w *Ownership) give(ds []packetio.Desc, rx bool) {
	for _, d := range ds {
		delete(w.held, w.frame(d))
		if len(w.stale) == 64 {
			w.stale = append(w.stale[:0], w.stale[32:]...)
		}
		w.stale = append(w.stale, stale{d, rx})
	}
}

func (w *Ownership) transmit(n int) {
	n = min(n, len(w.txHeld))
	batch := w.txHeld[len(w.txHeld)-n:]
	for i := range batch {
		batch[i].Len = uint32(testFrame(w.tx.Region().Writable(batch[i]), uint32(i), 60))
	}
	got := w.tx.Transmit(batch)
	if got < 0 || got > n {
		w.t.Fatalf("Transmit of %d took %d", n, got)
	}
	w.give(batch[:got], false)
	w.inFlight += got
	// The refused suffix stays the caller's.
	w.txHeld = append(w.txHeld[:len(w.txHeld)-n], batch[got:]...)
}

func (w *Ownership) complete(n int) {
	w.inFlight -= w.tx.Complete(n)
}

func (w *Ownership) reclaim(n int) {
	before := w.tx.NumInFlight()
	got := w.tx.Reclaim(n, nil)
	for _, d := range got {
		w.take(d, false)
	}
	w.inFlight -= before - w.tx.NumInFlight()
}

func (w *Ownership) free(n int) {
	n = min(n, len(w.txHeld))
	batch := w.txHeld[len(w.txHeld)-n:]
	w.tx.Free(batch)
	w.give(batch, false)
	w.txHeld = w.txHeld[:len(w.txHeld)-n]
}

func (w *Ownership) fill(n int) {
	if w.rx != nil {
		w.rx.Fill(n)
	}
}

func (w *Ownership) send(n int) {
	if w.peer == nil {
		return
	}
	w.peer.SendFunc(n, func(i int, f []byte) int { return testFrame(f, uint32(i), 60) })
}

func (w *Ownership) receive(n int) {
	if w.rx == nil {
		return
	}
	for _, d := range w.rx.Receive(n) {
		w.take(d, true)
		w.Received++
	}
}

func (w *Ownership) recycle(n int) {
	n = min(n, len(w.rxHeld))
	batch := w.rxHeld[len(w.rxHeld)-n:]
	w.rx.Recycle(batch)
	w.give(batch, true)
	w.rxHeld = w.rxHeld[:len(w.rxHeld)-n]
}

// zero hands a zero Desc to Transmit or (rx) Recycle: refused in every
// build.
func (w *Ownership) zero(rx bool) {
	z := []packetio.Desc{{}}
	if rx && w.rx != nil {
		free := w.rx.NumFreeFrames()
		w.rx.Recycle(z)
		if w.rx.NumFreeFrames() != free {
			w.t.Fatalf("Recycle took a zero Desc")
		}
		w.refusedRx("recycle a zero Desc")
		return
	}
	if w.tx.NumFreeSlots() == 0 {
		return // a full ring refuses everything without looking
	}
	if got := w.tx.Transmit(z); got != 0 {
		w.t.Fatalf("Transmit took a zero Desc")
	}
	w.refusedTx("transmit a zero Desc")
}

// misuse hands on a frame the caller gave away and no longer holds: only a
// checked build can tell.
func (w *Ownership) misuse(pick int) {
	if !w.checked || len(w.stale) == 0 {
		return
	}
	s := w.stale[pick%len(w.stale)]
	if w.held[w.frame(s.d)] {
		return // the caller holds it again: handing it on is legal
	}
	one := []packetio.Desc{s.d}
	switch {
	case s.rx && w.rx != nil:
		// Recycled before: in the pool, or (after a Fill) posted to the
		// fill ring, or received again into a frame the caller holds.
		free := w.rx.NumFreeFrames()
		w.rx.Recycle(one)
		if w.rx.NumFreeFrames() != free {
			w.t.Fatalf("Recycle of frame %#x the caller gave away was taken (%s)", s.d.Addr, w.where())
		}
		w.refusedRx("recycle a frame given away")
	case s.rx:
	case pick&1 == 0:
		free := w.tx.NumFreeFrames()
		w.tx.Free(one)
		if w.tx.NumFreeFrames() != free {
			w.t.Fatalf("Free of frame %#x the caller gave away was taken (%s)", s.d.Addr, w.where())
		}
		w.refusedTx("free a frame given away")
	case w.tx.NumFreeSlots() == 0:
	default:
		if s.d.Len == 0 {
			s.d.Len = 60
			one[0] = s.d
		}
		if got := w.tx.Transmit(one); got != 0 {
			w.t.Fatalf("Transmit of frame %#x the caller gave away was taken (%s)", s.d.Addr, w.where())
		}
		w.refusedTx("transmit a frame given away")
	}
}

func (w *Ownership) refusedTx(what string) {
	w.refused++
	w.Misuses++
	s, _ := w.tx.Stats()
	if s.Refused != w.refused {
		w.t.Fatalf("%s: TxStats.Refused %d, want %d", what, s.Refused, w.refused)
	}
	w.reportedBy(w.tx.Err(), what)
}

func (w *Ownership) refusedRx(what string) {
	w.rejected++
	w.Misuses++
	s, _ := w.rx.Stats()
	if got := s.Errors + s.Backend["pool_rejected"]; got != w.rejected {
		w.t.Fatalf("%s: RxStats.Errors+pool_rejected %d, want %d", what, got, w.rejected)
	}
	w.reportedBy(w.rx.Err(), what)
}

// reportedBy checks that err reports a misuse.
func (w *Ownership) reportedBy(err error, what string) {
	var oe *packetio.OpError
	if !errors.Is(err, packetio.ErrNotOwned) || !errors.As(err, &oe) {
		w.t.Fatalf("%s: Err() = %v, want an OpError matching ErrNotOwned", what, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "frame") || !strings.Contains(msg, "descriptor") && !strings.Contains(msg, "0x") {
		w.t.Fatalf("%s: Err() = %q does not say which frame", what, msg)
	}
}

func (w *Ownership) where() string {
	return "pool " + itoa(w.tx.NumFreeFrames()) + ", in flight " + itoa(w.tx.NumInFlight())
}

func itoa(n int) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

// CheckBalance fails unless the transmit queue's frames add up: pool,
// caller and NIC. The receive side adds up when Filled counts posted
// frames.
func (w *Ownership) CheckBalance() {
	if got := w.tx.NumInFlight(); got != w.inFlight {
		w.t.Fatalf("NumInFlight %d, the caller transmitted %d not yet completed", got, w.inFlight)
	}
	if got := w.tx.NumFreeFrames() + len(w.txHeld) + w.inFlight; got != w.txStart {
		w.t.Fatalf("transmit frames: pool %d + caller %d + NIC %d = %d, want %d",
			w.tx.NumFreeFrames(), len(w.txHeld), w.inFlight, got, w.txStart)
	}
	if w.rx != nil {
		if got := w.rx.NumFreeFrames() + len(w.rxHeld) + w.posted(); got != w.rxStart {
			w.t.Fatalf("receive frames: pool %d + caller %d + NIC %d = %d, want %d",
				w.rx.NumFreeFrames(), len(w.rxHeld), w.posted(), got, w.rxStart)
		}
	}
}

// Drain gives back every frame the caller holds and completes what is in
// flight, then checks the balance: the model is ready for another
// sequence.
func (w *Ownership) Drain() {
	w.free(len(w.txHeld))
	for len(w.rxHeld) > 0 {
		w.recycle(len(w.rxHeld))
	}
	for i := 0; i < 500 && w.tx.NumInFlight() > 0; i++ {
		before := w.tx.NumInFlight()
		w.tx.Complete(1 << 20)
		w.inFlight -= before - w.tx.NumInFlight()
		if w.tx.NumInFlight() > 0 {
			time.Sleep(time.Millisecond)
		}
	}
	w.CheckBalance()
}

// Finish drains, checks the balance and that the queues reported the
// misuses (or stayed healthy when there were none).
func (w *Ownership) Finish() {
	w.Drain()
	if w.tx.NumFreeFrames() != w.txStart {
		w.t.Fatalf("transmit pool holds %d of %d frames after the drain", w.tx.NumFreeFrames(), w.txStart)
	}
	if w.Misuses == 0 && w.tx.Err() != nil {
		w.t.Fatalf("transmit Err %v with no misuse", w.tx.Err())
	}
	if w.rx != nil && w.Misuses == 0 && w.rx.Err() != nil {
		w.t.Fatalf("receive Err %v with no misuse", w.rx.Err())
	}
}
