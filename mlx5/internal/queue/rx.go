package queue

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/callgate"
	"github.com/packetio/packetio/internal/pool"
	"github.com/packetio/packetio/internal/spinwait"
	"github.com/packetio/packetio/mlx5/internal/ring"
)

// RxConfig assembles a receive queue.
type RxConfig struct {
	Iface  string // the interface, for errors
	Index  int    // the queue's index, for errors
	Ring   *ring.Rx
	Region *Region
	Pool   *pool.Frames
	// Stamps says the ring has a device clock, so ReceiveTimestamps
	// returns stamps.
	Stamps bool
	// Pin, when set, runs once, on the queue's first Fill or Receive, on
	// the goroutine that drives it.
	Pin func()
	// Backend holds constant backend counters reported by Stats.
	Backend map[string]uint64
}

// RxQueue is a packetio.RxQueue (and TimestampReceiver) over an mlx5 receive
// ring. Poll spins: no completion event is armed, so there is nothing to
// sleep on (Capabilities().BlockingPoll is false).
type RxQueue struct {
	iface   string
	index   int
	ring    *ring.Rx
	region  *Region
	pool    *pool.Frames
	stamps  bool
	pin     func()
	pinned  bool // only the driving goroutine reads it
	backend map[string]uint64

	addrs []uint64
	descs []packetio.Desc
	ts    []uint64

	// mu orders Poll, which may run on another goroutine, against Close:
	// once Close returns no Poll reads the CQ again, so the device can
	// destroy it. calls does the same for every other call that reads or
	// posts to the rings, without a lock (package callgate).
	mu     sync.Mutex
	closed atomic.Bool
	calls  callgate.Calls

	polls     atomic.Uint64
	poolEmpty atomic.Uint64
}

var _ packetio.TimestampReceiver = (*RxQueue)(nil)

// NewRx assembles a receive queue.
func NewRx(cfg RxConfig) (*RxQueue, error) {
	if cfg.Ring == nil || cfg.Region == nil || cfg.Pool == nil {
		return nil, packetio.NewOpError("open", Backend, cfg.Iface, cfg.Index, fmt.Errorf("%w: a receive queue needs a ring, a region and a pool", packetio.ErrInvalid))
	}
	n := max(cfg.Ring.Entries(), cfg.Pool.Cap())
	return &RxQueue{
		iface:   cfg.Iface,
		index:   cfg.Index,
		ring:    cfg.Ring,
		region:  cfg.Region,
		pool:    cfg.Pool,
		stamps:  cfg.Stamps,
		pin:     cfg.Pin,
		pinned:  cfg.Pin == nil,
		backend: cfg.Backend,
		addrs:   make([]uint64, 0, n),
		descs:   make([]packetio.Desc, 0, n),
		ts:      make([]uint64, 0, n),
	}, nil
}

func (q *RxQueue) firstUse() {
	if !q.pinned {
		q.pinned = true
		q.pin()
	}
}

// Region is the memory this queue's frames live in.
func (q *RxQueue) Region() packetio.Region { return q.region }

// Fill posts up to n pool frames to the card.
func (q *RxQueue) Fill(n int) int {
	if !q.calls.Enter(&q.closed) {
		return 0
	}
	defer q.calls.Exit()
	q.firstUse()
	n = min(n, q.ring.FreeSlots())
	if n <= 0 {
		return 0
	}
	q.addrs = q.pool.PopFill(n, q.addrs[:0])
	if len(q.addrs) == 0 {
		q.poolEmpty.Add(1)
		return 0
	}
	k := q.ring.Fill(q.addrs)
	for _, a := range q.addrs[k:] {
		q.pool.Done(a) // never reached the card
	}
	return k
}

// Poll waits until a packet is ready or timeout passes. It spins, yielding
// the processor between looks and sleeping briefly once it has waited a
// while; a negative timeout spins until a packet arrives or Close.
func (q *RxQueue) Poll(timeout time.Duration) (int, error) {
	q.polls.Add(1)
	return spinwait.Wait(timeout, q.look)
}

// look is one look of Poll: the packets ready, or why there will be none.
func (q *RxQueue) look() (int, error) {
	q.mu.Lock()
	if q.closed.Load() {
		q.mu.Unlock()
		return 0, q.opErr("poll", packetio.ErrClosed)
	}
	n := q.ring.Ready(1 << 30)
	q.mu.Unlock()
	if n > 0 {
		return n, nil
	}
	if err := q.ring.Err(); err != nil {
		return 0, q.opErr("poll", err)
	}
	return 0, nil
}

// Receive returns up to max received packets; buffers of error completions
// go straight back to the pool.
func (q *RxQueue) Receive(max int) []packetio.Desc {
	if !q.calls.Enter(&q.closed) {
		return nil
	}
	defer q.calls.Exit()
	q.firstUse()
	q.descs, _ = q.ring.Receive(max, q.descs[:0], nil)
	q.recycleFailed()
	if pool.Checked() {
		q.taken(q.descs)
	}
	return q.descs
}

