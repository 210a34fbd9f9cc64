package xdp

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/pool"
)

// maxTxSegs is the longest chain one transmitted packet may have in copy
// mode: MAX_SKB_FRAGS fragments plus the head.
const maxTxSegs = 18

// Alloc takes up to n frames from the transmit pool and returns them with
// Len 0 and Addr at the start of the packet area (past the transmit
// metadata with WithTxMetadata). It returns no more than the transmit ring
// has room for, so the next Transmit takes them all. The slice belongs to
// the socket and is reused by the next Alloc.
func (s *Socket) Alloc(n int) []Desc {
	if n <= 0 || s.t.ring.ents == nil || !s.enterTx() {
		return nil
	}
	defer s.exitTx()
	return s.alloc(n)
}

func (s *Socket) alloc(n int) []Desc {
	k := min(uint32(n), s.t.ring.free(uint32(n)), uint32(s.t.pool.Len()))
	s.t.descs = s.t.descs[:0]
	if k == 0 {
		if s.t.pool.Len() == 0 {
			s.t.st.poolEmpty.Add(1)
		}
		return s.t.descs
	}
	s.t.addrs = s.t.pool.Pop(int(k), s.t.addrs[:0])
	for _, a := range s.t.addrs {
		if s.txMeta {
			// A frame asks nothing until its builder says so: no
			// stale request from its last use.
			clear(s.umem.mem[a : a+TxMetadataLen])
		}
		s.t.descs = append(s.t.descs, Desc{Addr: a + s.txHeadroom})
	}
	return s.t.descs
}

// Free returns frames to the transmit pool without sending them: frames
// Alloc gave that will not be sent, or the suffix Transmit refused. A frame
// the pool does not own, and a zero descriptor (no frame is ever handed
// out at address 0 with length 0), is refused and counted in
// Stats().Rejected.
func (s *Socket) Free(descs []Desc) {
	if len(descs) == 0 || !s.enterTx() {
		return
	}
	defer s.exitTx()
	s.free(descs)
}

func (s *Socket) free(descs []Desc) {
	rejected := 0
	for _, d := range descs {
		if isZero(d) {
			s.t.pool.RefuseZero(pool.OpFree)
			rejected++
			continue
		}
		if !s.t.pool.Put(pool.OpFree, s.umem.base(d.Addr)) {
			rejected++
		}
	}
	if rejected > 0 {
		s.t.st.rejected.Add(uint64(rejected))
	}
}

// Transmit puts descriptors on the transmit ring and returns how many it
// took: the longest prefix that fits the ring, is valid, and (with
// WithMultiBuffer) ends on a whole packet. A descriptor must name 1 or more
// bytes inside one frame of the UMEM (past the metadata room with
// WithTxMetadata), and a packet no more than MaxTxLen; the first that does
// not ends the prefix and is counted in Stats().Rejected (and TxTooLong).
// The frames belong to the kernel until Complete. Transmit kicks the kernel
// when it must (without need-wakeup, or when the ring flag asks, or when
// the last kick left descriptors behind); Stats counts kicks and the kicks
// it saved. Once the socket failed (Err) it takes nothing.
func (s *Socket) Transmit(descs []Desc) int {
	if len(descs) == 0 || s.t.ring.ents == nil || !s.enterTx() {
		return 0
	}
	defer s.exitTx()
	return s.transmit(descs, true, false)
}

// TransmitWithMetadata is Transmit that marks every descriptor as carrying
// transmit metadata (WithTxMetadata), including frames that did not come
// from Alloc (received or shared ones): the caller wrote, or cleared, the
// TxMetadataLen bytes in front of each. Transmit marks only the socket's
// own transmit frames, whose metadata Alloc cleared, because the bytes in
// front of a received frame hold its arrival stamp.
func (s *Socket) TransmitWithMetadata(descs []Desc) int {
	if len(descs) == 0 || s.t.ring.ents == nil || !s.enterTx() {
		return 0
	}
	defer s.exitTx()
	return s.transmit(descs, true, true)
}

// TransmitNoKick is Transmit without the kick: queue several batches, then
// call KickIfNeeded once.
func (s *Socket) TransmitNoKick(descs []Desc) int {
	if len(descs) == 0 || s.t.ring.ents == nil || !s.enterTx() {
		return 0
	}
	defer s.exitTx()
	return s.transmit(descs, false, false)
}

