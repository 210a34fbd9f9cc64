//go:build linux

package afpacket

import (
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/callgate"
	"github.com/packetio/packetio/internal/pool"
)

const (
	// txBatch is the most messages one sendmmsg call carries.
	txBatch = 256
	// maxPending is how many sent frames wait for Complete or Reclaim: the
	// part a ring size plays elsewhere. A power of two.
	maxPending = 4096
	// maxStalls bounds retries of a sendmmsg that made no progress and
	// reported no back-pressure (EINTR, or a zero return).
	maxStalls = 16
	// maxGatherSegs is the most segments one gathered packet may have
	// (UIO_MAXIOV, less the virtio header's iovec).
	maxGatherSegs = 1023
	// gatherIovs is the iovec scratch TransmitGather fills per sendmmsg.
	gatherIovs = 4096
)

// sendmmsgFn is sendmmsg, replaced by tests that need the kernel to say
// EAGAIN, EINTR or worse on cue. Called once per batch.
var sendmmsgFn = sendmmsg

// TxQueue is a transmit queue on a packet socket of its own with
// PACKET_QDISC_BYPASS (unless WithQdisc): a PACKET_TX_RING (TPACKET_V2)
// with one send(2) per batch, or, WithGSO or WithMultiBuffer, batched
// sendmmsg(2). Transmit copies each frame into a ring slot (or the kernel
// copies it in sendmmsg), but the frame still waits on a pending list until
// Complete or Reclaim hands it back, so the ownership rules and NumInFlight
// are the same as on a zero-copy backend. On the ring SendFunc builds each
// frame straight into a slot and takes no pool frame. It implements
// packetio.OffloadTransmitter and packetio.GatherTransmitter.
type TxQueue struct {
	dev   *Device
	index int
	fd    int
	reg   *region
	pool  *pool.Frames
	vnet  bool
	multi bool // WithMultiBuffer: OptContinued chains are one packet
	niov  int  // iovecs per message: 1, or 2 with the virtio header
	// maxLen is the longest packet the link carries (MTU + 14 at Open):
	// a longer one is refused up front, as the kernel would refuse it.
	maxLen int
	// ring is the PACKET_TX_RING, nil on the sendmmsg path (WithGSO,
	// WithMultiBuffer).
	ring *txRing
	room int // bytes a region frame holds past its headroom
	// stamper reads departure stamps (WithTxTimestamps), nil without.
	stamper *txStamper

	closed atomic.Bool
	failed atomic.Bool
	// calls counts the calls in progress that touch the transmit ring or
	// the socket: Close waits them out before the Device unmaps and closes
	// them (package callgate).
	calls callgate.Calls

	addrs []uint64        // Alloc scratch
	descs []packetio.Desc // Alloc result
	pend  []packetio.Desc // pending ring, maxPending entries
	head  int             // oldest pending
	count int             // pending entries

	msgs []unix.Mmsghdr
	iovs []unix.Iovec    // niov per message
	hdrs [][vnetLen]byte // one virtio header per message
	giov []unix.Iovec    // TransmitGather scratch
	glen [txBatch]int    // TransmitGather packet lengths
	mfr  [txBatch]int    // chained Transmit: frames per message

	// Counters, added once per batch; read by Stats from any goroutine.
	packets, bytes, completed, batches atomic.Uint64
	ringFull, poolEmpty                atomic.Uint64
	dropped, rejected, eagain, eintr   atomic.Uint64
	refused                            atomic.Uint64 // not the caller's to give: zero, foreign, or (checked) held by another
	lastErrno                          atomic.Uint64
	sends                              atomic.Uint64 // system calls that send: send(2) on the ring, sendmmsg(2) otherwise
	wrongFormat                        atomic.Uint64 // ring slots the kernel refused (TP_STATUS_WRONG_FORMAT)
	kernelRefusal                      atomic.Pointer[error]
}

var (
	_ packetio.TxQueue            = (*TxQueue)(nil)
	_ packetio.OffloadTransmitter = (*TxQueue)(nil)
	_ packetio.GatherTransmitter  = (*TxQueue)(nil)
)

