//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/packetio/packetio/dpdk/internal/eal"
	"github.com/packetio/packetio/dpdk/internal/queue"
	"github.com/packetio/packetio/internal/xskopt"
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

// The kernel's copy-mode transmit sends at most a socket's budget of
// frames per sendto (XDP_MAX_TX_SKB_BUDGET, 32 unless raised), and
// net_af_xdp kicks once a burst and again for as long as the kernel says
// EAGAIN: a burst of 64 costs two system calls, and the budget nobody
// raises is what testpmd runs with. packetio raises the budget of the
// driver's sockets to their transmit ring, as the afxdp backend does for
// its own, so one kick sends a burst. The sockets are the driver's: the
// XDP sockets this process holds after the receive queues are set up that
// it did not hold before (the driver makes one per receive queue there,
// under ctlMu), each transmit ring as deep as its receive ring. Where that
// is not one socket a queue (another backend in this process binding XDP
// sockets at the same moment), or the kernel has no such option, the
// sockets keep 32: Info.TxBudget says what they have, Info.TxBudgetKept
// why.

// xdpSockets returns the XDP sockets this process holds, by inode, from
// /proc/self/fd: the descriptors that are sockets and answer a SOL_XDP
// getsockopt.
func xdpSockets() (map[uint64]int, error) {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	socks := make(map[uint64]int)
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		link, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil {
			continue // closed since the listing
		}
		ino, ok := socketInode(link)
		if !ok {
			continue
		}
		if xskopt.IsXDPSocket(fd) {
			socks[ino] = fd
		}
	}
	return socks, nil
}

// socketInode reads the inode out of a socket descriptor's /proc link,
// "socket:[12345]"; ok is false for anything else.
func socketInode(link string) (ino uint64, ok bool) {
	s, ok := strings.CutPrefix(link, "socket:[")
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, "]"); !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// newSockets returns the descriptors of the sockets in after that are not
// in before, in descriptor order.
func newSockets(before, after map[uint64]int) []int {
	var fds []int
	for ino, fd := range after {
		if _, old := before[ino]; !old {
			fds = append(fds, fd)
		}
	}
	slices.Sort(fds)
	return fds
}

// snapshotSockets notes the XDP sockets this process holds before the
// driver makes the port's.
func (ps *portSetup) snapshotSockets() error {
	if ps.xsk {
		ps.xskBefore, ps.xskListErr = xdpSockets()
	}
	return nil
}

// raiseTxBudget raises the transmit budget of the port's sockets and
// records in Info.TxBudget the least budget one of them has
// (xskopt.DefaultTxBudget where one could not be raised, and in
// Info.TxBudgetKept why). It never fails the open: the port works at
// either budget.
func (ps *portSetup) raiseTxBudget() error {
	if !ps.xsk {
		return nil
	}
	ps.d.info.TxBudget = xskopt.DefaultTxBudget
	after, err := xdpSockets()
	if err = errors.Join(ps.xskListErr, err); err != nil {
		ps.d.info.TxBudgetKept = "listing this process's XDP sockets: " + err.Error()
		return nil
	}
	fds := newSockets(ps.xskBefore, after)
	if len(fds) != ps.c.rxQueues {
		ps.d.info.TxBudgetKept = fmt.Sprintf("%d XDP sockets appeared for %d receive queues: left as they are", len(fds), ps.c.rxQueues)
		return nil
	}
	for i, fd := range fds {
		budget, err := xskopt.RaiseTxBudget(fd, ps.rxDepth)
		if err != nil {
			ps.d.info.TxBudgetKept = fmt.Sprintf("setsockopt XDP_MAX_TX_SKB_BUDGET %d: %v", ps.rxDepth, err)
		}
		if i == 0 || budget < ps.d.info.TxBudget {
			ps.d.info.TxBudget = budget
		}
	}
	return nil
}