// isZero reports whether d is the zero descriptor, which names no frame:
// the socket never hands out address 0 (see makePools), so a caller that
// passes it passes an unset descriptor.
func isZero(d Desc) bool { return d.Addr == 0 && d.Len == 0 }

// validTx reports whether d names 1+ bytes inside one frame, leaving the
// metadata room in front of it, and no more than the link carries.
func (s *Socket) validTx(d Desc) bool {
	off := d.Addr & s.umem.mask
	return d.Addr < uint64(len(s.umem.mem)) && d.Len != 0 && uint64(d.Len) <= uint64(s.frameSize)-off && off >= s.txHeadroom &&
		d.Len <= s.maxTxLen
}

// sendable hands d's frame to the kernel in the ownership table of the pool
// that owns it (packetio_checked builds), refusing a zero Desc in every
// build and a frame the caller does not hold in a checked one.
func (s *Socket) sendable(d Desc) bool {
	if d == (Desc{}) {
		s.t.pool.RefuseZero(pool.OpTransmit)
		return false
	}
	base := s.umem.base(d.Addr)
	if s.reuseRx && s.r.pool.Owns(base) {
		return s.r.pool.Send(base)
	}
	return s.t.pool.Send(base)
}

// owned marks descs sent, up to the first one sendable refuses (counted in
// Stats().Rejected), and returns how many may go: with WithMultiBuffer cut
// back to a whole packet, the cut frames handed back to the caller.
func (s *Socket) owned(descs []Desc) int {
	end := 0
	for i, d := range descs {
		if !s.sendable(d) {
			s.t.st.rejected.Add(1)
			for _, c := range descs[end:i] {
				s.reclaimed(c.Addr)
			}
			return end
		}
		if !s.multiBuffer || d.Options&unix.XDP_PKT_CONTD == 0 {
			end = i + 1
		}
	}
	return len(descs)
}

func (s *Socket) transmit(descs []Desc, kickIt, allMeta bool) int {
	if s.failed.Load() != nil {
		return 0
	}
	s.maybePin()
	want := uint32(min(len(descs), int(s.t.ring.size)))
	free := s.t.ring.free(want)
	n := int(min(want, free))
	if n == 0 {
		s.t.st.ringFull.Add(1)
		if kickIt {
			s.kickFull()
		}
		return 0
	}
	valid := n
	for i := range n {
		if !s.validTx(descs[i]) {
			valid = i
			s.refuse(descs[i])
			break
		}
	}
	n = valid
	if s.multiBuffer {
		// Only whole packets: cut back to the last descriptor that ends
		// one, and refuse a chain longer than the kernel takes.
		end, segs, plen := 0, 0, uint64(0)
		for i := range n {
			segs++
			plen += uint64(descs[i].Len)
			if segs > maxTxSegs || plen > uint64(s.maxTxLen) {
				s.t.st.rejected.Add(1)
				if plen > uint64(s.maxTxLen) {
					s.t.st.tooLong.Add(1)
				}
				break
			}
			if descs[i].Options&unix.XDP_PKT_CONTD == 0 {
				end, segs, plen = i+1, 0, 0
			}
		}
		n = end
	}
	n = s.owned(descs[:n])
	if n == 0 {
		return 0
	}
	var bytes uint64
	for i := range n {
		d := descs[i]
		var o uint32
		if s.txMeta && (allMeta || s.t.pool.Owns(s.umem.base(d.Addr))) {
			o = unix.XDP_TX_METADATA
		}
		if s.multiBuffer {
			o |= d.Options & unix.XDP_PKT_CONTD
		}
		s.t.ring.put(uint32(i), unix.XDPDesc{Addr: d.Addr, Len: d.Len, Options: o})
		bytes += uint64(d.Len)
	}
	s.t.ring.submit(uint32(n))
	s.t.st.transmitted.Add(uint64(n))
	s.t.st.txBytes.Add(bytes)
	s.t.st.txBatches.Add(1)
	if inflight := s.t.st.transmitted.Load() - s.t.st.completed.Load(); inflight > s.t.st.inflightHigh.Load() {
		s.t.st.inflightHigh.Store(inflight)
	}
	if kickIt {
		s.kickIfNeeded()
	}
	return n
}