func newTxQueue(dev *Device, index, fd int, reg *region, p *pool.Frames, vnet, multi bool) *TxQueue {
	q := &TxQueue{dev: dev, index: index, fd: fd, reg: reg, pool: p, vnet: vnet, multi: multi, niov: 1, maxLen: 1<<31 - 1, room: reg.FrameSize() - frameHeadroom}
	if vnet {
		q.niov = 2
	}
	q.addrs = make([]uint64, 0, p.Cap())
	q.descs = make([]packetio.Desc, 0, p.Cap())
	q.pend = make([]packetio.Desc, maxPending)
	q.msgs = make([]unix.Mmsghdr, txBatch)
	q.iovs = make([]unix.Iovec, txBatch*q.niov)
	q.hdrs = make([][vnetLen]byte, txBatch)
	q.giov = make([]unix.Iovec, gatherIovs)
	for i := range q.msgs {
		q.msgs[i].Hdr.Iov = &q.iovs[i*q.niov]
		q.msgs[i].Hdr.SetIovlen(q.niov)
		if vnet {
			q.iovs[i*2].Base = &q.hdrs[i][0]
			q.iovs[i*2].SetLen(vnetLen)
		}
	}
	return q
}

// errorf is the queue's error for op: a *packetio.OpError whose cause
// matches sentinel and says what happened.
func (q *TxQueue) errorf(op string, sentinel error, format string, args ...any) error {
	return packetio.NewOpError(op, backendName, q.dev.name, q.index, fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...))
}

// Region is the device's frame region.
func (q *TxQueue) Region() packetio.Region { return q.reg }

// Alloc takes up to n frames from this queue's pool, never more than the
// pending list can take, and returns them 64 bytes into their frames with Len
// 0. The slice is reused by the next Alloc.
func (q *TxQueue) Alloc(n int) []packetio.Desc {
	if !q.calls.Enter(&q.closed) {
		return nil
	}
	defer q.calls.Exit()
	return q.alloc(n)
}

// alloc is Alloc inside a counted call (it reads the ring's slots).
func (q *TxQueue) alloc(n int) []packetio.Desc {
	n = min(n, maxPending-q.count, q.pool.Len())
	if q.ring != nil {
		n = q.ring.free(n)
	}
	q.descs = q.descs[:0]
	if n <= 0 {
		if q.pool.Len() == 0 {
			q.poolEmpty.Add(1)
		}
		return q.descs
	}
	q.addrs = q.pool.Pop(n, q.addrs[:0])
	for _, a := range q.addrs {
		q.descs = append(q.descs, packetio.Desc{Addr: a + frameHeadroom})
	}
	return q.descs
}

// Transmit sends the longest valid prefix of descs and returns its length.
// The frames wait for Complete or Reclaim.
func (q *TxQueue) Transmit(descs []packetio.Desc) int {
	if !q.calls.Enter(&q.closed) {
		return 0
	}
	defer q.calls.Exit()
	n, _ := q.transmit(descs, nil)
	return n
}

// TransmitOffload is Transmit with a virtio_net_hdr per frame (WithGSO).
// Without WithGSO it returns ErrUnsupported; a mismatched offs, a descriptor
// outside its frame or an Offload that does not fit its packet ends the
// prefix with ErrBadLength. Back-pressure is a short count and a nil error.
func (q *TxQueue) TransmitOffload(descs []packetio.Desc, offs []packetio.Offload) (int, error) {
	if !q.calls.Enter(&q.closed) {
		return 0, q.errorf("transmit", packetio.ErrClosed, "transmit")
	}
	defer q.calls.Exit()
	if !q.vnet {
		return 0, q.errorf("transmit", packetio.ErrUnsupported, "TransmitOffload needs a device opened WithGSO")
	}
	if len(offs) != len(descs) {
		return 0, q.errorf("transmit", packetio.ErrBadLength, "%d offloads for %d descriptors", len(offs), len(descs))
	}
	return q.transmit(descs, offs)
}

