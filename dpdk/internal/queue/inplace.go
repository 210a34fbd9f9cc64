package queue

import (
	"fmt"
	"math/bits"
)

// Sending a receive queue's frames in place.
//
// net_af_xdp sends an mbuf without copying it only when the mbuf belongs to
// the mempool of the receive queue whose socket transmits it (that mempool
// is the socket's UMEM), and frees it back to that mempool when the kernel
// completes it. A forwarded frame written with the transmit queue's own
// pool is copied into a buffer borrowed from the receive queue, on the
// transmitting thread. So the transmit queue writes a frame of its paired
// receive queue with the receive queue's pool (Tx.SendInPlace), and the
// receive queue, whose returned ring the driver then frees it into, tells
// it apart from its own borrowed buffers and hands it back to the transmit
// queue (Rx.Lend, LendFrames, ReturnLent): Complete and Reclaim see it as
// they see any other transmitted frame, so the ownership contract does not
// change.
//
// The transmit queue's own frames go the same way (Rx.HostFrames): when
// they lie in the receive queue's mempool, after its own frames, the
// transmit queue writes them with that pool too, the driver sends them
// without a copy and frees them into the receive queue's returned ring,
// and the receive queue hands every one back, no mark needed: they are
// never its own. Resupply called on the transmit queue's goroutine puts
// them (and lent frames) straight onto the transmit queue's returned ring;
// called on the receive side, it and DrainReturned keep them in a hand-back
// ring for ReturnLent, since only the transmit queue's goroutine may touch
// its returned ring.
//
// Every call here except SendInPlace, Lend and HostFrames runs under the
// lock the driver's two queues share: the lent marks, the receive queue's
// rings and the hand-back ring are touched from both goroutines.

// Span is a run of the region's frames and the mempool that owns them.
type Span struct {
	FirstFrame, Frames int
	// PoolVA is the address of the rte_mempool the frames belong to.
	PoolVA uint64
}

// inPlace is a transmit queue's view of the span it sends in place: byte
// offsets [base, base+size) of the region, and their pool.
type inPlace struct {
	base, size uint64
	pool       uint64
}

// owns reports whether the frame at offset frame is one of the span's.
func (p *inPlace) owns(frame uint64) bool { return frame-p.base < p.size }

// SendInPlace makes Transmit write the frames of s with s's pool, so a
// driver that sends frames of that pool without a copy (net_af_xdp, for
// its paired receive queue's frames) does so. The driver frees them into
// s's pool, whose queue must hand them back through ReturnLent. Call it
// before the first Transmit.
func (t *Tx) SendInPlace(s Span) error {
	fs := uint64(t.cfg.FrameSize)
	base, size := uint64(s.FirstFrame)*fs, uint64(s.Frames)*fs
	if s.FirstFrame < 0 || s.Frames <= 0 || base+size > t.size || s.PoolVA == 0 {
		return fmt.Errorf("%s: in-place span of %d frames from %d with pool %#x is not inside the region", t.cfg.Name, s.Frames, s.FirstFrame, s.PoolVA)
	}
	t.inPlace = inPlace{base: base, size: size, pool: s.PoolVA}
	return nil
}

// lending is a receive queue's record of the frames the driver frees into
// its pool on a transmit queue's behalf: one mark per frame of its own,
// set while the driver holds it after a transmit queue sent it in place;
// the transmit queue's own frames it hosts, which need none; and the ring
// of those the driver has freed, waiting for ReturnLent.
type lending struct {
	marks  []uint64 // bit i: frame i of the queue is lent
	shift  uint     // log2(frame size)
	base   uint64   // offset of the queue's first frame
	hosted inPlace  // the transmit queue's own frames, in this queue's pool
	back   *Ring
}

// Lend prepares the queue for a transmit queue to send its frames in place
// and returns the Span to give that queue's SendInPlace.
func (q *Rx) Lend() Span {
	if q.lent == nil {
		q.lent = &lending{
			marks: make([]uint64, (q.cfg.Frames+63)/64),
			shift: uint(bits.TrailingZeros(uint(q.cfg.FrameSize))),
			base:  uint64(q.cfg.FirstFrame) * uint64(q.cfg.FrameSize),
			back:  NewRing(RingSize(q.cfg.Frames)), // every frame of the queue fits: none is there twice
		}
	}
	return q.Span()
}

