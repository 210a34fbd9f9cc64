//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/dpdk/internal/eal"
	"github.com/packetio/packetio/dpdk/internal/queue"
	"github.com/packetio/packetio/internal/callgate"
	"github.com/packetio/packetio/internal/spinwait"
)

// region is the device's memzone as a packetio.Region. After Close it is
// empty: the memory has gone back to DPDK, and a slice taken before Close
// must not be used (see "Memory after Close" in doc.go).
type region struct{ d *Device }

func (r region) bytes() []byte {
	if r.d.closed.Load() || r.d.region == nil {
		return nil
	}
	return r.d.region.Bytes
}

// Bytes returns the whole memzone, or nil after Close.
func (r region) Bytes() []byte { return r.bytes() }

// Frame returns the d.Len bytes at d.Addr, or nil outside the region.
func (r region) Frame(d packetio.Desc) []byte {
	b := r.bytes()
	end := d.Addr + uint64(d.Len)
	if d.Addr >= uint64(len(b)) || end > uint64(len(b)) || end < d.Addr {
		return nil
	}
	return b[d.Addr:end:end]
}

// Writable returns the bytes from d.Addr to the end of its frame.
func (r region) Writable(d packetio.Desc) []byte {
	b := r.bytes()
	if d.Addr >= uint64(len(b)) {
		return nil
	}
	end := (d.Addr | uint64(r.d.info.FrameSize-1)) + 1
	return b[d.Addr:end:end]
}

// FrameSize is the frame size.
func (r region) FrameSize() int { return r.d.info.FrameSize }

// NumFrames is the number of frames.
func (r region) NumFrames() int {
	if r.d.region == nil {
		return 0
	}
	return len(r.d.region.Bytes) / r.d.info.FrameSize
}

// opErr is the error of op on queue i of d: a *packetio.OpError whose
// cause is err; nil for nil.
func opErr(d *Device, op string, i int, err error) error {
	return packetio.NewOpError(op, backendName, d.info.Name, i, err)
}

// TxQueue is one transmit queue of a Device.
type TxQueue struct {
	d       *Device
	index   int
	q       *queue.Tx
	mp      *eal.Mempool
	pmd     *eal.Queue
	closed  atomic.Bool
	drops   atomic.Uint64 // the mempool's drops, kept at Close
	maxLen  uint32        // Capabilities().MaxTxLen
	refused atomic.Uint64 // descriptors Transmit refused as too long
	// calls counts the calls that reach the driver, the mempool or the
	// rings shared with the driver (in C memory): Device.Close waits them
	// out before it stops the port (package callgate). Calls on the Go
	// side alone (Alloc, Free, the pool) are not counted.
	calls callgate.Calls
}

func (t *TxQueue) dead() bool { return t.closed.Load() || t.d.closed.Load() }

// enter counts a call in unless the queue or its device is closed.
func (t *TxQueue) enter() bool { return enterQueue(&t.calls, &t.d.closed, &t.closed) }
func (t *TxQueue) exit()       { t.calls.Exit() }

// enterQueue counts a call in on calls unless the device or the queue is
// closed. Device.Close drains the count after it sets device; a queue's own
// Close releases nothing, so its flag only refuses calls.
func enterQueue(calls *callgate.Calls, device, queue *atomic.Bool) bool {
	if !calls.Enter(device) {
		return false
	}
	if queue.Load() {
		calls.Exit()
		return false
	}
	return true
}

// Region is the device's frame memory.
func (t *TxQueue) Region() packetio.Region { return region{t.d} }

// Alloc takes up to n frames from the pool.
func (t *TxQueue) Alloc(n int) []packetio.Desc {
	if t.dead() {
		return nil
	}
	return t.q.Alloc(n)
}

// Transmit hands a prefix of descs to the driver in one burst.
func (t *TxQueue) Transmit(descs []packetio.Desc) int {
	if !t.enter() {
		return 0
	}
	defer t.exit()
	k := t.fits(descs)
	n, _ := t.q.Transmit(descs[:k])
	if k < len(descs) && n == k {
		t.refused.Add(1) // the prefix reached the one the link cannot carry
	}
	return n
}

// fits is how many descriptors from the first are no longer than the link
// carries.
func (t *TxQueue) fits(descs []packetio.Desc) int {
	for i := range descs {
		if descs[i].Len > t.maxLen {
			return i
		}
	}
	return len(descs)
}

// TransmitOffload is Transmit with checksum and segmentation metadata,
// checked against each packet's own headers.
func (t *TxQueue) TransmitOffload(descs []packetio.Desc, offs []packetio.Offload) (int, error) {
	if !t.enter() {
		return 0, opErr(t.d, "transmit", t.index, packetio.ErrClosed)
	}
	defer t.exit()
	n, err := t.q.TransmitOffload(descs, offs)
	return n, opErr(t.d, "transmit", t.index, err)
}

