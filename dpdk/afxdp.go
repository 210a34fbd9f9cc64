//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"sync"

	"github.com/packetio/packetio/dpdk/internal/eal"
	"github.com/packetio/packetio/dpdk/internal/queue"
)

// net_af_xdp (DPDK 22.11) binds one XDP socket per receive queue, over a
// UMEM that is the receive queue's mempool, and its transmit queue i sends
// through receive queue i's socket. A transmitted mbuf that is not from
// that mempool (every packetio transmit, since each queue has its own pool)
// is copied into a buffer the driver allocates from the receive queue's
// pool, on the transmitting thread, and the buffer is freed back there when
// the kernel completes it. So:
//
//   - the receive queue's supply and returned rings get a second user, the
//     transmitting goroutine, which the rings (single producer, single
//     consumer, no atomics) do not allow: every touch of them, from both
//     queues, is serialised by the pair's mutex, one uncontended lock per
//     burst when one goroutine drives both;
//   - the borrowed buffers come back through the receive queue's returned
//     ring without ever having been received. They were posted by Fill and
//     stay posted: each burst, in either direction, moves them straight
//     back to the supply (queue.Rx.Resupply). Without that, a program that
//     only transmits stalls once it has sent as many packets as the supply
//     held, and the receive queue starves when the sender took its buffers.
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

func (p *xskPair) resupply() {
	if p.rx != nil {
		p.rx.Resupply()
	}
}

// xskTx is a transmit queue's driver: each burst and completion nudge runs
// under the pair's lock, after the receive queue's borrowed buffers have
// been put back.
type xskTx struct {
	q *eal.Queue
	p *xskPair
}

var _ queue.PMD = xskTx{}

func (x xskTx) TxBurst(mbufs []uint64) int {
	if !x.p.enter() {
		return 0
	}
	defer x.p.mu.Unlock()
	x.p.resupply()
	return x.q.TxBurst(mbufs)
}

func (x xskTx) RxBurst(out []uint64) int { return 0 }

func (x xskTx) Poke() {
	if !x.p.enter() {
		return
	}
	defer x.p.mu.Unlock()
	x.q.Poke()
	x.p.resupply()
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
	x.p.resupply()
	return x.q.RxBurst(out)
}

func (x xskRx) Poke() {}