// transmit validates and sends descs in chunks of txBatch; offs is nil or one
// Offload per descriptor. It stops at the first bad descriptor (error), at
// back-pressure or at a full pending list (short count, nil error). It runs
// inside a counted call (Transmit, TransmitOffload, SendFunc).
func (q *TxQueue) transmit(descs []packetio.Desc, offs []packetio.Offload) (int, error) {
	if q.failed.Load() {
		return 0, q.Err()
	}
	if q.multi {
		return q.transmitChains(descs, offs)
	}
	if q.ring != nil {
		return q.transmitRing(descs)
	}
	limit := min(len(descs), maxPending-q.count)
	if limit == 0 {
		if len(descs) > 0 {
			q.ringFull.Add(1)
		}
		return 0, nil
	}
	var err error
	total := 0
	var bytes uint64
	batches := uint64(0)
	for total < limit && err == nil {
		chunk := min(limit-total, txBatch)
		k := 0
		for ; k < chunk; k++ {
			d := descs[total+k]
			if err = q.check(d, total+k); err != nil {
				break
			}
			if q.tooLong(int(d.Len), offs, total+k) {
				q.unsend(d)
				err = q.errorf("transmit", packetio.ErrBadLength, "descriptor %d: %d bytes, longer than the link carries (%d)", total+k, d.Len, q.maxLen)
				break
			}
			iov := &q.iovs[k*q.niov+q.niov-1]
			iov.Base = &q.reg.mem[d.Addr]
			iov.SetLen(int(d.Len))
			if q.vnet {
				var o packetio.Offload
				if offs != nil {
					o = offs[total+k]
					if e := checkOffload(o, int(d.Len)); e != nil {
						q.unsend(d)
						err = q.errorf("transmit", packetio.ErrBadLength, "descriptor %d: %v", total+k, e)
						break
					}
				}
				o.Marshal(q.hdrs[k][:])
			}
			msg := &q.msgs[k].Hdr
			msg.Iov = &q.iovs[k*q.niov]
			msg.SetIovlen(q.niov)
		}
		sent, calls := q.sendAll(k)
		batches += calls
		if pool.Checked() {
			q.unsend(descs[total+sent : total+k]...)
		}
		for i := range sent {
			d := descs[total+i]
			bytes += uint64(d.Len)
			q.pend[(q.head+q.count)&(maxPending-1)] = d
			q.count++
		}
		total += sent
		if sent < k {
			break
		}
	}
	if err != nil && !errors.Is(err, packetio.ErrNotOwned) {
		q.rejected.Add(1)
	}
	if total == 0 && err == nil {
		q.ringFull.Add(1)
	}
	q.batches.Add(batches)
	q.bytes.Add(bytes)
	q.packets.Add(uint64(total)) // after the pending list grew: Completed never passes it
	return total, err
}