// kickNeeded: without need-wakeup the kernel never says, so every batch
// kicks; with it, only when the transmit ring's flag asks (a zero-copy
// driver that is draining clears it; copy mode keeps it set, because there
// the kernel moves descriptors only inside the system call).
func (s *Socket) kickNeeded() bool { return !s.needWakeup || s.t.ring.needsWakeup() }

func (s *Socket) kickIfNeeded() {
	if s.kickNeeded() || s.t.kickPending {
		_ = s.kick()
		return
	}
	s.t.st.kicksSuppressed.Add(1)
}

// kickFull kicks on a full ring. In copy mode a full ring drains only inside
// a system call, so waiting for room without kicking deadlocks: kick
// whatever the flag says.
func (s *Socket) kickFull() {
	if !s.zeroCopy || s.kickNeeded() {
		_ = s.kick()
		return
	}
	s.t.st.kicksSuppressed.Add(1)
}

// Kick tells the kernel the transmit ring has work, whatever the ring flag
// says. Call it when the ring is full and you wait for room: in copy mode
// nothing drains the ring otherwise.
func (s *Socket) Kick() error {
	if s.t.ring.ents == nil || !s.enterTx() {
		return s.opErr("kick", ErrClosed)
	}
	defer s.exitTx()
	return s.kick()
}

// KickIfNeeded kicks when the kernel needs it (see WithNeedWakeup) and
// descriptors wait: the companion of SendFuncNoKick and TransmitNoKick, one
// system call per batch of batches.
func (s *Socket) KickIfNeeded() error {
	if s.t.ring.ents == nil || !s.enterTx() {
		return s.opErr("kick", ErrClosed)
	}
	defer s.exitTx()
	if s.t.ring.outstanding() == 0 {
		return nil
	}
	if s.kickNeeded() {
		return s.kick()
	}
	s.t.st.kicksSuppressed.Add(1)
	return nil
}

// kick is sendto with a bounded EAGAIN retry. In copy mode one call moves at
// most the socket's transmit budget and answers EAGAIN while more wait, so
// it retries; EAGAIN also means a full completion ring, which no kick fixes,
// so it stops then, and after a bound. Every retry and every give-up is
// counted, so a ring that stays stuck shows in Stats.
func (s *Socket) kick() error {
	retries := 0
	for {
		e := kick(s.fd)
		s.t.st.kicks.Add(1)
		switch e {
		case 0:
			s.kicked(false)
			return nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			if retries >= s.t.kickRetryBound || s.t.comp.ready() >= s.t.comp.size {
				s.t.st.kickGaveUp.Add(1)
				return s.kicked(true)
			}
			retries++
			s.t.st.kickRetries.Add(1)
		case unix.EBUSY, unix.ENOBUFS:
			// The device queue is busy, or it dropped the frame at the
			// head of the ring (NET_XMIT_DROP, which the kernel consumed
			// and completes): back-pressure, not an error. What stays on
			// the ring moves only with another kick.
			s.t.st.kickBusy.Add(1)
			return s.kicked(true)
		case unix.ENETDOWN:
			// The link is down: the kernel takes nothing until it comes
			// back up, then the next kick sends what waits. Not a wedge.
			s.t.st.kickErrors.Add(1)
			s.t.st.linkDown.Add(1)
			s.t.kickPending = true
			s.t.wedge.reset()
			return s.opErr("kick", e)
		case unix.ENXIO:
			// The kernel unbound the socket: its device is gone.
			s.t.st.kickErrors.Add(1)
			return s.fail("kick", errGone(e))
		default:
			s.t.st.kickErrors.Add(1)
			return s.opErr("kick", e)
		}
	}
}

// kicked follows a kick the kernel answered: when it left descriptors on
// the ring after back-pressure (left), the next call kicks again instead of
// waiting for a new batch; and a ring that holds descriptors while kick
// after kick moves none for wedgeAfter (with room on the completion ring,
// so the caller's unread completions are not the cause) is wedged: the
// socket fails with ErrWedged. It costs a clock read only on a kick that
// found the ring where the last one left it.
func (s *Socket) kicked(left bool) error {
	out := s.t.ring.outstanding()
	s.t.kickPending = left && out > 0
	if out == 0 {
		s.t.wedge.reset()
		return nil
	}
	if !s.t.wedge.observe(s.t.ring.consumer.Load(), time.Now) {
		return nil
	}
	held := s.t.st.transmitted.Load() - s.t.st.completed.Load() - uint64(out)
	if held >= uint64(s.t.comp.size) {
		s.t.wedge.reset() // the caller does not complete: back-pressure
		return nil
	}
	s.t.st.wedged.Add(1)
	return s.fail("kick", fmt.Errorf("%w: %d descriptors on the transmit ring, none taken for %v of kicks", packetio.ErrWedged, out, wedgeAfter))
}

