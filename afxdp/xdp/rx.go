package xdp

import (
	"encoding/binary"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/pool"
)

// Fill posts up to n frames of the receive pool to the fill ring and
// returns how many it posted: no more than the ring has room for or the pool
// holds. It makes no system call: with need-wakeup a parked driver also
// needs WakeupRx (or a Poll) to see them.
func (s *Socket) Fill(n int) int {
	if n <= 0 || !s.enterRx() {
		return 0
	}
	defer s.exitRx()
	if s.failed.Load() != nil {
		return 0
	}
	want := uint32(min(n, s.r.pool.Len()))
	if want == 0 {
		if s.r.pool.Len() == 0 {
			s.r.st.fillPoolEmpty.Add(1)
		}
		return 0
	}
	free := s.r.fill.free(want)
	k := min(want, free)
	if k == 0 {
		return 0
	}
	s.r.addrs = s.r.pool.PopFill(int(k), s.r.addrs[:0])
	for i, a := range s.r.addrs {
		s.r.fill.put(uint32(i), s.umem.fillAddr(a))
	}
	s.r.fill.submit(k)
	s.r.st.filled.Add(uint64(k))
	return int(k)
}

// NeedsWakeupRx reports whether the driver parked its receive side and asks
// for a system call (WakeupRx, or Poll) before it takes more fill entries.
// One atomic load inside the receive side's call count (Close unmaps the
// ring the flag lives in); false after Close.
func (s *Socket) NeedsWakeupRx() bool {
	if !s.needWakeup || !s.enterRx() {
		return false
	}
	defer s.exitRx()
	return s.r.fill.needsWakeup()
}

// parkedRx is NeedsWakeupRx for a caller already counted in.
func (s *Socket) parkedRx() bool { return s.needWakeup && s.r.fill.needsWakeup() }

// WakeupRx wakes a driver that parked its receive side: a zero-length
// non-blocking recvfrom. A caller that fills without ever blocking in Poll
// must call it whenever NeedsWakeupRx is true, or the driver never sees the
// new fill entries and drops everything. Counted in Stats().RxKicks.
func (s *Socket) WakeupRx() error {
	if !s.enterRx() {
		return s.opErr("wake rx", ErrClosed)
	}
	defer s.exitRx()
	s.r.st.rxKicks.Add(1)
	switch e := wakeRx(s.fd); e {
	case 0, unix.EAGAIN, unix.EINTR, unix.EBUSY, unix.ENETDOWN:
		// ENETDOWN: the link is down, which passes (a link flap is
		// not a dead queue); nothing to wake until it is up.
		return nil
	case unix.ENXIO:
		return s.fail("wake rx", errGone(e))
	default:
		return s.opErr("wake rx", e)
	}
}

// NumReceived is how many packets (descriptors) Receive could return now.
// It reads the ring: no system call.
func (s *Socket) NumReceived() int {
	if s.r.ring.ents == nil || !s.enterRx() {
		return 0
	}
	defer s.exitRx()
	return int(s.r.ring.ready())
}

// NumFreeFillSlots is how many more frames the fill ring takes now.
func (s *Socket) NumFreeFillSlots() int {
	if s.r.ring.ents == nil || !s.enterRx() {
		return 0
	}
	defer s.exitRx()
	return int(s.r.fill.free(s.r.fill.size))
}

// NumFilled is how many frames wait in the fill ring or with the driver:
// posted and not yet received.
func (s *Socket) NumFilled() int {
	return int(s.r.st.filled.Load() - s.r.st.received.Load())
}

// FreeRxFrames is how many frames the receive pool holds.
func (s *Socket) FreeRxFrames() int {
	if !s.enterRx() {
		return 0
	}
	defer s.exitRx()
	return s.r.pool.Len()
}