// transmitChains is transmit with WithMultiBuffer: a run of descriptors
// marked OptContinued, ended by one without the mark, is one packet, sent as
// one message with an iovec per frame. The accepted prefix is a prefix of
// whole packets. An Offload rides a packet's first descriptor, the others
// must carry zero, and it is checked against the whole packet.
func (q *TxQueue) transmitChains(descs []packetio.Desc, offs []packetio.Offload) (int, error) {
	var err error
	total := 0 // descriptors accepted
	var bytes, batches uint64
	full := false
	for total < len(descs) && err == nil && !full {
		k, used, at := 0, 0, total // messages, iovecs, next descriptor
		for k < txBatch && at < len(descs) {
			// Find the packet: descs[at:end].
			end := at
			for end < len(descs) && descs[end].Options&packetio.OptContinued != 0 {
				end++
			}
			if end == len(descs) {
				err = q.errorf("transmit", packetio.ErrBadLength, "descriptor %d: chain runs off the end of the batch", at)
				break
			}
			end++
			frames := end - at
			if frames > maxGatherSegs {
				err = q.errorf("transmit", packetio.ErrBadLength, "descriptor %d: chain of %d frames, at most %d", at, frames, maxGatherSegs)
				break
			}
			if frames > maxPending-q.count-(at-total) {
				full = true // the pending list cannot take the packet
				break
			}
			need := frames
			if q.vnet {
				need++
			}
			if need > len(q.giov)-used {
				break // next sendmmsg
			}
			plen := 0
			for i := at; i < end; i++ {
				if offs != nil && i > at && offs[i] != (packetio.Offload{}) {
					err = q.errorf("transmit", packetio.ErrBadLength, "descriptor %d: offload on a continuation frame", i)
				} else {
					err = q.check(descs[i], i)
				}
				if err != nil {
					q.unsend(descs[at:i]...)
					break
				}
				plen += int(descs[i].Len)
			}
			if err == nil && q.tooLong(plen, offs, at) {
				q.unsend(descs[at:end]...)
				err = q.errorf("transmit", packetio.ErrBadLength, "descriptor %d: a %d-byte packet, longer than the link carries (%d)", at, plen, q.maxLen)
			}
			if err != nil {
				break
			}
			start := used
			if q.vnet {
				var o packetio.Offload
				if offs != nil {
					o = offs[at]
					if e := checkOffload(o, plen); e != nil {
						q.unsend(descs[at:end]...)
						err = q.errorf("transmit", packetio.ErrBadLength, "descriptor %d: %v", at, e)
						break
					}
				}
				o.Marshal(q.hdrs[k][:])
				q.giov[used].Base = &q.hdrs[k][0]
				q.giov[used].SetLen(vnetLen)
				used++
			}
			for i := at; i < end; i++ {
				q.giov[used].Base = &q.reg.mem[descs[i].Addr]
				q.giov[used].SetLen(int(descs[i].Len))
				used++
			}
			msg := &q.msgs[k].Hdr
			msg.Iov = &q.giov[start]
			msg.SetIovlen(used - start)
			q.mfr[k] = frames
			k++
			at = end
		}
		sent, calls := q.sendAll(k)
		batches += calls
		clear(q.giov[:used])
		if pool.Checked() && sent < k {
			unsent := 0
			for _, f := range q.mfr[sent:k] {
				unsent += f
			}
			q.unsend(descs[at-unsent : at]...)
		}
		for _, f := range q.mfr[:sent] {
			for range f {
				d := descs[total]
				bytes += uint64(d.Len)
				q.pend[(q.head+q.count)&(maxPending-1)] = d
				q.count++
				total++
			}
		}
		if sent < k || k == 0 {
			break
		}
	}
	q.account(len(descs), total, err, batches, bytes)
	return total, err
}

// check validates one descriptor for transmit and records that the NIC now
// holds its frame (packetio_checked builds): the kernel copies the bytes in
// sendmmsg, but the frame stays the NIC's until Complete or Reclaim, as on a
// zero-copy backend, so a Free or a second Transmit of it meanwhile is a
// misuse. A frame the caller does not hold is counted in TxStats.Refused
// and answered with ErrNotOwned; a zero Desc (also reported by Err) and a
// descriptor outside its frame with ErrBadLength, counted by the caller in
// rejected_descs (part of Refused).
func (q *TxQueue) check(d packetio.Desc, i int) error {
	if d == (packetio.Desc{}) {
		q.pool.RefuseZero(pool.OpTransmit) // for Err; counted in rejected_descs as before
		return q.errorf("transmit", packetio.ErrBadLength, "descriptor %d is zero: it names no frame", i)
	}
	if !q.reg.descOK(d) {
		return q.errorf("transmit", packetio.ErrBadLength, "descriptor %d (addr %#x, len %d) does not name bytes inside one frame", i, d.Addr, d.Len)
	}
	if !q.pool.Send(q.pool.Base(d.Addr)) {
		q.refused.Add(1)
		return q.errorf("transmit", packetio.ErrNotOwned, "descriptor %d: frame %#x is not the caller's to send", i, q.pool.Base(d.Addr))
	}
	return nil
}

// unsend hands frames check gave the NIC but the kernel did not take back to
// the caller (packetio_checked builds; a no-op otherwise).
func (q *TxQueue) unsend(descs ...packetio.Desc) {
	if !pool.Checked() {
		return
	}
	for _, d := range descs {
		q.pool.Take(pool.OpReclaim, q.pool.Base(d.Addr))
	}
}

// tooLong reports whether packet i of n bytes is longer than the link
// carries. A GSO super-frame (offs[i] segmented) is not bound by it: the
// kernel cuts it to the link's size.
func (q *TxQueue) tooLong(n int, offs []packetio.Offload, i int) bool {
	return n > q.maxLen && (offs == nil || !offs[i].Segmented())
}