// HostFrames records that the frames of s are a transmit queue's own,
// written with this queue's pool (s.PoolVA must be it): the driver frees
// them into this queue's returned ring, and every one goes back to the
// transmit queue through ReturnLent. s must not overlap the queue's own
// frames. Call it, after Lend, before the driver can free one.
func (q *Rx) HostFrames(s Span) error {
	fs := uint64(q.cfg.FrameSize)
	base, size := uint64(s.FirstFrame)*fs, uint64(s.Frames)*fs
	own, ownSize := uint64(q.cfg.FirstFrame)*fs, uint64(q.cfg.Frames)*fs
	switch {
	case q.lent == nil:
		return fmt.Errorf("%s: hosting a transmit queue's frames before Lend", q.cfg.Name)
	case s.FirstFrame < 0 || s.Frames <= 0 || base+size > q.size || s.PoolVA != q.cfg.PoolVA:
		return fmt.Errorf("%s: hosted span of %d frames from %d with pool %#x is not inside the region with this queue's pool %#x", q.cfg.Name, s.Frames, s.FirstFrame, s.PoolVA, q.cfg.PoolVA)
	case base < own+ownSize && own < base+size:
		return fmt.Errorf("%s: hosted span of %d frames from %d overlaps the queue's own %d from %d", q.cfg.Name, s.Frames, s.FirstFrame, q.cfg.Frames, q.cfg.FirstFrame)
	case q.lent.back.Len() > 0:
		return fmt.Errorf("%s: hosting a transmit queue's frames with %d frames already waiting to go back to it", q.cfg.Name, q.lent.back.Len())
	}
	q.lent.hosted = inPlace{base: base, size: size, pool: s.PoolVA}
	q.lent.back = NewRing(RingSize(q.cfg.Frames + s.Frames)) // still every frame once
	return nil
}

// ownMbuf is the frame offset of the driver address va (mbufFrame) and
// whether it is one of this queue's mbufs.
func (q *Rx) ownMbuf(va uint64) (uint64, bool) {
	off, ok := q.mbufFrame(va)
	return off, ok && q.pool.Owns(off)
}

// LendFrames marks the queue's frames among mbufs (a burst about to go to
// the driver) as lent; others are ignored.
func (q *Rx) LendFrames(mbufs []uint64) {
	if q.lent == nil {
		return
	}
	for _, va := range mbufs {
		if off, ok := q.ownMbuf(va); ok {
			i := (off - q.lent.base) >> q.lent.shift
			q.lent.marks[i/64] |= 1 << (i % 64)
		}
	}
}

// UnlendFrames clears the marks LendFrames set on mbufs the driver did not
// take.
func (q *Rx) UnlendFrames(mbufs []uint64) {
	if q.lent == nil {
		return
	}
	for _, va := range mbufs {
		if off, ok := q.ownMbuf(va); ok {
			q.takeLent(off)
		}
	}
}

// takeLent clears the mark of the frame at off and reports whether it was
// set.
func (q *Rx) takeLent(off uint64) bool {
	i := (off - q.lent.base) >> q.lent.shift
	w, b := &q.lent.marks[i/64], uint64(1)<<(i%64)
	if *w&b == 0 {
		return false
	}
	*w &^= b
	return true
}

// backLent routes a returned mbuf at off, a frame offset: a lent frame of
// this queue or a hosted one of the transmit queue goes to to (see
// Resupply) or the hand-back ring, and true is returned; any other frame is
// the caller's to place.
func (q *Rx) backLent(va, off uint64, to *Ring) bool {
	if q.lent == nil || off&q.mask != 0 {
		return false
	}
	if !q.hosts(off) && (!q.pool.Owns(off) || !q.takeLent(off)) {
		return false
	}
	if to == nil || !to.PushOne(va) {
		q.handBack(va, off)
	}
	return true
}

// hosts reports whether off is the start of one of the transmit queue's
// frames that this queue hosts (HostFrames). It is inlined into Resupply's
// loop, where every frame a transmit queue sends comes back.
func (q *Rx) hosts(off uint64) bool {
	return q.lent != nil && q.lent.hosted.owns(off) && off&q.mask == 0
}

// handBack puts a frame for the transmit queue on the hand-back ring, which
// holds every frame once: no room means it came back twice.
func (q *Rx) handBack(va, off uint64) {
	if !q.lent.back.PushOne(va) {
		q.fail("lent frame %#x came back twice", off)
	}
}

// NumLentBack is how many lent frames wait for ReturnLent.
func (q *Rx) NumLentBack() int {
	if q.lent == nil {
		return 0
	}
	return q.lent.back.Len()
}

// ReturnLent moves lent frames the driver has freed into to, the transmit
// queue's returned ring, as many as it has room for, and returns how many.
func (q *Rx) ReturnLent(to *Ring) int {
	if q.lent == nil {
		return 0
	}
	back := q.lent.back
	n := min(back.Len(), to.Room())
	h, t := *back.head, *to.tail
	for i := 0; i < n; i++ {
		to.buf[(t+uint32(i))&to.mask] = back.buf[(h+uint32(i))&back.mask]
	}
	*to.tail = t + uint32(n)
	*back.head = h + uint32(n)
	return n
}