// Poll waits until a packet is ready or timeout passes, and returns the
// ready count. A negative timeout waits until a packet arrives or Close; a
// zero one does not sleep but still makes one system call (a non-blocking
// recvfrom), which is what wakes a parked driver and, with WithBusyPoll,
// what runs the queue's NAPI poll in this thread. A positive one first
// spins on the ring for up to WithPollSpin's time before it sleeps. It
// returns at once, with no system call, when packets are already waiting.
// It sleeps with the goroutine parked on the Go runtime's network poller,
// holding no thread, so the goroutines it wakes when packets come run on
// its thread without a hand-off; on a socket pinned to a CPU (a Fleet's
// Tuning), or from a thread its caller pinned (runtime.LockOSThread and
// sched_setaffinity), it sleeps in ppoll, and the socket's events reach
// the runtime's poller only once a Poll has parked there (internal/fdwait
// says why that matters at a million packets a second).
// A link that is down is no error: Poll finds nothing until it is up.
// Close (or CloseRx) wakes it with an error wrapping ErrClosed. When the
// device goes away it returns, within probeEvery, an error wrapping
// packetio.ErrDeviceGone (the kernel wakes no sleep for that: a wait is
// cut into slices of probeEvery and the socket asked after each empty
// one), and so does every call after.
func (s *Socket) Poll(timeout time.Duration) (int, error) {
	if s.r.ring.ents == nil {
		return 0, s.opErr("poll", fmt.Errorf("the socket has no receive ring: %w", ErrUnsupported))
	}
	if !s.enterRx() {
		return 0, s.opErr("poll", ErrClosed)
	}
	defer s.exitRx()
	if s.rxStopped.Load() {
		return 0, s.opErr("poll", ErrClosed)
	}
	if err := s.failure("poll"); err != nil {
		return 0, err
	}
	s.maybePin()
	if n := s.r.ring.ready(); n > 0 {
		s.r.spinCold.Store(false) // packets wait: the queue is busy
		return int(n), nil
	}
	if timeout == 0 {
		return s.pollNow()
	}
	if n := s.spinFor(timeout); n > 0 {
		return n, nil
	}
	slept := time.Now()
	var deadline time.Time
	if timeout > 0 {
		deadline = slept.Add(timeout)
	}
	for {
		wait, last := pollSlice(timeout, deadline)
		s.r.st.polls.Add(1)
		if err := s.sleep(wait); err != nil {
			return 0, err
		}
		if s.closing.Load() || s.rxStopped.Load() {
			return 0, s.opErr("poll", ErrClosed)
		}
		if err := s.failure("poll"); err != nil {
			return 0, err // woken by a failure a kick or Err latched
		}
		if s.r.ring.ready() > 0 {
			s.rewarm(slept)
			break
		}
		// An empty wake-up, or the slice ran out: has the device gone?
		// Ask the kernel, now and then.
		if err := s.probeIdle(); err != nil {
			return 0, err
		}
		if last && !time.Now().Before(deadline) {
			break
		}
	}
	return int(s.r.ring.ready()), nil
}

// sleep waits up to wait for the receive ring or the wake eventfd, through
// the waiter (internal/fdwait): the receive goroutine parks on the
// runtime's poller, so the goroutines its packets wake run on its thread;
// one on a pinned thread sleeps in ppoll instead, which wakes that thread
// directly (the waiter tells a thread the caller pinned; a socket its
// Tuning pinned says so, which saves that look and the wake-up below,
// since ppoll polls the socket, which wakes a parked driver itself).
// Either may return early: Poll looks at the ring and the socket's state
// after every return.
func (s *Socket) sleep(wait time.Duration) error {
	if s.pinCPU >= 0 {
		if _, err := s.waiter.Block(wait); err != nil {
			return s.opErr("poll", err)
		}
		return nil
	}
	if s.parkedRx() {
		// A parked driver needs the wake-up: the poller looks at the
		// socket only after an event.
		switch e := wakeRx(s.fd); e {
		case 0, unix.EAGAIN, unix.EINTR, unix.EBUSY, unix.ENETDOWN:
		case unix.ENXIO:
			return s.fail("poll", errGone(e))
		default:
			return s.opErr("poll", e)
		}
	}
	if _, err := s.waiter.Wait(wait); err != nil {
		return s.opErr("poll", err)
	}
	return nil
}

// rxWoken is what Poll's waiter looks at before it parks: packets in the
// receive ring, or a Close, CloseRx or failure whose eventfd write may
// have come before the wait began.
func (s *Socket) rxWoken() bool {
	return s.r.ring.ready() > 0 || s.closing.Load() || s.rxStopped.Load() || s.failed.Load() != nil
}