// sendAll sends msgs[:n] and returns how many the kernel took and how many
// calls it made. EAGAIN and ENOBUFS are back-pressure: it stops there and the
// rest stays the caller's. EINTR is retried a bounded number of times. Any
// other error refuses the message at the head outright: it is counted as
// lost, treated as sent (the kernel will never take it) and skipped, so one
// bad frame cannot wedge the queue. A vanished interface fails the queue.
func (q *TxQueue) sendAll(n int) (int, uint64) {
	sent, stalls := 0, 0
	var calls uint64
	for sent < n {
		k, errno := sendmmsgFn(q.fd, q.msgs[sent:n])
		q.sends.Add(1)
		calls++
		if k > 0 {
			sent += k
			stalls = 0
			continue
		}
		switch errno {
		case unix.EAGAIN, unix.ENOBUFS:
			q.eagain.Add(1)
			return sent, calls
		case 0, unix.EINTR:
			q.eintr.Add(1)
			if stalls++; stalls > maxStalls {
				return sent, calls
			}
		case unix.ENODEV, unix.ENXIO, unix.EBADF, unix.ENOTSOCK:
			q.lastErrno.Store(uint64(errno))
			q.failed.Store(true)
			return sent, calls
		default:
			q.lastErrno.Store(uint64(errno))
			q.dropped.Add(1)
			sent++
		}
	}
	return sent, calls
}

// TransmitGather sends len(counts) packets straight from the caller's
// memory: segs holds every packet's pieces back to back, counts[i] how many
// belong to packet i, offs nil or one Offload per packet (WithGSO only). It
// returns how many packets the kernel took, a prefix of whole packets; the
// memory is the caller's again on return. Nothing touches the pool or the
// pending list.
func (q *TxQueue) TransmitGather(segs [][]byte, counts []int, offs []packetio.Offload) (int, error) {
	if !q.calls.Enter(&q.closed) {
		return 0, q.errorf("transmit", packetio.ErrClosed, "transmit gather")
	}
	defer q.calls.Exit()
	if len(counts) == 0 {
		return 0, nil
	}
	if offs != nil && len(offs) != len(counts) {
		return 0, q.errorf("transmit", packetio.ErrBadLength, "%d offloads for %d packets", len(offs), len(counts))
	}
	if offs != nil && !q.vnet {
		return 0, q.errorf("transmit", packetio.ErrUnsupported, "gather offloads need a device opened WithGSO")
	}
	if q.failed.Load() {
		return 0, q.Err()
	}
	if q.ring != nil {
		return q.gatherRing(segs, counts)
	}
	var err error
	total, seg := 0, 0
	var bytes, batches uint64
	for total < len(counts) && err == nil {
		k, used := 0, 0
		for k < txBatch && total+k < len(counts) {
			c := counts[total+k]
			if c <= 0 || c > len(segs)-seg {
				err = q.errorf("transmit", packetio.ErrBadLength, "packet %d: count %d with %d segments left", total+k, c, len(segs)-seg)
				break
			}
			if c > maxGatherSegs {
				err = q.errorf("transmit", packetio.ErrBadLength, "packet %d: %d segments, at most %d", total+k, c, maxGatherSegs)
				break
			}
			need := c
			if q.vnet {
				need++
			}
			if need > len(q.giov)-used {
				break // next sendmmsg
			}
			plen := 0
			for _, s := range segs[seg : seg+c] {
				if len(s) == 0 {
					err = q.errorf("transmit", packetio.ErrBadLength, "packet %d: empty segment", total+k)
					break
				}
				plen += len(s)
			}
			if err == nil && q.tooLong(plen, offs, total+k) {
				err = q.errorf("transmit", packetio.ErrBadLength, "packet %d: %d bytes, longer than the link carries (%d)", total+k, plen, q.maxLen)
			}
			if err != nil {
				break
			}
			start := used
			if q.vnet {
				var o packetio.Offload
				if offs != nil {
					o = offs[total+k]
					if e := checkOffload(o, plen); e != nil {
						err = q.errorf("transmit", packetio.ErrBadLength, "packet %d: %v", total+k, e)
						break
					}
				}
				o.Marshal(q.hdrs[k][:])
				q.giov[used].Base = &q.hdrs[k][0]
				q.giov[used].SetLen(vnetLen)
				used++
			}
			for _, s := range segs[seg : seg+c] {
				q.giov[used].Base = &s[0]
				q.giov[used].SetLen(len(s))
				used++
			}
			msg := &q.msgs[k].Hdr
			msg.Iov = &q.giov[start]
			msg.SetIovlen(used - start)
			seg += c
			q.glen[k] = plen
			k++
		}
		sent, calls := q.sendAll(k)
		batches += calls
		// Do not keep the caller's memory reachable from the queue.
		clear(q.giov[:used])
		for _, l := range q.glen[:sent] {
			bytes += uint64(l)
		}
		total += sent
		if sent < k {
			break
		}
	}
	if err != nil {
		q.rejected.Add(1)
	}
	q.batches.Add(batches)
	q.bytes.Add(bytes)
	q.packets.Add(uint64(total))
	q.completed.Add(uint64(total)) // nothing waits to be handed back
	return total, err
}

