package queue

import (
	"fmt"
	"sync/atomic"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/callgate"
	"github.com/packetio/packetio/internal/pool"
	"github.com/packetio/packetio/mlx5/internal/ring"
)

// TxConfig assembles a transmit queue.
type TxConfig struct {
	Iface  string       // the interface, for errors
	Index  int          // the queue's index, for errors
	Rings  []*ring.Tx   // one or more hardware send queues; batches go round-robin
	Region *Region      // the frame memory
	Pool   *pool.Frames // this queue's frames
	// Kick, when set, runs after every doorbell. Hardware needs nothing
	// (the doorbell is the kick); the model uses it to do the device's
	// work.
	Kick func()
	// Pin, when set, runs once, on the queue's first Alloc or Transmit,
	// on the goroutine that drives it (CPU placement).
	Pin func()
	// Backend holds constant backend counters reported by Stats (qpn,
	// sq_blocks, ...).
	Backend map[string]uint64
	// MaxLen is the longest packet the link carries (MTU + 14): Transmit
	// refuses a longer descriptor up front. 0 sets no bound.
	MaxLen int
}

// TxQueue is a packetio.TxQueue over mlx5 send rings.
type TxQueue struct {
	iface   string
	index   int
	rings   []*ring.Tx
	next    int
	region  *Region
	pool    *pool.Frames
	kick    func()
	pin     func()
	pinned  bool // only the driving goroutine reads it
	backend map[string]uint64

	addrs  []uint64
	descs  []packetio.Desc
	done   []packetio.Desc
	closed atomic.Bool
	// calls counts the calls in progress that read or post to the rings:
	// Close waits them out before the device destroys them (package
	// callgate).
	calls  callgate.Calls
	maxLen uint32 // the longest packet the link carries

	poolEmpty atomic.Uint64
	refused   atomic.Uint64 // descriptors longer than maxLen, zero or not the caller's, turned away
}

var _ packetio.TxQueue = (*TxQueue)(nil)

// NewTx assembles a transmit queue.
func NewTx(cfg TxConfig) (*TxQueue, error) {
	if len(cfg.Rings) == 0 || cfg.Region == nil || cfg.Pool == nil {
		return nil, packetio.NewOpError("open", Backend, cfg.Iface, cfg.Index, fmt.Errorf("%w: a transmit queue needs rings, a region and a pool", packetio.ErrInvalid))
	}
	slots := 0
	for _, r := range cfg.Rings {
		slots += r.Slots()
	}
	n := cfg.Pool.Cap()
	maxLen := uint32(1<<32 - 1)
	if cfg.MaxLen > 0 {
		maxLen = uint32(min(cfg.MaxLen, 1<<32-1))
	}
	return &TxQueue{
		maxLen:  maxLen,
		iface:   cfg.Iface,
		index:   cfg.Index,
		rings:   cfg.Rings,
		region:  cfg.Region,
		pool:    cfg.Pool,
		kick:    cfg.Kick,
		pin:     cfg.Pin,
		pinned:  cfg.Pin == nil,
		backend: cfg.Backend,
		addrs:   make([]uint64, 0, n),
		descs:   make([]packetio.Desc, 0, n),
		done:    make([]packetio.Desc, 0, max(n, slots)),
	}, nil
}

// Region is the memory this queue's frames live in.
func (q *TxQueue) Region() packetio.Region { return q.region }

// Alloc takes up to n frames, never more than the next Transmit takes.
func (q *TxQueue) Alloc(n int) []packetio.Desc {
	if q.closed.Load() {
		return nil
	}
	if !q.pinned {
		q.pinned = true
		q.pin()
	}
	n = min(n, q.NumFreeSlots())
	q.addrs = q.pool.Pop(n, q.addrs[:0])
	if n > 0 && len(q.addrs) == 0 {
		q.poolEmpty.Add(1)
	}
	q.descs = q.descs[:0]
	for _, a := range q.addrs {
		q.descs = append(q.descs, packetio.Desc{Addr: a})
	}
	return q.descs
}

// Transmit hands a prefix of descs to the card and returns its length. A
// descriptor longer than the link carries (MaxLen) ends the prefix before
// the card sees it, stays the caller's and is counted in Refused. So do a
// zero Desc and (packetio_checked) a frame the caller does not hold, which
// Err reports as ErrNotOwned.
func (q *TxQueue) Transmit(descs []packetio.Desc) int {
	if len(descs) == 0 || !q.calls.Enter(&q.closed) {
		return 0
	}
	defer q.calls.Exit()
	return q.transmit(descs)
}