// pollNow is Poll(0) on an empty ring: one non-blocking recvfrom, the
// cheapest system call that does what a zero-timeout poll is for. It
// busy-polls the queue's NAPI context when the socket busy-polls (as
// DPDK's net_af_xdp does), wakes a parked driver where the driver asks,
// and fails with ENXIO once the kernel has unbound the socket from a
// device that went away. ppoll would do the same and set up a wait on two
// descriptors besides.
func (s *Socket) pollNow() (int, error) {
	s.r.st.polls.Add(1)
	switch e := wakeRx(s.fd); e {
	case 0, unix.EAGAIN, unix.EINTR, unix.EBUSY, unix.ENETDOWN: // ENETDOWN: a link down, which passes
	case unix.ENXIO:
		return 0, s.fail("poll", errGone(e))
	default:
		return 0, s.opErr("poll", e)
	}
	if s.closing.Load() || s.rxStopped.Load() {
		return 0, s.opErr("poll", ErrClosed)
	}
	if n := s.r.ring.ready(); n > 0 {
		return int(n), nil
	}
	if err := s.failure("poll"); err != nil {
		return 0, err
	}
	return 0, s.probeIdle()
}

// rewarm turns spinning back on after a sleep, begun at slept, that
// packets ended sooner than a spin lasts: the spin would have found them,
// and saved the kernel the wake-up. A receiver that keeps up with its
// queue empties the ring on every turn, so no Poll finds packets already
// waiting, and without this one miss would leave it sleeping (and being
// woken) for every batch from then on.
func (s *Socket) rewarm(slept time.Time) {
	if s.spin > 0 && s.r.spinCold.Load() && time.Since(slept) < s.spin {
		s.r.spinCold.Store(false)
	}
}

// spinLooks is how many looks at the ring a spin makes between reads of
// the clock and of the socket's state.
const spinLooks = 64

// spinFor looks at the receive ring for up to the socket's spin (less when
// the positive timeout is shorter) and returns the ready count, 0 when the spin ends
// empty: nothing came, the socket is closing or failed (Poll's system
// call then says which), or the driver asks for a wake-up, which only the
// system call gives. A spin that finds nothing makes the next ones sleep at
// once (spinCold) until a Poll finds packets already waiting, or a sleep
// ends with packets within a spin (rewarm).
func (s *Socket) spinFor(timeout time.Duration) int {
	if s.spin <= 0 || s.r.spinCold.Load() || s.parkedRx() {
		return 0
	}
	d := s.spin
	if timeout > 0 {
		d = min(d, timeout)
	}
	start := time.Now()
	for {
		for range spinLooks {
			if n := s.r.ring.ready(); n > 0 {
				s.r.st.spinHits.Add(1)
				return int(n)
			}
		}
		if s.closing.Load() || s.rxStopped.Load() || s.failed.Load() != nil || time.Since(start) >= d {
			break
		}
	}
	s.r.st.spinMisses.Add(1)
	s.r.spinCold.Store(true)
	return 0
}

// probeEvery bounds how long Poll waits without asking the kernel whether
// the socket's device is still there. A failure found elsewhere (a kick,
// Err) wakes Poll at once.
const probeEvery = 250 * time.Millisecond

// pollSlice is how long Poll's next ppoll waits: what is left of timeout
// (none for 0, forever for a negative one), at most probeEvery; last is
// true when the wait ends the call.
func pollSlice(timeout time.Duration, deadline time.Time) (wait time.Duration, last bool) {
	switch {
	case timeout == 0:
		return 0, true
	case timeout < 0:
		return probeEvery, false
	}
	left := max(time.Until(deadline), 0)
	if left <= probeEvery {
		return left, true
	}
	return probeEvery, false
}

// probeIdle asks the kernel whether the socket still stands (SO_ERROR,
// one system call) after Poll waited for nothing, at most once per
// probeEvery, so a loop of zero-timeout polls pays it rarely.
func (s *Socket) probeIdle() error {
	now, last := int64(time.Since(s.epoch)), s.r.probed.Load()
	if now-last < int64(probeEvery) || !s.r.probed.CompareAndSwap(last, now) {
		return s.failure("poll") // another Poll asks, or just asked
	}
	return s.probe("poll")
}