// Err is nil while the queue is healthy, wraps ErrQueueFailed once the
// interface has gone, and wraps ErrClosed after Close. A misuse the
// packetio_checked build caught, or a frame the kernel refused in the
// transmit ring (TP_STATUS_WRONG_FORMAT, matching ErrBadLength), is reported
// too, the first one for good, while the queue goes on working.
func (q *TxQueue) Err() error {
	if q.closed.Load() {
		return q.errorf("transmit", packetio.ErrClosed, "queue closed")
	}
	if q.failed.Load() {
		return q.errorf("transmit", packetio.ErrDeviceGone, "interface gone (%v)", unix.Errno(q.lastErrno.Load()))
	}
	if err := q.pool.Misuse(); err != nil {
		return packetio.NewOpError("transmit", backendName, q.dev.name, q.index, err)
	}
	if e := q.kernelRefusal.Load(); e != nil {
		return *e
	}
	return nil
}

// Complete returns up to max sent frames, oldest first, to this queue's pool
// and reports how many left the pending list. Frames from a receive queue are
// refused by this pool (and counted): forwarders use Reclaim.
func (q *TxQueue) Complete(max int) int {
	n := min(max, q.count)
	if n <= 0 {
		return 0
	}
	for range n {
		d := q.pend[q.head]
		q.pool.Done(q.pool.Base(d.Addr))
		q.head = (q.head + 1) & (maxPending - 1)
	}
	q.count -= n
	q.completed.Add(uint64(n))
	return n
}

// Reclaim hands up to max sent frames, oldest first, back to the caller,
// appended to out.
func (q *TxQueue) Reclaim(max int, out []packetio.Desc) []packetio.Desc {
	n := min(max, q.count)
	if n <= 0 {
		return out
	}
	for range n {
		d := q.pend[q.head]
		if pool.Checked() {
			q.pool.Take(pool.OpReclaim, q.pool.Base(d.Addr))
		}
		out = append(out, d)
		q.head = (q.head + 1) & (maxPending - 1)
	}
	q.count -= n
	q.completed.Add(uint64(n))
	return out
}

