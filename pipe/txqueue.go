package pipe

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/pool"
)

// txQueue sends on one lane of the wire. The wire is synchronous: a frame is
// on the far side when Transmit returns. Sent frames still wait on a pending
// list until Complete or Reclaim, so the forwarding cycle works and
// NumInFlight tells the truth.
type txQueue struct {
	dev     *Device
	idx     int
	pool    *pool.Frames
	lane    *rxQueue // the peer's receive queue on this lane, or nil
	pending []packetio.Desc
	alloc   []packetio.Desc
	addrs   []uint64
	frames  [][]byte // wire scratch: the batch's bytes
	order   []int    // wire scratch: the WithWire hook's answer
	named   []bool   // wire scratch: which frames the answer named

	packets, bytes, completed, batches atomic.Uint64
	ringFull, poolEmpty, rejected      atomic.Uint64
	noReceiver, refused                atomic.Uint64

	closed    atomic.Bool
	closeOnce sync.Once
}

func newTxQueue(d *Device, i int, p *pool.Frames, ring int) *txQueue {
	return &txQueue{
		dev: d, idx: i, pool: p,
		pending: make([]packetio.Desc, 0, ring),
		alloc:   make([]packetio.Desc, 0, ring),
		addrs:   make([]uint64, 0, ring),
		frames:  make([][]byte, 0, ring),
		order:   make([]int, 0, 2*ring),
		named:   make([]bool, ring),
	}
}

func (q *txQueue) Region() packetio.Region { return q.dev.region }

func (q *txQueue) Alloc(n int) []packetio.Desc {
	q.alloc = q.alloc[:0]
	if q.closed.Load() {
		return q.alloc
	}
	n = min(n, cap(q.pending)-len(q.pending))
	if n <= 0 {
		return q.alloc
	}
	q.addrs = q.pool.Pop(n, q.addrs[:0])
	if len(q.addrs) == 0 {
		q.poolEmpty.Add(1)
	}
	for _, a := range q.addrs {
		q.alloc = append(q.alloc, packetio.Desc{Addr: a})
	}
	return q.alloc
}

func (q *txQueue) Transmit(descs []packetio.Desc) int {
	if q.closed.Load() || len(descs) == 0 {
		return 0
	}
	room := cap(q.pending) - len(q.pending)
	if room == 0 {
		q.ringFull.Add(1)
		return 0
	}
	n := q.prefix(descs[:min(len(descs), room)])
	if n == 0 {
		return 0
	}
	sent := descs[:n]
	q.wire(sent)
	var b uint64
	for _, d := range sent {
		b += uint64(d.Len)
	}
	q.pending = append(q.pending, sent...)
	q.packets.Add(uint64(n))
	q.bytes.Add(b)
	q.batches.Add(1)
	return n
}

// prefix is how many leading descs Transmit may send: it stops at one
// outside a frame (counted in Backend["rejected_descs"]), a zero Desc and
// (packetio_checked) a frame the caller does not hold. Every refusal is
// counted in TxStats.Refused.
func (q *txQueue) prefix(descs []packetio.Desc) int {
	for i, d := range descs {
		ok := true
		switch {
		case d == (packetio.Desc{}):
			q.pool.RefuseZero(pool.OpTransmit)
			ok = false
		case !q.dev.region.inFrame(d):
			q.rejected.Add(1)
			ok = false
		case !q.pool.Send(q.pool.Base(d.Addr)):
			ok = false
		}
		if !ok {
			q.refused.Add(1)
			return i
		}
	}
	return len(descs)
}

// wire copies frames into the frames the far side posted, as a NIC writes
// into posted buffers, and publishes them to its receive ring. A WithWire
// hook decides the order they arrive in, and which are lost or doubled.
func (q *txQueue) wire(sent []packetio.Desc) {
	rx := q.lane
	if rx == nil || rx.closed.Load() {
		q.noReceiver.Add(uint64(len(sent)))
		return
	}
	src := q.dev.region
	q.frames = q.frames[:0]
	for _, d := range sent {
		q.frames = append(q.frames, src.mem[d.Addr:d.Addr+uint64(d.Len):d.Addr+uint64(d.Len)])
	}
	var c wireCounts
	if q.dev.wire == nil {
		for _, f := range q.frames {
			q.deliver(rx, f, &c)
		}
	} else {
		q.order = q.dev.wire(q.frames, q.order[:0])
		named := q.named[:len(q.frames)]
		clear(named)
		for _, i := range q.order {
			if i < 0 || i >= len(q.frames) {
				c.wireDropped++ // a hook naming no frame
				continue
			}
			named[i] = true
			q.deliver(rx, q.frames[i], &c)
		}
		for _, ok := range named {
			if !ok {
				c.wireDropped++ // never named: lost on the wire
			}
		}
	}
	rx.fill.release()
	rx.ring.publish()
	if c != (wireCounts{}) {
		rx.dropped.Add(c.dropped)
		rx.wireDropped.Add(c.wireDropped)
		rx.tooBig.Add(c.tooBig)
	}
	select {
	case rx.notify <- struct{}{}:
	default:
	}
}