// wedgeAfter is how long kicks may find a transmit ring that holds
// descriptors unmoved before the ring counts as wedged: far longer than
// any busy link keeps a queue stopped.
const wedgeAfter = time.Second

// wedgeWatch follows the transmit ring's consumer index across kicks.
type wedgeWatch struct {
	cons     uint32    // the index the last kick found
	watching bool      // cons is set
	since    time.Time // when a kick first found cons unmoved; zero: not yet
}

// observe records a kick that found the ring's consumer at cons with
// descriptors waiting, and reports whether it has not moved for wedgeAfter.
// now is called only when cons has not moved.
func (w *wedgeWatch) observe(cons uint32, now func() time.Time) bool {
	if !w.watching || cons != w.cons {
		*w = wedgeWatch{cons: cons, watching: true}
		return false
	}
	t := now()
	if w.since.IsZero() {
		w.since = t
		return false
	}
	return t.Sub(w.since) >= wedgeAfter
}

// reset forgets what the watch saw: the ring emptied, or stopped for a
// reason that is not a wedge.
func (w *wedgeWatch) reset() { *w = wedgeWatch{} }

// retryKick kicks when the last kick left descriptors behind: called by
// the calls a transmit loop makes between batches (Complete,
// CompleteInto, NumCompleted), so the last batch of a burst is not
// stranded behind a frame the device dropped.
func (s *Socket) retryKick() {
	if s.t.kickPending {
		s.t.kickPending = false
		if s.t.ring.outstanding() > 0 {
			_ = s.kick()
		}
	}
}

// refuse counts a descriptor Transmit turned away.
func (s *Socket) refuse(d Desc) {
	s.t.st.rejected.Add(1)
	switch {
	case isZero(d):
		s.t.pool.RefuseZero(pool.OpTransmit) // reported by Misuse in every build
	case d.Len > s.maxTxLen:
		s.t.st.tooLong.Add(1)
	}
}

// Complete takes up to max completions off the completion ring and returns
// the frames to their pool: the transmit pool, or with WithTxReuseRxFrames
// the receive pool for received frames. A frame of neither (the shared
// area, another queue's) goes to the WithOnForeignComplete callback, or is
// counted in Stats().Foreign when there is none. It returns how many
// completed.
func (s *Socket) Complete(max int) int {
	if max <= 0 || s.t.ring.ents == nil || !s.enterTx() {
		return 0
	}
	defer s.exitTx()
	return s.complete(max)
}

func (s *Socket) complete(max int) int {
	s.retryKick()
	n := s.t.comp.avail(uint32(min(max, int(s.t.comp.size))))
	if n == 0 {
		return 0
	}
	var rejected, foreign uint64
	for i := range n {
		addr := s.t.comp.get(i)
		base := s.umem.base(addr)
		switch {
		case s.t.pool.Owns(base):
			if !s.t.pool.Done(base) {
				rejected++
			}
		case s.reuseRx && s.r.pool.Owns(base):
			if !s.r.pool.Done(base) {
				rejected++
			}
		case s.onForeign != nil:
			s.onForeign(addr)
		default:
			foreign++
		}
	}
	s.t.comp.release(n)
	s.t.st.completed.Add(uint64(n))
	s.t.st.compBatches.Add(1)
	if rejected > 0 {
		s.t.st.rejected.Add(rejected)
	}
	if foreign > 0 {
		s.t.st.foreign.Add(foreign)
	}
	return int(n)
}