// Free returns frames to the pool without sending them. A zero Desc, a
// foreign, unaligned or surplus frame and (packetio_checked) one the caller
// does not hold (in flight, or freed already) are refused and counted in
// TxStats.Refused (and pool_rejected); Err reports the first misuse.
func (q *TxQueue) Free(descs []packetio.Desc) {
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

// NumCompleted is how many frames Complete would return now: every pending
// one, since a frame has been copied (into a ring slot, or by sendmmsg) by
// the time Transmit returns.
func (q *TxQueue) NumCompleted() int { return q.count }

// NumInFlight is how many sent frames have not been handed back.
func (q *TxQueue) NumInFlight() int { return q.count }

// NumFreeSlots is how many more frames Transmit takes now: what the pending
// list and the free ring slots allow.
func (q *TxQueue) NumFreeSlots() int {
	if !q.calls.Enter(&q.closed) {
		return 0
	}
	defer q.calls.Exit()
	if q.ring != nil {
		return q.ring.free(maxPending - q.count)
	}
	return maxPending - q.count
}

// NumFreeFrames is how many frames the pool holds.
func (q *TxQueue) NumFreeFrames() int { return q.pool.Len() }

// SendFunc is the transmit cycle in one call: Complete, Alloc(count), build
// each frame, Transmit. build returning 0 ends the batch; below 0, beyond
// the frame or beyond what the link carries (Capabilities().MaxTxLen)
// abandons it (every frame back to the pool, 0 and ErrBadLength, counted in
// TxStats.Refused). On a queue that failed (the interface went away) it
// returns the queue's error, matching ErrDeviceGone, with how many packets
// reached the kernel before the failure.
func (q *TxQueue) SendFunc(count int, build func(i int, frame []byte) int) (int, error) {
	if !q.calls.Enter(&q.closed) {
		return 0, q.errorf("send", packetio.ErrClosed, "send")
	}
	defer q.calls.Exit()
	if q.failed.Load() {
		return 0, q.Err()
	}
	q.Complete(count + q.count)
	if q.ring != nil {
		return q.sendRing(count, build)
	}
	descs := q.alloc(count)
	built := 0
	for i := range descs {
		f := q.reg.Writable(descs[i])
		n := build(i, f)
		if n == 0 {
			break
		}
		if n < 0 || n > len(f) || n > q.maxLen {
			q.Free(descs)
			q.rejected.Add(1)
			return 0, q.errorf("send", packetio.ErrBadLength, "build returned %d for frame %d of %d bytes (the link carries %d)", n, i, len(f), q.maxLen)
		}
		descs[i].Len = uint32(n)
		built++
	}
	q.Free(descs[built:])
	sent, err := q.transmit(descs[:built], nil)
	q.Free(descs[sent:built])
	if err == nil && q.failed.Load() {
		err = q.Err() // the interface went away during this call
	}
	return sent, err
}

// Stats returns the queue's counters. Safe from any goroutine.
func (q *TxQueue) Stats() (packetio.TxStats, error) {
	dropped, rejected := q.dropped.Load(), q.rejected.Load()
	st := packetio.TxStats{
		Packets:   q.packets.Load(),
		Bytes:     q.bytes.Load(),
		Completed: q.completed.Load(),
		Batches:   q.batches.Load(),
		RingFull:  q.ringFull.Load(),
		PoolEmpty: q.poolEmpty.Load(),
		Errors:    dropped,
		Refused:   rejected + q.refused.Load(),
		Backend: map[string]uint64{
			"rejected_descs": rejected,
			"pool_rejected":  q.pool.Rejected(),
			"eagain":         q.eagain.Load(),
			"eintr":          q.eintr.Load(),
			"dropped":        dropped,
			"last_errno":     q.lastErrno.Load(),
			"sends":          q.sends.Load(),
			"wrong_format":   q.wrongFormat.Load(),
		},
	}
	if s := q.stamper; s != nil {
		st.Backend["tx_stamps"] = s.stamps.Load()
		st.Backend["tx_stamp_gaps"] = s.gaps.Load()
		st.Backend["tx_stamp_errors"] = s.errs.Load()
	}
	return st, nil
}

// Close stops the queue and waits until no call on it is in progress. It is
// idempotent and safe from any goroutine. From inside a call on the queue
// (a SendFunc build function), which it would wait for forever, it refuses
// with an error matching packetio.ErrBusy and changes nothing. The socket
// and the ring belong to the Device, which closes and unmaps them
// afterwards.
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
	return packetio.NewOpError("close", backendName, q.dev.name, q.index, callgate.ErrInside)
}

// account adds one Transmit to the counters: offered descriptors, total
// taken, the refusal that ended it (a misuse is Err's, not a rejection),
// system-call batches and bytes. Packets is added last, after the pending
// list grew, so Completed never passes it.
func (q *TxQueue) account(offered, total int, err error, batches, bytes uint64) {
	if err != nil && !errors.Is(err, packetio.ErrNotOwned) {
		q.rejected.Add(1)
	}
	if total == 0 && err == nil && offered > 0 {
		q.ringFull.Add(1)
	}
	q.batches.Add(batches)
	q.bytes.Add(bytes)
	q.packets.Add(uint64(total))
}