// transmit is Transmit inside a counted call.
func (q *TxQueue) transmit(descs []packetio.Desc) int {
	if len(descs) == 0 {
		return 0
	}
	if !q.pinned {
		q.pinned = true
		q.pin()
	}
	for i := range descs {
		if descs[i].Len > q.maxLen {
			return q.refuse(descs, i)
		}
		if !q.send(descs[i]) {
			q.refused.Add(1)
			return q.postSent(descs[:i])
		}
	}
	return q.postSent(descs)
}

// send records that the card holds d's frame from now on, or refuses a zero
// Desc and (packetio_checked) a frame the caller does not hold.
func (q *TxQueue) send(d packetio.Desc) bool {
	if d == (packetio.Desc{}) {
		q.pool.RefuseZero(pool.OpTransmit)
		return false
	}
	return q.pool.Send(q.pool.Base(d.Addr))
}

// postSent posts descs, which send gave the card, and hands the frames the
// ring did not take back to the caller (packetio_checked builds).
func (q *TxQueue) postSent(descs []packetio.Desc) int {
	n := 0
	if len(descs) > 0 {
		n = q.post(descs)
	}
	if pool.Checked() {
		for _, d := range descs[n:] {
			q.pool.Take(pool.OpReclaim, q.pool.Base(d.Addr))
		}
	}
	return n
}

// refuse posts descs[:i], which fit the link, and counts descs[i], which
// does not, as refused when the prefix went out whole.
func (q *TxQueue) refuse(descs []packetio.Desc, i int) int {
	n := q.postSent(descs[:i])
	if n == i {
		q.refused.Add(1)
	}
	return n
}

// post hands descs to the next ring and kicks.
func (q *TxQueue) post(descs []packetio.Desc) int {
	r := q.rings[q.next]
	n := r.Post(descs)
	if n > 0 {
		if q.next++; q.next == len(q.rings) {
			q.next = 0
		}
		if q.kick != nil {
			q.kick()
		}
	}
	return n
}

// Err is nil while healthy; a card failure wraps ErrQueueFailed, and after
// Close it wraps ErrClosed.
// In a packetio_checked build it also reports the first frame misuse
// (ErrNotOwned), which does not stop the queue.
func (q *TxQueue) Err() error {
	if err := q.failure(); err != nil {
		return err
	}
	if err := q.pool.Misuse(); err != nil {
		return q.opErr("transmit", err)
	}
	return nil
}

// failure is Err without the misuse: what stops the queue.
func (q *TxQueue) failure() error {
	if q.closed.Load() {
		return q.opErr("transmit", packetio.ErrClosed)
	}
	for i, r := range q.rings {
		if err := r.Err(); err != nil {
			return q.opErr("transmit", fmt.Errorf("ring %d: %w", i, err))
		}
	}
	return nil
}

// Complete returns finished frames to the pool and reports how many.
func (q *TxQueue) Complete(max int) int {
	if !q.calls.Enter(&q.closed) {
		return 0
	}
	defer q.calls.Exit()
	return q.complete(max)
}

// complete is Complete inside a counted call.
func (q *TxQueue) complete(max int) int {
	q.done = q.reap(max, q.done[:0])
	for _, d := range q.done {
		q.pool.Done(q.pool.Base(d.Addr))
	}
	return len(q.done)
}

// reap appends up to max (one completion is never split) finished frames of
// every ring to out.
func (q *TxQueue) reap(max int, out []packetio.Desc) []packetio.Desc {
	start := len(out)
	for _, r := range q.rings {
		done := len(out) - start
		if done >= max {
			break
		}
		out = r.Complete(max-done, out)
	}
	return out
}

// Reclaim is Complete that appends the finished descriptors to out.
func (q *TxQueue) Reclaim(max int, out []packetio.Desc) []packetio.Desc {
	if !q.calls.Enter(&q.closed) {
		return out
	}
	defer q.calls.Exit()
	start := len(out)
	out = q.reap(max, out)
	if pool.Checked() {
		for _, d := range out[start:] {
			q.pool.Take(pool.OpReclaim, q.pool.Base(d.Addr))
		}
	}
	return out
}

// Free returns frames to the pool unsent. A zero Desc, foreign and surplus
// frames and (packetio_checked) one the caller does not hold, such as a
// frame in flight, are refused and counted in Refused and pool_rejected;
// Err reports the first misuse.
func (q *TxQueue) Free(descs []packetio.Desc) {
	if q.closed.Load() {
		return
	}
	var refused uint64
	for _, d := range descs {
		if d == (packetio.Desc{}) {
			q.pool.RefuseZero(pool.OpFree)
			refused++
			continue
		}
		if !q.pool.Put(pool.OpFree, q.pool.Base(d.Addr)) {
			refused++
		}
	}
	if refused != 0 {
		q.refused.Add(refused)
	}
}

