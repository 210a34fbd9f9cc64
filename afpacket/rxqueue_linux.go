//go:build linux

package afpacket

import (
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/callgate"
	"github.com/packetio/packetio/internal/fdwait"
	"github.com/packetio/packetio/internal/pool"
)

// RxQueue is a receive queue: a TPACKET_V3 ring (TPACKET_V2 with
// WithLowLatency) the kernel fills, copied packet by packet into this
// queue's region frames, so a received Desc behaves exactly as on a
// zero-copy backend and a block (a frame slot on V2) goes back to the kernel
// as soon as it is read. It implements packetio.TimestampReceiver and
// packetio.OffloadReceiver.
type RxQueue struct {
	dev   *Device
	index int
	fd    int
	efd   int    // eventfd written by Close to wake a blocked Poll
	ring  *ring  // TPACKET_V3, or nil with WithLowLatency
	ring2 *ring2 // TPACKET_V2 (WithLowLatency), or nil
	reg   *region
	pool  *pool.Frames
	vnet  bool
	multi bool // WithMultiBuffer: spread a big packet over several frames
	room  int  // bytes a frame holds past its headroom

	closed atomic.Bool
	failed atomic.Bool
	// calls counts Arm, NumReceived and receive calls in progress, which
	// read the ring without mu: Close waits them out before the Device
	// unmaps it (package callgate).
	calls callgate.Calls

	// mu guards the ring mapping and the file descriptors against Close:
	// Poll and Stats hold it shared (once per call, never per packet),
	// Close exclusively, after it has woken any poller.
	mu     sync.RWMutex
	pfds   [2]unix.PollFd // the socket and efd, for a look at their state
	waiter *fdwait.Waiter // Poll's sleep on the runtime's poller
	// linkErr is set once the socket reported an error (the link went
	// down) and cleared when packets flow again. While it is set Poll
	// sleeps at most linkCheck at a time and checks that the interface
	// still exists: the kernel reports the link going down, but not the
	// interface then disappearing. Owned by the polling goroutine.
	linkErr bool

	pkt   packet
	addrs []uint64
	descs []packetio.Desc
	offs  []packetio.Offload
	tss   []uint64

	// Counters, added once per batch; read by Stats from any goroutine.
	packets, bytes, batches, polls, poolEmpty atomic.Uint64
	oversize, malformed, badCsum, zeroStamp   atomic.Uint64
	batchTooSmall                             atomic.Uint64
	kernPackets, kernDrops, kernFreeze        atomic.Uint64
	syscalls                                  atomic.Uint64 // poll(2), and the socket checks after a socket error
}

var (
	_ packetio.RxQueue           = (*RxQueue)(nil)
	_ packetio.TimestampReceiver = (*RxQueue)(nil)
	_ packetio.OffloadReceiver   = (*RxQueue)(nil)
)

func newRxQueue(dev *Device, index int, s *sock, efd int, reg *region, p *pool.Frames, vnet, multi bool) *RxQueue {
	q := &RxQueue{dev: dev, index: index, fd: s.fd, efd: efd, ring: s.ring, ring2: s.ring2, reg: reg, pool: p, vnet: vnet, multi: multi,
		room: reg.FrameSize() - frameHeadroom}
	q.addrs = make([]uint64, 0, p.Cap())
	q.descs = make([]packetio.Desc, 0, p.Cap())
	q.offs = make([]packetio.Offload, 0, p.Cap())
	q.tss = make([]uint64, 0, p.Cap())
	q.pfds = [2]unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}, {Fd: int32(efd), Events: unix.POLLIN}}
	return q
}

// openWaiter makes the waiter Poll sleeps on: the socket and the eventfd.
func (q *RxQueue) openWaiter() error {
	w, err := fdwait.New(q.woken, q.fd, q.efd)
	if err != nil {
		return err
	}
	q.waiter = w
	return nil
}