// Err reports a closed or failed queue, and then the first frame misuse
// (ErrNotOwned), which does not stop the queue.
func (t *TxQueue) Err() error {
	if err := t.failure(); err != nil {
		return err
	}
	if err := t.q.Err(); err != nil {
		return opErr(t.d, "transmit", t.index, err)
	}
	return nil
}

// failure is Err without the misuse: what stops the queue.
func (t *TxQueue) failure() error {
	if !t.enter() {
		return opErr(t.d, "transmit", t.index, packetio.ErrClosed)
	}
	defer t.exit()
	if err := t.q.Failure(); err != nil {
		return opErr(t.d, "transmit", t.index, err)
	}
	if n := t.mp.Drops(); n > 0 {
		return opErr(t.d, "transmit", t.index, fmt.Errorf("%w: the driver freed %d mbufs the returned ring could not hold", packetio.ErrQueueFailed, n))
	}
	return nil
}

// Complete returns frames the driver has finished with to the pool.
func (t *TxQueue) Complete(max int) int {
	if !t.enter() {
		return 0
	}
	defer t.exit()
	return t.q.Complete(max)
}

// Reclaim hands frames the driver has finished with to the caller.
func (t *TxQueue) Reclaim(max int, out []packetio.Desc) []packetio.Desc {
	if !t.enter() {
		return out
	}
	defer t.exit()
	return t.q.Reclaim(max, out)
}

// Free returns unsent frames to the pool.
func (t *TxQueue) Free(descs []packetio.Desc) { t.q.Free(descs) }

// NumCompleted is how many frames the driver has handed back.
func (t *TxQueue) NumCompleted() int {
	if !t.enter() {
		return 0
	}
	defer t.exit()
	return t.q.NumCompleted()
}

// NumInFlight is how many frames the driver holds.
func (t *TxQueue) NumInFlight() int { return t.q.NumInFlight() }

// NumFreeSlots is how many more frames Transmit would take.
func (t *TxQueue) NumFreeSlots() int {
	if t.dead() {
		return 0
	}
	return t.q.NumFreeSlots()
}

// NumFreeFrames is how many frames the pool holds.
func (t *TxQueue) NumFreeFrames() int { return t.q.NumFreeFrames() }

// SendFunc reclaims, allocates, builds and transmits in one call.
func (t *TxQueue) SendFunc(count int, build func(i int, frame []byte) int) (int, error) {
	if !t.enter() {
		return 0, opErr(t.d, "send", t.index, packetio.ErrClosed)
	}
	defer t.exit()
	t.q.Complete(1 << 30)
	d := t.q.Alloc(count)
	if len(d) == 0 {
		return 0, t.failure()
	}
	b := t.d.region.Bytes
	mask := uint64(t.d.info.FrameSize - 1)
	n := 0
	for i := range d {
		end := (d[i].Addr | mask) + 1
		frame := b[d[i].Addr:end:end]
		l := build(i, frame)
		if l == 0 {
			break
		}
		if l < 0 || l > len(frame) || uint32(l) > t.maxLen {
			t.q.Free(d)
			return 0, t.badLength(l, len(frame))
		}
		d[i].Len = uint32(l)
		n++
	}
	sent, err := t.q.Transmit(d[:n])
	t.q.Free(d[sent:])
	return sent, opErr(t.d, "send", t.index, err)
}

// badLength is SendFunc's error for a build that returned l.
func (t *TxQueue) badLength(l, room int) error {
	if l > 0 && uint32(l) > t.maxLen && l <= room {
		return opErr(t.d, "send", t.index, fmt.Errorf("%w: build returned %d, longer than the link carries (%d)", packetio.ErrBadLength, l, t.maxLen))
	}
	return opErr(t.d, "send", t.index, fmt.Errorf("%w: build returned %d for a %d-byte frame", packetio.ErrBadLength, l, room))
}

// Stats returns the queue's counters, with the mempool's and the port's
// extended counters (prefixed "xstat_") in Backend.
func (t *TxQueue) Stats() (packetio.TxStats, error) {
	s := t.q.Stats()
	s.Refused += t.refused.Load()
	if !t.enter() {
		s.Backend["mempool_drops"] = t.drops.Load()
		return s, nil
	}
	defer t.exit()
	s.Backend["mempool_drops"] = t.mp.Drops()
	addXStats(t.d, s.Backend)
	return s, nil
}

// Close closes the queue; the device's Close releases it.
func (t *TxQueue) Close() error { t.closed.Store(true); return nil }

