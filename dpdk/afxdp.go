//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"sync"

	"github.com/packetio/packetio/dpdk/internal/eal"
	"github.com/packetio/packetio/dpdk/internal/queue"
)

// net_af_xdp (DPDK 22.11) binds one XDP socket per receive queue, over a
// UMEM that is the receive queue's mempool, and its transmit queue i sends
// through receive queue i's socket. It sends an mbuf of that mempool in
// place and frees it back there when the kernel completes it; any other
// mbuf (one received on another queue, or of any other pool) it copies
// into a buffer it allocates from the receive queue's pool, on the
// transmitting thread, frees the original at once and the buffer when the
// kernel completes it. So:
//
//   - pair i has one mempool, receive queue i's frames then transmit
//     queue i's (device.go, txPool), and both queues write their frames
//     with it: the driver sends either without a copy and frees both into
//     the receive queue's returned ring, from where the receive queue
//     hands the transmit queue's own frames to the transmit queue's
//     returned ring (queue.Rx.HostFrames): directly when the transmitting
//     goroutine drains it (queue.Rx.Resupply), the one that reads that
//     ring, else through a hand-back ring (ReturnLent);
//   - transmit queue i writes the frames of receive queue i (a forwarded
//     frame) with the receive queue's pool (queue.Tx.SendInPlace), so
//     forwarding costs no copy in the driver; the receive queue marks them
//     lent while the driver holds them, and when they come back through its
//     returned ring it hands them to the transmit queue's returned ring
//     (queue.Rx.ReturnLent), where Complete and Reclaim find them as they
//     find every other transmitted frame: the ownership contract is the
//     one every driver has;
//   - the receive queue's supply and returned rings get a second user, the
//     transmitting goroutine, which the rings (single producer, single
//     consumer, no atomics) do not allow: every touch of them and of the
//     lent marks, from both queues, is serialised by the pair's mutex, one
//     uncontended lock per burst when one goroutine drives both;
//   - buffers the driver borrows (to copy a frame of another queue into)
//     come back through the receive queue's returned ring without ever
//     having been received. They were posted by Fill and stay posted: each
//     burst, in either direction, moves them straight back to the supply
//     (queue.Rx.Resupply; the receive queue's "resupplied" counts them).
//     Without that, every copy would take a buffer from the supply for
//     good, and the receive queue would starve.
//
// The lock also closes the pair: once Close has marked it, no burst or Fill
// reaches the driver or the rings, whose memory teardown frees, and Close
// waits for one already inside.

// xskPair is transmit queue i and receive queue i of a net_af_xdp port.
type xskPair struct {
	mu     sync.Mutex
	closed bool
	rx     *queue.Rx // nil until the receive queue is made
}

// enter takes the pair's lock and reports true, or reports false, unlocked,
// once the device has closed.
func (p *xskPair) enter() bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	return true
}

// close waits for whoever is inside and shuts the pair for good.
func (p *xskPair) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}

// resupply puts the receive queue's borrowed buffers back in its supply
// and the transmit queue's frames (its own, and those it sent in place) on
// their way back to it: straight onto to, its returned ring, when the
// transmit queue's goroutine calls (to is nil from the receive side), else
// onto the hand-back ring for ReturnLent.
func (p *xskPair) resupply(to *queue.Ring) {
	if p.rx != nil {
		p.rx.Resupply(to)
	}
}

// xskTx is a transmit queue's driver: each burst and completion nudge runs
// under the pair's lock, after the receive queue's borrowed buffers have
// been put back and its frames the kernel has finished sending have been
// handed to the transmit queue's returned ring.
type xskTx struct {
	q        *eal.Queue
	p        *xskPair
	returned *queue.Ring // the transmit queue's
}

var _ queue.PMD = xskTx{}

// settle runs before and after each call into the driver.
func (x xskTx) settle() {
	x.p.resupply(x.returned)
	if x.p.rx != nil {
		x.p.rx.ReturnLent(x.returned)
	}
}

func (x xskTx) TxBurst(mbufs []uint64) int {
	if !x.p.enter() {
		return 0
	}
	defer x.p.mu.Unlock()
	x.settle()
	rx := x.p.rx
	if rx != nil {
		// Marked before the driver has them: it may complete them
		// inside this very burst.
		rx.LendFrames(mbufs)
	}
	n := x.q.TxBurst(mbufs)
	if rx != nil {
		rx.UnlendFrames(mbufs[max(n, 0):])
	}
	x.settle()
	return n
}

func (x xskTx) RxBurst(out []uint64) int { return 0 }

func (x xskTx) Poke() {
	if !x.p.enter() {
		return
	}
	defer x.p.mu.Unlock()
	x.q.Poke()
	x.settle()
}

// xskRx is a receive queue's driver, under the pair's lock.
type xskRx struct {
	q *eal.Queue
	p *xskPair
}

var _ queue.PMD = xskRx{}

func (x xskRx) TxBurst(mbufs []uint64) int { return 0 }

func (x xskRx) RxBurst(out []uint64) int {
	if !x.p.enter() {
		return 0
	}
	defer x.p.mu.Unlock()
	x.p.resupply(nil)
	return x.q.RxBurst(out)
}

func (x xskRx) Poke() {}