// errorf is the queue's error for op: a *packetio.OpError whose cause
// matches sentinel and says what happened.
func (q *RxQueue) errorf(op string, sentinel error, format string, args ...any) error {
	return packetio.NewOpError(op, backendName, q.dev.name, q.index, fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...))
}

// Region is the device's frame region.
func (q *RxQueue) Region() packetio.Region { return q.reg }

// Fill posts nothing (the kernel owns the ring and copies into it); it
// returns how many of n frames the pool holds to receive into.
func (q *RxQueue) Fill(n int) int {
	if q.closed.Load() || n <= 0 {
		return 0
	}
	f := min(n, q.pool.Len())
	if f == 0 {
		q.poolEmpty.Add(1)
	}
	return f
}

// Poll waits up to timeout for a packet and returns how many are ready (a
// lower bound). A negative timeout waits until a packet comes or the queue
// closes. It sleeps with the goroutine parked on the Go runtime's network
// poller (internal/fdwait), holding no thread, so the goroutines it wakes
// when packets come run on its thread without a hand-off; from a thread
// the caller pinned to a CPU it sleeps in ppoll, and the socket's events
// reach the runtime's poller only once a Poll has parked there. The socket
// and an eventfd that Close writes wake it, so Close ends it with
// ErrClosed.
func (q *RxQueue) Poll(timeout time.Duration) (int, error) {
	q.mu.RLock()
	defer q.mu.RUnlock()
	if q.closed.Load() {
		return 0, q.errorf("poll", packetio.ErrClosed, "poll")
	}
	if q.failed.Load() {
		return 0, q.errorf("poll", packetio.ErrDeviceGone, "interface gone")
	}
	q.polls.Add(1)
	if n := q.ready(); n > 0 || timeout == 0 {
		return n, nil
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	for {
		wait := levelEvery
		if q.linkErr {
			wait = linkCheck
		}
		if timeout > 0 {
			left := time.Until(deadline)
			if left <= 0 {
				return 0, nil
			}
			wait = min(wait, left)
		}
		q.syscalls.Add(1)
		if _, err := q.waiter.Wait(wait); err != nil {
			return 0, q.errorf("poll", packetio.ErrQueueFailed, "%v", err)
		}
		if q.closed.Load() {
			return 0, q.errorf("poll", packetio.ErrClosed, "closed while polling")
		}
		if n := q.ready(); n > 0 {
			q.linkErr = false
			return n, nil
		}
		if err := q.level(); err != nil {
			return 0, err
		}
		// A wake-up with nothing in the ring (a cleared socket error)
		// sleeps again rather than returning 0 early.
	}
}

// level looks at the socket's and the eventfd's state with a zero-timeout
// poll(2), after a wait that found the ring empty: the poller wakes the
// queue for a socket error once (and may have been reset just before the
// wait), poll(2) shows it for as long as it stands.
func (q *RxQueue) level() error {
	q.syscalls.Add(1)
	if _, err := unix.Poll(q.pfds[:], 0); err != nil && err != unix.EINTR {
		return q.errorf("poll", packetio.ErrQueueFailed, "poll: %v", err)
	}
	if q.closed.Load() || q.pfds[1].Revents != 0 {
		return q.errorf("poll", packetio.ErrClosed, "closed while polling")
	}
	if re := q.pfds[0].Revents; re&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0 || q.linkErr {
		q.linkErr = true
		return q.checkSocket()
	}
	return nil
}

// woken is what Poll's waiter looks at before the goroutine parks: frames
// in the ring, or a Close whose eventfd write may have come before.
func (q *RxQueue) woken() bool { return q.closed.Load() || q.ready() > 0 }

// The ring walk, on whichever ring the queue has: one predictable branch.

func (q *RxQueue) ready() int {
	if q.ring2 != nil {
		return q.ring2.ready()
	}
	return q.ring.ready()
}

func (q *RxQueue) peek(p *packet) peekResult {
	if q.ring2 != nil {
		return q.ring2.peek(p)
	}
	return q.ring.peek(p)
}

func (q *RxQueue) advance() {
	if q.ring2 != nil {
		q.ring2.advance()
		return
	}
	q.ring.advance()
}

func (q *RxQueue) retire() {
	if q.ring2 != nil {
		q.ring2.retire()
		return
	}
	q.ring.retire()
}

const (
	// levelEvery bounds one sleep of Poll: how late it may see a socket
	// error whose only wake-up came just before it began to wait.
	levelEvery = 250 * time.Millisecond
	// linkCheck bounds one sleep after a socket error, so a deleted
	// interface is noticed (the kernel reports the link going down, not
	// the interface then disappearing).
	linkCheck = 200 * time.Millisecond
)

// checkSocket reads and clears a pending socket error (ENETDOWN when the
// link went down) and fails the queue for good if the interface is gone:
// the socket would never receive again.
func (q *RxQueue) checkSocket() error {
	q.syscalls.Add(2) // SO_ERROR and the SIOCGIFINDEX of interfaceAlive
	_, _ = unix.GetsockoptInt(q.fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if !q.dev.interfaceAlive(q.fd) {
		q.failed.Store(true)
		return q.errorf("poll", packetio.ErrDeviceGone, "interface gone")
	}
	return nil
}

// Receive returns up to max packets, each copied into a frame of this
// queue's pool. The slice is reused by the next receive call.
func (q *RxQueue) Receive(max int) []packetio.Desc {
	n := q.receive(max, false, false)
	return q.descs[:n]
}

// ReceiveTimestamps is Receive plus each packet's kernel receive time in
// nanoseconds (CLOCK_REALTIME when the frame entered the ring; it can step).
// A stamp is never zero: a packet without one is dropped and counted.
func (q *RxQueue) ReceiveTimestamps(max int) ([]packetio.Desc, []uint64) {
	n := q.receive(max, true, false)
	return q.descs[:n], q.tss[:n]
}

// ReceiveOffload is Receive plus each packet's virtio_net_hdr (WithGSO).
// Partial checksums of unsegmented packets are already finished (and
// OffloadNeedsCsum cleared); a segmented super-frame keeps its metadata for
// the caller. Without WithGSO it returns nil, nil.
func (q *RxQueue) ReceiveOffload(max int) ([]packetio.Desc, []packetio.Offload) {
	if !q.vnet {
		return nil, nil
	}
	n := q.receive(max, false, true)
	return q.descs[:n], q.offs[:n]
}

// receive walks the ring into region frames. A frame goes from the pool
// straight to the caller (pool.Pop): the kernel copies packets into its own
// ring, never into the region, so on this backend the NIC never holds a
// receive frame and Fill posts nothing. What ownership tracking can catch
// here is a frame recycled twice (or never received), which would otherwise
// sit on the free list twice and take two packets. It stops at max, at an empty
// ring or at an empty pool (the packet stays in the ring for the next call).
func (q *RxQueue) receive(max int, wantStamps, wantOffs bool) int {
	q.descs, q.offs, q.tss = q.descs[:0], q.offs[:0], q.tss[:0]
	if max <= 0 || !q.calls.Enter(&q.closed) {
		return 0
	}
	defer q.calls.Exit()
	max = min(max, cap(q.descs))
	p := &q.pkt
	var bytes uint64
	var oversize, malformed, badCsum, zeroStamp, tooSmall uint64
	n := 0
loop:
	for n < max {
		switch q.peek(p) {
		case peekEmpty:
			break loop
		case peekCorrupt:
			malformed++
			q.retire()
			continue
		}
		fl := p.frameLen()
		if uint32(len(p.data)) < p.wireLen {
			oversize++ // clipped by the kernel: never deliver part of a packet
			q.advance()
			continue
		}
		if wantStamps && p.sec == 0 && p.nsec == 0 {
			zeroStamp++
			q.advance()
			continue
		}
		if fl > q.room {
			if !q.multi {
				oversize++ // does not fit a frame
				q.advance()
				continue
			}
			k := (fl + q.room - 1) / q.room
			if k > max {
				oversize++ // this caller can never take it
				tooSmall++
				q.advance()
				continue
			}
			if n+k > max {
				break loop // next call
			}
			if q.pool.Len() < k {
				if n == 0 {
					q.poolEmpty.Add(1)
				}
				break loop
			}
			q.spread(p, fl, k, wantStamps, wantOffs)
			bytes += uint64(fl)
			n += k
			q.advance()
			continue
		}
		q.addrs = q.pool.Pop(1, q.addrs[:0])
		if len(q.addrs) == 0 {
			if n == 0 {
				q.poolEmpty.Add(1)
			}
			break loop
		}
		addr := q.addrs[0] + frameHeadroom
		dst := q.reg.mem[addr : addr+uint64(fl)]
		l, tagged := p.copyOut(dst)
		if q.vnet {
			o := rxOffload(p.vnet, tagged)
			if o.Flags&packetio.OffloadNeedsCsum != 0 && !o.Segmented() {
				if completeL4(dst[:l], int(o.CsumStart), int(o.CsumOff)) {
					o.Flags &^= packetio.OffloadNeedsCsum
				} else {
					badCsum++
				}
			}
			if wantOffs {
				q.offs = append(q.offs, o)
			}
		}
		if wantStamps {
			q.tss = append(q.tss, uint64(p.sec)*1e9+uint64(p.nsec))
		}
		q.descs = append(q.descs, packetio.Desc{Addr: addr, Len: uint32(l)})
		bytes += uint64(l)
		n++
		q.advance()
	}
	if n > 0 {
		q.packets.Add(uint64(n))
		q.bytes.Add(bytes)
		q.batches.Add(1)
	}
	if oversize|malformed|badCsum|zeroStamp|tooSmall != 0 {
		q.batchTooSmall.Add(tooSmall)
		q.oversize.Add(oversize)
		q.malformed.Add(malformed)
		q.badCsum.Add(badCsum)
		q.zeroStamp.Add(zeroStamp)
	}
	return n
}

// spread copies a packet of fl bytes over k frames of the pool as a chain:
// every descriptor but the last carries OptContinued. The Offload rides the
// first descriptor (its partial checksum, if any, is left for the caller to
// finish after reassembly) and the others carry zero; every descriptor
// carries the packet's stamp.
func (q *RxQueue) spread(p *packet, fl, k int, wantStamps, wantOffs bool) {
	q.addrs = q.pool.Pop(k, q.addrs[:0])
	var o packetio.Offload
	if q.vnet && wantOffs {
		o = rxOffload(p.vnet, p.vlanTagged() && len(p.data) >= macsLen)
	}
	stamp := uint64(p.sec)*1e9 + uint64(p.nsec)
	off := 0
	for j, a := range q.addrs {
		addr := a + frameHeadroom
		l := min(q.room, fl-off)
		p.copyAt(q.reg.mem[addr:addr+uint64(l)], off)
		off += l
		d := packetio.Desc{Addr: addr, Len: uint32(l)}
		if j < k-1 {
			d.Options = packetio.OptContinued
		}
		q.descs = append(q.descs, d)
		if wantOffs {
			q.offs = append(q.offs, o)
			o = packetio.Offload{}
		}
		if wantStamps {
			q.tss = append(q.tss, stamp)
		}
	}
}

// Err is nil while the queue is healthy, wraps ErrQueueFailed once the
// interface has gone, and wraps ErrClosed after Close.
func (q *RxQueue) Err() error {
	if q.closed.Load() {
		return q.errorf("receive", packetio.ErrClosed, "queue closed")
	}
	if q.failed.Load() {
		return q.errorf("receive", packetio.ErrDeviceGone, "interface gone")
	}
	if err := q.pool.Misuse(); err != nil {
		return packetio.NewOpError("recycle", backendName, q.dev.name, q.index, err)
	}
	return nil
}

// Recycle returns received frames to the pool. A zero Desc, a foreign frame
// and (packetio_checked) one the caller does not hold are refused and
// counted (pool_rejected); Err reports the first misuse.
func (q *RxQueue) Recycle(descs []packetio.Desc) {
	for _, d := range descs {
		if d == (packetio.Desc{}) {
			q.pool.RefuseZero(pool.OpRecycle)
			continue
		}
		q.pool.Put(pool.OpRecycle, q.pool.Base(d.Addr))
	}
}

// NumFreeFillSlots is how many frames Fill could offer: the pool's size.
func (q *RxQueue) NumFreeFillSlots() int { return q.pool.Len() }

// NumReceived is how many packets are ready in the ring (a lower bound: the
// current block only, or up to 256 slots with WithLowLatency).
func (q *RxQueue) NumReceived() int {
	if !q.calls.Enter(&q.closed) {
		return 0
	}
	defer q.calls.Exit()
	return q.ready()
}

// NumFreeFrames is how many frames the pool holds.
func (q *RxQueue) NumFreeFrames() int { return q.pool.Len() }

// readKernelStats adds the kernel's PACKET_STATISTICS (which reset on every
// read) into the queue's counters. Called with mu held.
func (q *RxQueue) readKernelStats() {
	var buf [unix.SizeofTpacketStatsV3]byte
	if getsockoptBytes(q.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS, buf[:]) != nil {
		return
	}
	q.kernPackets.Add(uint64(binary.NativeEndian.Uint32(buf[0:])))
	q.kernDrops.Add(uint64(binary.NativeEndian.Uint32(buf[4:])))
	q.kernFreeze.Add(uint64(binary.NativeEndian.Uint32(buf[8:])))
}

// Stats returns the queue's counters, with the kernel's drop count. Safe from
// any goroutine.
func (q *RxQueue) Stats() (packetio.RxStats, error) {
	q.mu.RLock()
	if !q.closed.Load() {
		q.readKernelStats()
	}
	q.mu.RUnlock()
	oversize, malformed, badCsum, zeroStamp := q.oversize.Load(), q.malformed.Load(), q.badCsum.Load(), q.zeroStamp.Load()
	packets := q.packets.Load()
	return packetio.RxStats{
		Packets: packets,
		// A frame is filled when a packet is copied into it, inside
		// Receive: none waits with the kernel (see receive).
		Filled:    packets,
		Bytes:     q.bytes.Load(),
		Batches:   q.batches.Load(),
		Polls:     q.polls.Load(),
		PoolEmpty: q.poolEmpty.Load(),
		Errors:    oversize + malformed + badCsum + zeroStamp,
		Dropped:   q.kernDrops.Load(),
		Backend: map[string]uint64{
			"oversize":        oversize,
			"batch_too_small": q.batchTooSmall.Load(),
			"malformed":       malformed,
			"bad_checksum":    badCsum,
			"zero_timestamp":  zeroStamp,
			"pool_rejected":   q.pool.Rejected(),
			"kernel_packets":  q.kernPackets.Load(),
			"freeze_q_count":  q.kernFreeze.Load(),
			"syscalls":        q.syscalls.Load(),
		},
	}, nil
}

// Close stops the queue, wakes a goroutine blocked in Poll, waits until no
// call on the queue is in progress and takes the last kernel statistics.
// It is idempotent and safe from any goroutine, but not from inside a call
// on the queue (it would wait for itself). The socket and the ring belong
// to the Device, which closes and unmaps them afterwards.
func (q *RxQueue) Close() error {
	if q.closed.Swap(true) {
		return nil
	}
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(q.efd, one[:])
	callgate.Drain(&q.calls)
	q.mu.Lock() // waits for a woken poller to leave
	defer q.mu.Unlock()
	_ = q.waiter.Close()
	q.readKernelStats()
	return nil
}
