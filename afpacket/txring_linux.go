//go:build linux

package afpacket

import (
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/pool"
)

// kickFn is kick, replaced by tests that play the kernel's part on a forged
// ring. Called once per batch.
var kickFn = kick

// kick asks the kernel to send every posted slot of the transmit ring on fd:
// send(2) with no buffer, MSG_DONTWAIT so a full device queue is
// back-pressure rather than a sleep. It returns the errno, 0 on success.
func kick(fd int) unix.Errno {
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	return e
}

// flush sends the k slots posted from the ring's head and returns how many
// of those frames the kernel is done with, in order: sent, or refused as
// TP_STATUS_WRONG_FORMAT, which is counted (wrong_format, Errors), kept for
// Err and dropped from the ring so the frames behind it still go. The rest,
// the suffix the kernel did not take (back-pressure, a dead interface), is
// taken back and is the caller's again. bytes is the length of the frames
// sent.
func (q *TxQueue) flush(k int) (done int, bytes uint64) {
	r := q.ring
	stalls := 0
	for k > 0 {
		errno := kickFn(q.fd)
		q.sends.Add(1)
		t := r.taken(k)
		for i := range t {
			bytes += uint64(r.frameLen(r.slot(i)))
		}
		r.advance(t)
		done += t
		k -= t
		if k == 0 {
			break
		}
		if loadSlotStatus(r.slot(0)) == tpStatusWrongFormat {
			q.refusedByKernel(errno, r.frameLen(r.slot(0)))
			r.drop(k)
			done++
			k--
			continue
		}
		if t > 0 {
			continue // the kernel stopped short without a word: ask again
		}
		switch errno {
		case unix.EINTR, 0:
			q.eintr.Add(1)
			if stalls++; stalls <= maxStalls {
				continue
			}
		case unix.EAGAIN, unix.ENOBUFS:
			q.eagain.Add(1)
		case unix.ENODEV, unix.ENXIO, unix.EBADF, unix.ENOTSOCK:
			q.lastErrno.Store(uint64(errno))
			q.failed.Store(true)
		default:
			q.lastErrno.Store(uint64(errno))
		}
		r.unpost(k)
		break
	}
	return done, bytes
}

// refusedByKernel records a slot the kernel marked TP_STATUS_WRONG_FORMAT:
// counted in wrong_format and Errors, and the first one kept for Err.
func (q *TxQueue) refusedByKernel(errno unix.Errno, n int) {
	q.wrongFormat.Add(1)
	q.dropped.Add(1)
	q.lastErrno.Store(uint64(errno))
	if q.kernelRefusal.Load() == nil {
		err := q.errorf("transmit", packetio.ErrBadLength, "the kernel refused a %d-byte frame in the transmit ring (TP_STATUS_WRONG_FORMAT: %v); it was dropped and counted in Errors", n, errno)
		q.kernelRefusal.CompareAndSwap(nil, &err)
	}
}

// transmitRing is transmit on the ring: each valid descriptor's frame is
// copied into the next free slot, and the batch goes in one send(2).
func (q *TxQueue) transmitRing(descs []packetio.Desc) (int, error) {
	limit := min(len(descs), maxPending-q.count)
	var err error
	total := 0
	var bytes, calls uint64
	for total < limit && err == nil {
		chunk := q.ring.free(min(limit-total, txBatch))
		k := 0
		for ; k < chunk; k++ {
			d := descs[total+k]
			if err = q.check(d, total+k); err != nil {
				break
			}
			if int(d.Len) > q.maxLen || int(d.Len) > q.ring.room() {
				q.unsend(d)
				err = q.errorf("transmit", packetio.ErrBadLength, "descriptor %d: %d bytes, longer than the link carries (%d)", total+k, d.Len, q.maxLen)
				break
			}
			s := q.ring.slot(k)
			copy(q.ring.frame(s), q.reg.mem[d.Addr:d.Addr+uint64(d.Len)])
			q.ring.post(s, int(d.Len))
		}
		if k == 0 {
			break
		}
		sent, b := q.flush(k)
		calls++
		bytes += b
		if pool.Checked() {
			q.unsend(descs[total+sent : total+k]...)
		}
		for i := range sent {
			q.pend[(q.head+q.count)&(maxPending-1)] = descs[total+i]
			q.count++
		}
		total += sent
		if sent < k {
			break
		}
	}
	q.account(len(descs), total, err, calls, bytes)
	return total, err
}