// wireCounts are the losses of one batch, added to the receiver's counters
// once.
type wireCounts struct{ dropped, wireDropped, tooBig uint64 }

// deliver puts one frame into the next buffer rx posted.
func (q *txQueue) deliver(rx *rxQueue, frame []byte, c *wireCounts) {
	dst := rx.dev.region
	switch {
	case q.dev.drop != nil && q.dev.drop(frame):
		c.wireDropped++
	case len(frame) > dst.frameSize:
		c.tooBig++
	case rx.fill.ready() == 0 || rx.ring.free() == 0:
		c.dropped++ // no buffer posted: the far NIC drops it
	default:
		addr := rx.fill.take()
		copy(dst.mem[addr:], frame)
		rx.ring.push(packetio.Desc{Addr: addr, Len: uint32(len(frame))})
	}
}

func (q *txQueue) Err() error {
	if q.closed.Load() {
		return q.dev.opErr("transmit", q.idx, packetio.ErrClosed)
	}
	if err := q.pool.Misuse(); err != nil {
		return q.dev.opErr("transmit", q.idx, err)
	}
	return nil
}

func (q *txQueue) Complete(max int) int {
	n := min(max, len(q.pending))
	if n <= 0 || q.closed.Load() {
		return 0
	}
	for _, d := range q.pending[:n] {
		q.pool.Done(q.pool.Base(d.Addr))
	}
	q.dequeue(n)
	return n
}

func (q *txQueue) Reclaim(max int, out []packetio.Desc) []packetio.Desc {
	n := min(max, len(q.pending))
	if n <= 0 || q.closed.Load() {
		return out
	}
	if pool.Checked() {
		for _, d := range q.pending[:n] {
			q.pool.Take(pool.OpReclaim, q.pool.Base(d.Addr))
		}
	}
	out = append(out, q.pending[:n]...)
	q.dequeue(n)
	return out
}

// dequeue drops the first n pending frames, oldest first.
func (q *txQueue) dequeue(n int) {
	rest := copy(q.pending, q.pending[n:])
	q.pending = q.pending[:rest]
	q.completed.Add(uint64(n))
}

// Free returns frames the caller holds to the pool. A foreign frame and
// (packetio_checked) one the caller does not hold are refused and counted
// in TxStats.Refused.
func (q *txQueue) Free(descs []packetio.Desc) {
	if q.closed.Load() {
		return
	}
	var refused uint64
	for _, d := range descs {
		if !q.pool.Put(pool.OpFree, q.pool.Base(d.Addr)) {
			refused++
		}
	}
	if refused != 0 {
		q.refused.Add(refused)
	}
}

func (q *txQueue) NumCompleted() int  { return len(q.pending) }
func (q *txQueue) NumInFlight() int   { return len(q.pending) }
func (q *txQueue) NumFreeSlots() int  { return cap(q.pending) - len(q.pending) }
func (q *txQueue) NumFreeFrames() int { return q.pool.Len() }

func (q *txQueue) SendFunc(count int, build func(i int, frame []byte) int) (int, error) {
	if q.closed.Load() {
		return 0, q.dev.opErr("send", q.idx, packetio.ErrClosed)
	}
	q.Complete(len(q.pending))
	descs := q.Alloc(count)
	built := len(descs)
	for i := range descs {
		frame := q.dev.region.Writable(descs[i])
		n := build(i, frame)
		if n == 0 {
			built = i
			break
		}
		if n < 0 || n > len(frame) {
			q.Free(descs)
			return 0, q.dev.opErr("send", q.idx, fmt.Errorf("%w: build returned %d for a %d-byte frame", packetio.ErrBadLength, n, len(frame)))
		}
		descs[i].Len = uint32(n)
	}
	sent := q.Transmit(descs[:built])
	q.Free(descs[sent:])
	if sent < built && q.closed.Load() {
		// Closed while build ran: say so, not a short count that reads
		// as back-pressure.
		return sent, q.dev.opErr("send", q.idx, packetio.ErrClosed)
	}
	return sent, nil
}

func (q *txQueue) Stats() (packetio.TxStats, error) {
	return packetio.TxStats{
		Packets:   q.packets.Load(),
		Bytes:     q.bytes.Load(),
		Completed: q.completed.Load(),
		Batches:   q.batches.Load(),
		RingFull:  q.ringFull.Load(),
		PoolEmpty: q.poolEmpty.Load(),
		Refused:   q.refused.Load(),
		Backend: map[string]uint64{
			"pool_rejected":  q.pool.Rejected(),
			"rejected_descs": q.rejected.Load(),
			"no_receiver":    q.noReceiver.Load(),
		},
	}, nil
}

// Close closes this queue alone; the device's other queues keep working. It
// is idempotent.
func (q *txQueue) Close() error {
	q.closeOnce.Do(func() { q.closed.Store(true) })
	return nil
}