// RxQueue is one receive queue of a Device.
type RxQueue struct {
	d      *Device
	index  int
	q      *queue.Rx
	mp     *eal.Mempool
	pmd    *eal.Queue
	pair   *xskPair   // net_af_xdp: shares its rings with a transmit queue
	mu     sync.Mutex // held by Poll inside the driver; Close waits on it
	closed atomic.Bool
	polls  atomic.Uint64
	drops  atomic.Uint64
	empty  atomic.Uint64
	// calls counts the calls that reach the driver, the mempool or the
	// rings shared with the driver, but Poll's (which holds mu):
	// Device.Close waits them out before it stops the port (package
	// callgate). Recycle, on the Go side alone, is not counted.
	calls callgate.Calls
}

func (r *RxQueue) dead() bool { return r.closed.Load() || r.d.closed.Load() }

// enter counts a call in unless the queue or its device is closed.
func (r *RxQueue) enter() bool { return enterQueue(&r.calls, &r.d.closed, &r.closed) }
func (r *RxQueue) exit()       { r.calls.Exit() }

// Region is the device's frame memory.
func (r *RxQueue) Region() packetio.Region { return region{r.d} }

// Fill posts up to n frames to the driver.
func (r *RxQueue) Fill(n int) int {
	if !r.enter() {
		return 0
	}
	defer r.exit()
	if r.pair != nil {
		if !r.pair.enter() {
			return 0
		}
		defer r.pair.mu.Unlock()
	}
	return r.q.Fill(n)
}

// Poll spins until a packet is ready, the timeout passes or the queue
// closes. DPDK cannot peek, so what it finds is kept for Receive.
func (r *RxQueue) Poll(timeout time.Duration) (int, error) {
	r.polls.Add(1)
	return spinwait.Wait(timeout, r.look)
}

// look is one look of Poll: the packets ready, or why there will be none.
func (r *RxQueue) look() (int, error) {
	r.mu.Lock()
	if r.dead() {
		r.mu.Unlock()
		return 0, opErr(r.d, "poll", r.index, packetio.ErrClosed)
	}
	n := r.q.Ready()
	r.mu.Unlock()
	if n > 0 {
		return n, nil
	}
	if err := r.q.Failure(); err != nil { // a frame misuse is Err's, not Poll's
		return 0, opErr(r.d, "poll", r.index, err)
	}
	return 0, nil
}

// Receive returns up to max packets.
func (r *RxQueue) Receive(max int) []packetio.Desc {
	if !r.enter() {
		return nil
	}
	defer r.exit()
	return r.q.Receive(max)
}

// Err reports a closed or failed queue.
func (r *RxQueue) Err() error {
	if !r.enter() {
		return opErr(r.d, "receive", r.index, packetio.ErrClosed)
	}
	defer r.exit()
	if err := r.q.Err(); err != nil {
		return opErr(r.d, "receive", r.index, err)
	}
	if n := r.mp.Drops(); n > 0 {
		return opErr(r.d, "receive", r.index, fmt.Errorf("%w: the driver freed %d mbufs the returned ring could not hold", packetio.ErrQueueFailed, n))
	}
	return nil
}

// Recycle returns received frames to the pool.
func (r *RxQueue) Recycle(descs []packetio.Desc) { r.q.Recycle(descs) }

// NumFreeFillSlots is how many frames Fill could post.
func (r *RxQueue) NumFreeFillSlots() int {
	if !r.enter() {
		return 0
	}
	defer r.exit()
	if r.pair != nil {
		if !r.pair.enter() {
			return 0
		}
		defer r.pair.mu.Unlock()
	}
	return r.q.NumFreeFillSlots()
}

// NumReceived is how many packets Receive would return now. It polls the
// driver once when nothing is kept.
func (r *RxQueue) NumReceived() int {
	if !r.enter() {
		return 0
	}
	defer r.exit()
	return r.q.Ready()
}

// NumFreeFrames is how many frames the pool holds.
func (r *RxQueue) NumFreeFrames() int { return r.q.NumFreeFrames() }

// Stats returns the queue's counters, with the mempool's and the port's
// extended counters (prefixed "xstat_") in Backend.
func (r *RxQueue) Stats() (packetio.RxStats, error) {
	s := r.q.Stats()
	s.Polls = r.polls.Load()
	if !r.enter() {
		s.Backend["mempool_drops"] = r.drops.Load()
		s.Backend["supply_empty"] = r.empty.Load()
		return s, nil
	}
	defer r.exit()
	s.Backend["mempool_drops"] = r.mp.Drops()
	s.Backend["supply_empty"] = r.mp.Empty()
	addXStats(r.d, s.Backend)
	return s, nil
}

// Close closes the queue and wakes a poller; the device's Close releases
// it.
func (r *RxQueue) Close() error { r.closed.Store(true); return nil }

func addXStats(d *Device, m map[string]uint64) {
	x, err := d.XStats()
	if err != nil {
		return
	}
	for k, v := range x {
		m["xstat_"+k] = v
	}
}