// CompleteInto takes up to max completions and appends their addresses to
// out instead of pooling them: what a forwarder needs to give received
// frames back to the receive side (Recycle rounds an address to its frame).
// The addresses are exactly those transmitted.
func (s *Socket) CompleteInto(max int, out []uint64) []uint64 {
	if max <= 0 || s.t.ring.ents == nil || !s.enterTx() {
		return out
	}
	defer s.exitTx()
	s.retryKick()
	n := s.t.comp.avail(uint32(min(max, int(s.t.comp.size))))
	for i := range n {
		out = append(out, s.t.comp.get(i))
		if pool.Checked() {
			s.reclaimed(out[len(out)-1])
		}
	}
	if n > 0 {
		s.t.comp.release(n)
		s.t.st.completed.Add(uint64(n))
		s.t.st.compBatches.Add(1)
	}
	return out
}

// reclaimed hands a completed frame back to the caller in the ownership
// table of its pool (packetio_checked builds).
func (s *Socket) reclaimed(addr uint64) {
	base := s.umem.base(addr)
	if s.reuseRx && s.r.pool.Owns(base) {
		s.r.pool.Take(pool.OpReclaim, base)
		return
	}
	s.t.pool.Take(pool.OpReclaim, base)
}

// NumCompleted is how many completions wait on the ring.
func (s *Socket) NumCompleted() int {
	if s.t.ring.ents == nil || !s.enterTx() {
		return 0
	}
	defer s.exitTx()
	s.retryKick()
	return int(s.t.comp.ready())
}

// NumTransmitted is how many transmitted frames the kernel still owns:
// put on the ring and not yet taken back by Complete.
func (s *Socket) NumTransmitted() int {
	return int(s.t.st.transmitted.Load() - s.t.st.completed.Load())
}

// NumFreeTxSlots is how many descriptors the transmit ring takes now.
func (s *Socket) NumFreeTxSlots() int {
	if s.t.ring.ents == nil || !s.enterTx() {
		return 0
	}
	defer s.exitTx()
	return int(s.t.ring.free(s.t.ring.size))
}

// FreeTxFrames is how many frames the transmit pool holds.
func (s *Socket) FreeTxFrames() int {
	if s.t.ring.ents == nil || !s.enterTx() {
		return 0
	}
	defer s.exitTx()
	return s.t.pool.Len()
}

// SendFunc is the whole transmit cycle in one call: it completes what the
// kernel finished, allocates up to count frames, calls build(i, frame) for
// each with the frame's writable bytes, and transmits. build returns the
// packet length: 0 ends the batch early, below 0 or above len(frame)
// abandons the whole batch (every frame back to the pool) and returns an
// error wrapping ErrBadLength. A full ring is a kick and (0, nil): call it
// again.
func (s *Socket) SendFunc(count int, build func(i int, frame []byte) int) (int, error) {
	return s.sendFunc(count, build, true)
}

// SendFuncNoKick is SendFunc without the kick, for a loop that sends several
// batches and then calls KickIfNeeded once.
func (s *Socket) SendFuncNoKick(count int, build func(i int, frame []byte) int) (int, error) {
	return s.sendFunc(count, build, false)
}

func (s *Socket) sendFunc(count int, build func(i int, frame []byte) int, kickIt bool) (int, error) {
	if s.t.ring.ents == nil {
		return 0, s.opErr("send", fmt.Errorf("the socket has no transmit ring: %w", ErrUnsupported))
	}
	if !s.enterTx() {
		return 0, s.opErr("send", ErrClosed)
	}
	defer s.exitTx()
	if err := s.failure("send"); err != nil {
		return 0, err
	}
	if count <= 0 {
		return 0, nil
	}
	s.t.st.sendReq.Add(uint64(count))
	s.complete(int(s.t.comp.size))
	descs := s.alloc(count)
	if len(descs) == 0 {
		if s.t.ring.free(1) == 0 {
			s.t.st.ringFull.Add(1)
		}
		if kickIt && s.t.ring.outstanding() > 0 {
			s.kickFull()
		}
		return 0, nil
	}
	s.t.st.sendGot.Add(uint64(len(descs)))
	n := len(descs)
	for i := range descs {
		frame := s.umem.rest(descs[i].Addr)
		l := build(i, frame)
		if l == 0 {
			n = i
			break
		}
		if l < 0 || l > len(frame) {
			s.free(descs)
			return 0, s.opErr("send", fmt.Errorf("build returned length %d for a %d-byte frame: %w", l, len(frame), ErrBadLength))
		}
		if l > int(s.maxTxLen) {
			s.free(descs)
			s.t.st.tooLong.Add(1)
			return 0, s.opErr("send", fmt.Errorf("build returned length %d, longer than the link carries (%d: MTU, Ethernet and VLAN header): %w", l, s.maxTxLen, ErrBadLength))
		}
		descs[i].Len = uint32(l)
	}
	if n < len(descs) {
		s.free(descs[n:])
	}
	if n == 0 {
		return 0, nil
	}
	sent := s.transmit(descs[:n], kickIt, false)
	if sent < n {
		s.free(descs[sent:n])
	}
	return sent, nil
}