// sendRing is SendFunc on the ring: build writes each frame straight into
// a ring slot, so no pool frame is taken and nothing waits for Complete.
func (q *TxQueue) sendRing(count int, build func(i int, frame []byte) int) (int, error) {
	k := q.ring.free(count)
	if k == 0 {
		if count > 0 {
			q.ringFull.Add(1)
		}
		return 0, nil
	}
	room := min(q.ring.room(), q.room)
	built := 0
	for ; built < k; built++ {
		s := q.ring.slot(built)
		f := q.ring.frame(s)[:room:room]
		n := build(built, f)
		if n == 0 {
			break
		}
		if n < 0 || n > len(f) || n > q.maxLen {
			q.rejected.Add(1)
			return 0, q.errorf("send", packetio.ErrBadLength, "build returned %d for frame %d of %d bytes (the link carries %d)", n, built, len(f), q.maxLen)
		}
		q.ring.setLen(s, n)
	}
	for i := range built {
		storeSlotStatus(q.ring.slot(i), tpStatusSendRequest)
	}
	sent, bytes := q.flush(built)
	if built > 0 {
		q.batches.Add(1)
	}
	q.bytes.Add(bytes)
	q.packets.Add(uint64(sent))
	q.completed.Add(uint64(sent)) // nothing waits to be handed back
	var err error
	if q.failed.Load() {
		err = q.Err()
	}
	return sent, err
}

// gatherRing is TransmitGather on the ring: each packet's segments are
// copied into one slot.
func (q *TxQueue) gatherRing(segs [][]byte, counts []int) (int, error) {
	var err error
	total, seg := 0, 0
	var bytes, calls uint64
	for total < len(counts) && err == nil {
		chunk := q.ring.free(min(len(counts)-total, txBatch))
		k := 0
		for ; k < chunk; k++ {
			c := counts[total+k]
			if c <= 0 || c > len(segs)-seg {
				err = q.errorf("transmit", packetio.ErrBadLength, "packet %d: count %d with %d segments left", total+k, c, len(segs)-seg)
				break
			}
			if c > maxGatherSegs { // the limit of the sendmmsg path, kept alike
				err = q.errorf("transmit", packetio.ErrBadLength, "packet %d: %d segments, at most %d", total+k, c, maxGatherSegs)
				break
			}
			s := q.ring.slot(k)
			plen := 0
			for _, b := range segs[seg : seg+c] {
				if len(b) == 0 {
					err = q.errorf("transmit", packetio.ErrBadLength, "packet %d: empty segment", total+k)
					break
				}
				if plen+len(b) > q.maxLen || plen+len(b) > q.ring.room() {
					err = q.errorf("transmit", packetio.ErrBadLength, "packet %d: longer than the link carries (%d)", total+k, q.maxLen)
					break
				}
				plen += copy(q.ring.frame(s)[plen:], b)
			}
			if err != nil {
				break
			}
			q.ring.post(s, plen)
			seg += c
		}
		if k == 0 {
			break
		}
		sent, b := q.flush(k)
		calls++
		bytes += b
		total += sent
		if sent < k {
			break
		}
	}
	if err != nil {
		q.rejected.Add(1)
	}
	q.batches.Add(calls)
	q.bytes.Add(bytes)
	q.packets.Add(uint64(total))
	q.completed.Add(uint64(total))
	return total, err
}