// NumCompleted is how many frames Complete would return now.
func (q *TxQueue) NumCompleted() int {
	if !q.calls.Enter(&q.closed) {
		return 0
	}
	defer q.calls.Exit()
	n := 0
	for _, r := range q.rings {
		n += r.Completable()
	}
	return n
}

// NumInFlight is how many frames the card owns.
func (q *TxQueue) NumInFlight() int {
	if q.closed.Load() {
		return 0
	}
	n := 0
	for _, r := range q.rings {
		n += r.InFlight()
	}
	return n
}

// NumFreeSlots is how many frames the next Transmit takes: the room of the
// ring it goes to.
func (q *TxQueue) NumFreeSlots() int {
	if q.closed.Load() {
		return 0
	}
	return q.rings[q.next].FreeSlots()
}

// NumFreeFrames is how many frames the pool holds.
func (q *TxQueue) NumFreeFrames() int {
	if q.closed.Load() {
		return 0
	}
	return q.pool.Len()
}

// SendFunc is the whole transmit cycle in one call.
func (q *TxQueue) SendFunc(count int, build func(i int, frame []byte) int) (int, error) {
	if !q.calls.Enter(&q.closed) {
		return 0, q.opErr("send", packetio.ErrClosed)
	}
	defer q.calls.Exit()
	q.complete(1 << 30)
	if err := q.failure(); err != nil {
		return 0, err
	}
	descs := q.Alloc(count)
	built := 0
	for i := range descs {
		frame := q.region.Writable(descs[i])
		n := build(i, frame)
		if n == 0 {
			break
		}
		if n < 0 || n > len(frame) || uint32(n) > q.maxLen {
			q.Free(descs)
			q.refused.Add(1)
			return 0, q.opErr("send", fmt.Errorf("%w: build returned %d for a %d-byte frame (the link carries %d)", packetio.ErrBadLength, n, len(frame), q.maxLen))
		}
		descs[i].Len = uint32(n)
		built++
	}
	sent := q.transmit(descs[:built])
	q.Free(descs[sent:])
	if sent < built {
		if err := q.failure(); err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// Stats returns cumulative counters. Safe from any goroutine.
func (q *TxQueue) Stats() (packetio.TxStats, error) {
	var s packetio.TxStats
	var bad, stale uint64
	for _, r := range q.rings {
		c := r.Counters()
		s.Packets += c.Packets.Load()
		s.Bytes += c.Bytes.Load()
		s.Completed += c.Completed.Load()
		s.Batches += c.Batches.Load()
		s.Completions += c.Completions.Load()
		s.RingFull += c.RingFull.Load()
		s.Errors += c.Errors.Load()
		bad += c.BadDesc.Load()
		stale += c.Stale.Load() + c.Unexpected.Load()
	}
	s.PoolEmpty = q.poolEmpty.Load()
	s.Refused = q.refused.Load()
	s.Backend = map[string]uint64{
		"rings":             uint64(len(q.rings)),
		"pool_rejected":     q.pool.Rejected(),
		"bad_desc":          bad,
		"stale_completions": stale,
	}
	for k, v := range q.backend {
		s.Backend[k] = v
	}
	for i, r := range q.rings {
		if f := r.Failure(); f != nil {
			s.Backend["last_syndrome"] = uint64(f.Syndrome)
			s.Backend["last_vendor_syndrome"] = uint64(f.VendorSyndrome)
			s.Backend["failed_ring"] = uint64(i)
		}
	}
	if q.closed.Load() {
		return s, q.opErr("tx stats", packetio.ErrClosed)
	}
	return s, nil
}

// Close marks the queue closed and waits until no call on it is in
// progress. It is idempotent and safe from any goroutine. From inside a
// call on the queue (a SendFunc build function), which it would wait for
// forever, it refuses with an error matching packetio.ErrBusy and changes
// nothing. The device releases the hardware after every queue is closed.
func (q *TxQueue) Close() error {
	if err := q.refuseInside(); err != nil {
		return err
	}
	q.closed.Store(true)
	callgate.Drain(&q.calls)
	return nil
}

// refuseInside is Close's refusal when the calling goroutine runs inside
// a SendFunc of the open queue (its build function), which Close would
// wait for forever; nil otherwise.
func (q *TxQueue) refuseInside() error {
	if q.closed.Load() || !q.calls.HoldsCaller((*TxQueue).SendFunc) {
		return nil
	}
	return q.opErr("close", callgate.ErrInside)
}

// opErr is the queue's error for op: a *packetio.OpError whose cause is
// err.
func (q *TxQueue) opErr(op string, err error) error {
	return packetio.NewOpError(op, Backend, q.iface, q.index, err)
}