// SendBatch copies payloads into frames and transmits them, doing the whole
// ring cycle: it returns how many went this call (a full ring gives fewer;
// call again with the rest). A payload that cannot fit is refused before
// anything is queued, with an error wrapping ErrBadLength: larger than one
// frame without WithMultiBuffer, or than 18 frames with it (where it is
// split into a chain).
func (s *Socket) SendBatch(payloads [][]byte) (int, error) {
	if s.t.ring.ents == nil {
		return 0, s.opErr("send", fmt.Errorf("the socket has no transmit ring: %w", ErrUnsupported))
	}
	room := s.umem.chunk - int(s.txHeadroom)
	for i, p := range payloads {
		switch {
		case len(p) == 0:
			return 0, s.opErr("send", fmt.Errorf("payload %d is empty: %w", i, ErrBadLength))
		case len(p) > int(s.maxTxLen):
			return 0, s.opErr("send", fmt.Errorf("payload %d is %d bytes, the link carries %d: %w", i, len(p), s.maxTxLen, ErrBadLength))
		case !s.multiBuffer && len(p) > room:
			return 0, s.opErr("send", fmt.Errorf("payload %d is %d bytes, a frame holds %d (WithMultiBuffer splits it): %w", i, len(p), room, ErrBadLength))
		case s.multiBuffer && len(p) > room*maxTxSegs:
			return 0, s.opErr("send", fmt.Errorf("payload %d is %d bytes, more than %d frames of %d: %w", i, len(p), maxTxSegs, room, ErrBadLength))
		}
	}
	if !s.multiBuffer {
		return s.SendFunc(len(payloads), func(i int, frame []byte) int { return copy(frame, payloads[i]) })
	}
	return s.sendChains(payloads, room)
}

// sendChains is SendBatch with multi-buffer: each payload becomes a chain of
// frames, only whole chains are queued.
func (s *Socket) sendChains(payloads [][]byte, room int) (int, error) {
	if !s.enterTx() {
		return 0, s.opErr("send", ErrClosed)
	}
	defer s.exitTx()
	if err := s.failure("send"); err != nil {
		return 0, err
	}
	s.complete(int(s.t.comp.size))
	need := 0
	pkts := 0
	for _, p := range payloads {
		f := (len(p) + room - 1) / room
		if need+f > int(s.t.ring.free(uint32(need+f))) || need+f > s.t.pool.Len() {
			break
		}
		need += f
		pkts++
	}
	if pkts == 0 {
		s.t.st.ringFull.Add(1)
		s.kickFull()
		return 0, nil
	}
	descs := s.alloc(need)
	k := 0
	for _, p := range payloads[:pkts] {
		for off := 0; off < len(p); off += room {
			end := min(off+room, len(p))
			frame := s.umem.rest(descs[k].Addr)
			descs[k].Len = uint32(copy(frame, p[off:end]))
			if end < len(p) {
				descs[k].Options = unix.XDP_PKT_CONTD
			}
			k++
		}
	}
	sent := s.transmit(descs[:k], true, false)
	if sent < k {
		s.free(descs[sent:k])
	}
	// Count the packets whose last fragment was queued.
	done := 0
	for i := range sent {
		if descs[i].Options&unix.XDP_PKT_CONTD == 0 {
			done++
		}
	}
	return done, nil
}

// Misuse is the first frame the caller handed on without holding it (a zero
// Desc in every build; in a packetio_checked build also a frame in the pool
// or with the kernel), or nil: an error matching packetio.ErrNotOwned that
// names the call and the frame. Safe from any goroutine.
func (s *Socket) Misuse() error {
	if s.r.pool != nil {
		if err := s.r.pool.Misuse(); err != nil {
			return err
		}
	}
	if s.t.pool != nil {
		return s.t.pool.Misuse()
	}
	return nil
}