// Receive takes up to max received descriptors off the rx ring. From now
// until Recycle the frames are the caller's. The slice belongs to the socket
// and is reused by the next receive call. With WithMultiBuffer a packet may
// span several descriptors (all but the last with XDP_PKT_CONTD in
// Options): use ReceivePackets to get them whole.
func (s *Socket) Receive(max int) []Desc {
	if max <= 0 || s.r.ring.ents == nil || !s.enterRx() {
		return nil
	}
	defer s.exitRx()
	return s.receive(max)
}

func (s *Socket) receive(max int) []Desc {
	s.maybePin()
	n := s.r.ring.avail(uint32(min(max, cap(s.r.descs))))
	s.r.descs = s.r.descs[:n]
	var bytes uint64
	for i := range n {
		d := s.r.ring.get(i)
		s.r.descs[i] = Desc{Addr: rxAddr(d.Addr), Len: d.Len, Options: d.Options}
		if s.stamps {
			if !s.r.inPacket {
				stripStamp(&s.r.descs[i])
			}
			s.r.inPacket = d.Options&unix.XDP_PKT_CONTD != 0
		}
		bytes += uint64(d.Len)
		if pool.Checked() {
			s.r.pool.Take(pool.OpReceive, s.umem.base(s.r.descs[i].Addr))
		}
	}
	if n > 0 {
		s.r.ring.release(n)
		s.r.st.received.Add(uint64(n))
		s.r.st.rxBytes.Add(bytes)
		s.r.st.rxBatches.Add(1)
	}
	return s.r.descs
}

// ReceiveTimestamps is Receive plus each packet's arrival stamp, read from
// the bytes the program wrote in front of it (WithRxTimestamps): with
// WithMultiBuffer every descriptor of a chain has its first's. Both
// slices belong to the socket and are reused by the next receive call. A
// stamp that reads zero, which the program never writes, is counted in
// Stats().Unstamped: a fault.
func (s *Socket) ReceiveTimestamps(max int) ([]Desc, []uint64) {
	if max <= 0 || s.r.ring.ents == nil || !s.enterRx() {
		return nil, nil
	}
	defer s.exitRx()
	inside := s.r.inPacket // the first descriptor continues a packet
	descs := s.receive(max)
	s.r.stamp = s.r.stamp[:len(descs)]
	var dev, mono, none uint64
	for i, d := range descs {
		if !inside {
			st, clock := s.stampOf(d.Addr)
			s.r.chainStamp = st
			switch {
			case st == 0:
				none++
			case clock == filter.ClockDevice:
				dev++
			default:
				mono++
			}
		}
		s.r.stamp[i] = s.r.chainStamp
		inside = s.multiBuffer && d.Options&unix.XDP_PKT_CONTD != 0
	}
	if len(descs) > 0 {
		s.r.st.stampsDevice.Add(dev)
		s.r.st.stampsMonotonic.Add(mono)
		s.r.st.unstamped.Add(none)
	}
	return descs, s.r.stamp
}

// stripStamp moves d, a packet's first descriptor, past the stamp the
// program wrote into the frame ahead of the packet (filter's
// StampInFrame), which stampOf then reads in front of it. (Only the first
// descriptor of a packet carries one.)
func stripStamp(d *Desc) {
	if d.Len >= filter.RxMetadataLen {
		d.Addr += filter.RxMetadataLen
		d.Len -= filter.RxMetadataLen
	}
}

// stampOf reads the RxMetadataLen bytes in front of a received packet: the
// stamp and its clock, or zeros without stamps or when there is no room.
func (s *Socket) stampOf(addr uint64) (uint64, uint32) {
	if !s.stamps || addr&s.umem.mask < filter.RxMetadataLen || addr >= uint64(len(s.umem.mem)) {
		return 0, 0
	}
	m := s.umem.mem[addr-filter.RxMetadataLen : addr]
	return binary.NativeEndian.Uint64(m), uint32(binary.NativeEndian.Uint64(m[8:]))
}

// Stamp returns the arrival stamp and clock (filter.ClockDevice or
// filter.ClockMonotonic) of a descriptor Receive returned, from the bytes in
// front of it; zeros without WithRxTimestamps.
func (s *Socket) Stamp(d Desc) (uint64, int) {
	if !s.enterRx() {
		return 0, 0
	}
	defer s.exitRx()
	st, c := s.stampOf(d.Addr)
	return st, int(c)
}