// ReceiveTimestamps is Receive plus each packet's arrival time in
// nanoseconds on the card's clock. Without a clock it returns nil, nil.
func (q *RxQueue) ReceiveTimestamps(max int) ([]packetio.Desc, []uint64) {
	if !q.stamps || !q.calls.Enter(&q.closed) {
		return nil, nil
	}
	defer q.calls.Exit()
	q.descs, q.ts = q.ring.Receive(max, q.descs[:0], q.ts[:0])
	q.recycleFailed()
	if pool.Checked() {
		q.taken(q.descs)
	}
	return q.descs, q.ts
}

// recycleFailed returns the buffers of error completions to the pool. It
// appends after the received descriptors and then cuts them off again, so it
// needs no scratch of its own.
func (q *RxQueue) recycleFailed() {
	n := len(q.descs)
	all := q.ring.TakeFailed(q.descs)
	for _, d := range all[n:] {
		q.pool.Done(q.pool.Base(d.Addr))
	}
	q.descs = all[:n]
}

// taken records that the caller holds the received frames
// (packetio_checked builds). The card only fills posted buffers, so a
// refusal is a bug below the queue; the pool reports it through Err.
func (q *RxQueue) taken(descs []packetio.Desc) {
	for _, d := range descs {
		q.pool.Take(pool.OpReceive, q.pool.Base(d.Addr))
	}
}

// Err is nil while healthy; a card failure wraps ErrQueueFailed, and after
// Close it wraps ErrClosed.
func (q *RxQueue) Err() error {
	if q.closed.Load() {
		return q.opErr("receive", packetio.ErrClosed)
	}
	if err := q.ring.Err(); err != nil {
		return q.opErr("receive", err)
	}
	if err := q.pool.Misuse(); err != nil {
		return q.opErr("recycle", err)
	}
	return nil
}

// Recycle returns received frames to the pool. A zero Desc, a foreign frame
// and (packetio_checked) one the caller does not hold, such as a frame
// posted to the card, are refused and counted (pool_rejected); Err reports
// the first misuse.
func (q *RxQueue) Recycle(descs []packetio.Desc) {
	if q.closed.Load() {
		return
	}
	for _, d := range descs {
		if d == (packetio.Desc{}) {
			q.pool.RefuseZero(pool.OpRecycle)
			continue
		}
		q.pool.Put(pool.OpRecycle, q.pool.Base(d.Addr))
	}
}

// NumFreeFillSlots is how many more frames Fill can post now.
func (q *RxQueue) NumFreeFillSlots() int {
	if q.closed.Load() {
		return 0
	}
	return min(q.ring.FreeSlots(), q.pool.Len())
}

// NumReceived is how many packets Receive could return now (error
// completions included, which Receive drops).
func (q *RxQueue) NumReceived() int {
	if !q.calls.Enter(&q.closed) {
		return 0
	}
	defer q.calls.Exit()
	return q.ring.Ready(1 << 30)
}

// NumFreeFrames is how many frames the pool holds.
func (q *RxQueue) NumFreeFrames() int {
	if q.closed.Load() {
		return 0
	}
	return q.pool.Len()
}

// Stats returns cumulative counters. Safe from any goroutine.
func (q *RxQueue) Stats() (packetio.RxStats, error) {
	c := q.ring.Counters()
	s := packetio.RxStats{
		Packets:     c.Packets.Load(),
		Bytes:       c.Bytes.Load(),
		Filled:      c.Filled.Load(),
		Batches:     c.Batches.Load(),
		Polls:       q.polls.Load(),
		Completions: c.Completions.Load(),
		PoolEmpty:   q.poolEmpty.Load(),
		Errors:      c.Errors.Load(),
		Backend: map[string]uint64{
			"pool_rejected": q.pool.Rejected(),
			"oversize":      c.Oversize.Load(),
			"unexpected":    c.Unexpected.Load(),
			"bad_desc":      c.BadDesc.Load(),
		},
	}
	for k, v := range q.backend {
		s.Backend[k] = v
	}
	if q.closed.Load() {
		return s, q.opErr("rx stats", packetio.ErrClosed)
	}
	return s, nil
}

// Close marks the queue closed and waits out a Poll, and every other call,
// in progress. It is idempotent and safe from any goroutine, but not from
// inside a call on the queue (it would wait for itself).
func (q *RxQueue) Close() error {
	q.mu.Lock()
	q.closed.Store(true)
	q.mu.Unlock()
	callgate.Drain(&q.calls)
	return nil
}

// opErr is the queue's error for op: a *packetio.OpError whose cause is
// err.
func (q *RxQueue) opErr(op string, err error) error {
	return packetio.NewOpError(op, Backend, q.iface, q.index, err)
}
