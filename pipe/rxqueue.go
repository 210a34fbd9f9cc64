package pipe

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/pool"
)

// rxQueue receives one lane. Its fill ring is produced by Fill and consumed
// by the far side's transmit goroutine; its receive ring the other way round.
type rxQueue struct {
	dev    *Device
	idx    int
	pool   *pool.Frames
	fill   *spsc[uint64]
	ring   *spsc[packetio.Desc]
	notify chan struct{}
	done   chan struct{} // closed by Close, to wake Poll
	timer  *time.Timer

	closed    atomic.Bool
	closeOnce sync.Once
	addrs     []uint64
	out       []packetio.Desc

	packets, bytes, filled, batches, polls, poolEmpty atomic.Uint64
	errors                                            atomic.Uint64
	dropped, wireDropped, tooBig                      atomic.Uint64 // written by the far side
}

func newRxQueue(d *Device, i int, p *pool.Frames, ring int) *rxQueue {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &rxQueue{
		dev: d, idx: i, pool: p,
		fill:   newSPSC[uint64](ring),
		ring:   newSPSC[packetio.Desc](ring),
		notify: make(chan struct{}, 1),
		done:   make(chan struct{}),
		timer:  t,
		addrs:  make([]uint64, 0, ring),
		out:    make([]packetio.Desc, 0, ring),
	}
}

func (q *rxQueue) Region() packetio.Region { return q.dev.region }

func (q *rxQueue) Fill(n int) int {
	if q.closed.Load() || n <= 0 {
		return 0
	}
	n = min(n, q.fill.free())
	if n == 0 {
		return 0
	}
	q.addrs = q.pool.PopFill(n, q.addrs[:0])
	if len(q.addrs) == 0 {
		q.poolEmpty.Add(1)
		return 0
	}
	for _, a := range q.addrs {
		q.fill.push(a)
	}
	q.fill.publish()
	q.filled.Add(uint64(len(q.addrs)))
	return len(q.addrs)
}

func (q *rxQueue) Poll(timeout time.Duration) (int, error) {
	q.polls.Add(1)
	for {
		if q.closed.Load() {
			return 0, q.dev.opErr("poll", q.idx, packetio.ErrClosed)
		}
		if n := q.ring.ready(); n > 0 || timeout == 0 {
			return n, nil
		}
		if timeout < 0 {
			select {
			case <-q.notify:
			case <-q.done:
			}
			continue
		}
		q.timer.Reset(timeout)
		select {
		case <-q.notify:
			q.timer.Stop()
		case <-q.done:
			q.timer.Stop()
		case <-q.timer.C:
			timeout = 0 // one last look
		}
	}
}

func (q *rxQueue) Receive(max int) []packetio.Desc {
	q.out = q.out[:0]
	if q.closed.Load() {
		return q.out
	}
	n := min(max, q.ring.ready())
	if n <= 0 {
		return q.out
	}
	var b uint64
	for i := 0; i < n; i++ {
		d := q.ring.take()
		b += uint64(d.Len)
		q.out = append(q.out, d)
	}
	q.ring.release()
	if pool.Checked() {
		q.taken(q.out)
	}
	q.packets.Add(uint64(n))
	q.bytes.Add(b)
	q.batches.Add(1)
	return q.out
}

// taken records that the caller holds the received frames
// (packetio_checked builds). The wire only delivers into posted frames, so a
// refusal is a bug of the pipe itself, counted in RxStats.Errors.
func (q *rxQueue) taken(descs []packetio.Desc) {
	for _, d := range descs {
		if !q.pool.Take(pool.OpReceive, q.pool.Base(d.Addr)) {
			q.errors.Add(1)
		}
	}
}

func (q *rxQueue) Err() error {
	if q.closed.Load() {
		return q.dev.opErr("receive", q.idx, packetio.ErrClosed)
	}
	if err := q.pool.Misuse(); err != nil {
		return q.dev.opErr("recycle", q.idx, err)
	}
	return nil
}

// Recycle returns received frames to the pool. A zero Desc, a foreign frame
// and (packetio_checked) one the caller does not hold are refused and
// counted in Backend["pool_rejected"].
func (q *rxQueue) Recycle(descs []packetio.Desc) {
	if q.closed.Load() {
		return
	}
	for _, d := range descs {
		if d == (packetio.Desc{}) {
			q.pool.RefuseZero(pool.OpRecycle)
			continue
		}
		q.pool.Push(q.pool.Base(d.Addr))
	}
}

func (q *rxQueue) NumFreeFillSlots() int {
	if q.closed.Load() {
		return 0
	}
	return q.fill.free()
}

func (q *rxQueue) NumReceived() int {
	if q.closed.Load() {
		return 0
	}
	return q.ring.ready()
}

func (q *rxQueue) NumFreeFrames() int { return q.pool.Len() }

func (q *rxQueue) Stats() (packetio.RxStats, error) {
	return packetio.RxStats{
		Packets:   q.packets.Load(),
		Bytes:     q.bytes.Load(),
		Filled:    q.filled.Load(),
		Batches:   q.batches.Load(),
		Polls:     q.polls.Load(),
		PoolEmpty: q.poolEmpty.Load(),
		Dropped:   q.dropped.Load() + q.tooBig.Load(),
		Errors:    q.errors.Load(),
		Backend: map[string]uint64{
			"pool_rejected": q.pool.Rejected(),
			"wire_dropped":  q.wireDropped.Load(),
			"too_big":       q.tooBig.Load(),
		},
	}, nil
}

// Close closes this queue alone and wakes a Poll on it; the device's other
// queues keep working. It is idempotent.
func (q *rxQueue) Close() error {
	q.closeOnce.Do(func() {
		q.closed.Store(true)
		close(q.done)
	})
	return nil
}