// Recycle returns received frames to the receive pool. A frame the pool
// does not own (another socket's, a transmit frame) and a zero descriptor
// are refused and counted in Stats().Rejected; pass the frame to its owner
// instead.
func (s *Socket) Recycle(descs []Desc) {
	if len(descs) == 0 || !s.enterRx() {
		return
	}
	defer s.exitRx()
	rejected := 0
	for _, d := range descs {
		if d == (Desc{}) {
			s.r.pool.RefuseZero(pool.OpRecycle)
			rejected++
			continue
		}
		if !s.r.pool.Push(s.umem.base(d.Addr)) {
			rejected++
		}
	}
	if rejected > 0 {
		s.r.st.rejected.Add(uint64(rejected))
	}
}

// ReceiveWhole is Receive that returns only whole packets: with
// WithMultiBuffer, a chain whose last descriptor has not arrived is held in
// the socket and returned whole by a later call (as ReceivePackets does).
// Without it, it is Receive.
func (s *Socket) ReceiveWhole(max int) []Desc {
	if !s.multiBuffer {
		return s.Receive(max)
	}
	pkts := s.ReceivePackets(max)
	if len(pkts) == 0 {
		return nil
	}
	s.r.whole = s.r.whole[:0]
	for _, p := range pkts {
		s.r.whole = append(s.r.whole, p...)
	}
	return s.r.whole
}

// ReceiveStamped is ReceiveTimestamps that takes only stamped packets: it
// stops before the first packet that arrived without a stamp and leaves it
// on the ring, and reports unstamped true when that packet is the first
// one, so the caller learns of it without losing a packet (Receive still
// takes it); packetio's program stamps every packet it hands a socket.
// With WithMultiBuffer the stamp of a chain's first descriptor is given to
// all of its descriptors, and only whole chains are taken (and counted).
func (s *Socket) ReceiveStamped(max int) (descs []Desc, stamps []uint64, unstamped bool) {
	if max <= 0 || s.r.ring.ents == nil || !s.enterRx() {
		return nil, nil, false
	}
	defer s.exitRx()
	s.maybePin()
	avail := s.r.ring.avail(uint32(min(max, cap(s.r.descs))))
	s.r.descs, s.r.stamp = s.r.descs[:0], s.r.stamp[:0]
	var dev, mono, bytes uint64
	var stamp uint64
	var device bool // the clock of the packet being taken
	take, start := uint32(0), true
	for i := range avail {
		d := s.r.ring.get(i)
		desc := Desc{Addr: rxAddr(d.Addr), Len: d.Len, Options: d.Options}
		if start && s.stamps {
			stripStamp(&desc)
		}
		if start {
			st, clock := s.stampOf(desc.Addr)
			if st == 0 {
				unstamped = take == 0
				break
			}
			stamp, device = st, clock == filter.ClockDevice
		}
		s.r.descs = append(s.r.descs, desc)
		s.r.stamp = append(s.r.stamp, stamp)
		start = !s.multiBuffer || d.Options&unix.XDP_PKT_CONTD == 0
		if start { // a whole packet: count its stamp
			take = i + 1
			if device {
				dev++
			} else {
				mono++
			}
		}
	}
	// Only whole packets leave the ring.
	s.r.descs, s.r.stamp = s.r.descs[:take], s.r.stamp[:take]
	s.r.inPacket = false
	for _, d := range s.r.descs {
		bytes += uint64(d.Len)
		if pool.Checked() {
			s.r.pool.Take(pool.OpReceive, s.umem.base(d.Addr))
		}
	}
	if take > 0 {
		s.r.ring.release(take)
		s.r.st.received.Add(uint64(take))
		s.r.st.rxBytes.Add(bytes)
		s.r.st.rxBatches.Add(1)
		s.r.st.stampsDevice.Add(dev)
		s.r.st.stampsMonotonic.Add(mono)
	}
	if unstamped {
		s.r.st.unstamped.Add(1)
	}
	return s.r.descs, s.r.stamp, unstamped
}
