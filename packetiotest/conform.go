// Package packetiotest owns packetio's contract as an importable test
// suite: the rules of BACKENDS.md as checks a backend runs on its own
// devices, the way a file system proves itself with testing/fstest. Every
// packetio backend calls Run on a real device (afpacket and afxdp on a veth
// pair, dpdk on its virtual devices, mlx5 on its model card, pipe in
// memory), plus RunSteering and RunTimestamps where they apply; a backend
// written outside this module does the same from its own test (see the
// example).
//
// A check that cannot run here skips with the reason, and fails instead when
// PACKETIO_CONFORM_REQUIRED is set: a skip is an unverified backend, not a
// passing one. A check that does not apply to the device (Reclaim where
// Capabilities().HandsBackFrames is false) says so and skips either way.
package packetiotest

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/testenv"
)

// Device is the device under test.
type Device = packetio.Device

// OpenFunc opens a fresh device for one check. It returns nil when the device
// cannot be opened here (the check is skipped, or failed under Required).
// The suite closes every device it is given.
type OpenFunc func(t *testing.T) Device

// Required reports whether PACKETIO_CONFORM_REQUIRED is set, which turns
// every "cannot open" and "cannot run" skip into a failure.
func Required() bool { return testenv.Required() }

// EtherType is the EtherType of the frames the suite sends (IEEE 802 local
// experimental 1), so a steering filter can name them and no host stack
// takes them for its own.
const EtherType = 0x88b5

// frameLen is the size of the frames the bookkeeping checks build.
const frameLen = 64

func cannotOpen(t *testing.T) {
	t.Helper()
	testenv.CannotRun(t, "the device could not be opened on this machine")
}

// device opens a device and registers its Close.
func device(t *testing.T, open OpenFunc) Device {
	t.Helper()
	d := open(t)
	if d == nil {
		cannotOpen(t)
		return nil
	}
	t.Cleanup(func() { d.Close() })
	if d.NumTxQueues() == 0 {
		t.Fatalf("%s: the suite needs a transmit queue; open the device with one", d.Capabilities().Backend)
	}
	return d
}

// settle completes until nothing is in flight (or 500 ms pass) and returns
// free frames plus frames still with the NIC: nothing lost adds up to the
// starting free count.
func settle(q packetio.TxQueue) int {
	for i := 0; i < 500 && q.NumInFlight() > 0; i++ {
		q.Complete(1 << 20)
		if q.NumInFlight() > 0 {
			time.Sleep(time.Millisecond)
		}
	}
	return q.NumFreeFrames() + q.NumInFlight()
}

// Run checks the contract every backend must meet, on devices from open.
// The bookkeeping checks need no traffic. The traffic checks (frames arrive
// byte for byte, receive batches are counted, forwarding conserves frames,
// Close under load) need a sender: WithPeer or WithLoopback. Without one
// they cannot run, which fails under PACKETIO_CONFORM_REQUIRED.
func Run(t *testing.T, open OpenFunc, opts ...Option) {
	var o options
	for _, fn := range opts {
		fn(&o)
	}
	for _, c := range deviceChecks {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open) })
	}
	runTraffic(t, open, &o)
}

// check is one named rule of the contract.
type check struct {
	name string
	fn   func(*testing.T, OpenFunc)
}

// deviceChecks are Run's checks that need no traffic, in the order it runs
// them.
var deviceChecks = [...]check{
	{"AllocFreeRoundTrip", allocFreeRoundTrip},
	{"AllocGivesDistinctFramesInRegion", allocGivesDistinctFrames},
	{"FramesAreConserved", framesAreConserved},
	{"SendFuncBadLengthAbandonsTheBatch", sendFuncBadLength},
	{"SendFuncZeroLengthStops", sendFuncZeroStops},
	{"ForeignDescriptorIsRefused", foreignDescriptorIsRefused},
	{"TransmitRefusesADescriptorOutsideAFrame", transmitRefusesOutsideAFrame},
	{"TransmitTakesAPrefix", transmitTakesAPrefix},
	{"ReclaimHandsFramesBack", reclaimHandsFramesBack},
	{"CloseTwice", closeTwice},
	{"MethodsAfterCloseAreSafe", methodsAfterClose},
	{"ErrorsAreOpErrors", errorsAreOpErrors},
	{"CapabilitiesAreSelfConsistent", capabilitiesAreConsistent},
	{"CloseWakesAPoller", closeWakesAPoller},
	{"CloseDuringCalls", closeDuringCalls},
	{"ErrIsNilOnAHealthyQueue", errIsNilOnAHealthyQueue},
	{"StatsAreSafeFromAnotherGoroutine", statsRace},
	{"FastPathDoesNotAllocate", fastPathDoesNotAllocate},
}

// Checks returns the names of the checks Run runs, in order: each is a
// subtest of the test that calls Run, so "go test -run 'Conform/Name'"
// runs one alone.
func Checks() []string {
	names := make([]string, 0, len(deviceChecks)+len(trafficChecks))
	for _, c := range deviceChecks {
		names = append(names, c.name)
	}
	for _, c := range trafficChecks {
		names = append(names, c.name)
	}
	return names
}

func allocFreeRoundTrip(t *testing.T, open OpenFunc) {
	q := device(t, open).TxQueue(0)
	start := q.NumFreeFrames()
	if start <= 0 {
		t.Fatalf("a fresh transmit queue has %d free frames", start)
	}
	descs := append([]packetio.Desc(nil), q.Alloc(4)...)
	if len(descs) == 0 {
		t.Fatal("Alloc(4) on a fresh queue returned nothing")
	}
	if got := q.NumFreeFrames(); got != start-len(descs) {
		t.Fatalf("after Alloc of %d: %d free, want %d", len(descs), got, start-len(descs))
	}
	q.Free(descs)
	if got := q.NumFreeFrames(); got != start {
		t.Fatalf("after Free: %d free, want %d", got, start)
	}
}

func allocGivesDistinctFrames(t *testing.T, open OpenFunc) {
	q := device(t, open).TxQueue(0)
	descs := append([]packetio.Desc(nil), q.Alloc(16)...)
	defer q.Free(descs)
	seen := map[uint64]bool{}
	fs := uint64(q.Region().FrameSize())
	for _, d := range descs {
		if seen[d.Addr/fs] {
			t.Fatalf("Alloc handed out frame %d twice", d.Addr/fs)
		}
		seen[d.Addr/fs] = true
		if len(q.Region().Writable(d)) == 0 {
			t.Fatalf("allocated desc %+v has no writable bytes: pool built on the wrong base?", d)
		}
		if d.Len != 0 {
			t.Fatalf("allocated desc %+v has Len %d, want 0", d, d.Len)
		}
	}
}

// pattern writes a recognisable frameLen-byte frame.
func pattern(seq int, frame []byte) int {
	if len(frame) < frameLen {
		return 0
	}
	for i := range frame[:frameLen] {
		frame[i] = byte(seq + i)
	}
	return frameLen
}

func framesAreConserved(t *testing.T, open OpenFunc) {
	q := device(t, open).TxQueue(0)
	start := q.NumFreeFrames()
	for round := 0; round < 16; round++ {
		if _, err := q.SendFunc(8, pattern); err != nil && !errors.Is(err, packetio.ErrClosed) {
			t.Fatalf("round %d: SendFunc: %v", round, err)
		}
		q.Complete(1 << 20)
	}
	if got := settle(q); got != start {
		t.Fatalf("after 16 rounds: %d frames free or in flight, want %d", got, start)
	}
	if got := q.NumFreeFrames(); got > start {
		t.Fatalf("%d free frames after sending, %d at start: a frame came back twice", got, start)
	}
}

func sendFuncBadLength(t *testing.T, open OpenFunc) {
	q := device(t, open).TxQueue(0)
	start := q.NumFreeFrames()
	n, err := q.SendFunc(8, func(i int, frame []byte) int {
		if i == 3 {
			return len(frame) + 1
		}
		return pattern(i, frame)
	})
	if !errors.Is(err, packetio.ErrBadLength) || n != 0 {
		t.Fatalf("SendFunc with an oversize length = (%d, %v), want (0, ErrBadLength)", n, err)
	}
	n, err = q.SendFunc(8, func(i int, frame []byte) int { return -1 })
	if !errors.Is(err, packetio.ErrBadLength) || n != 0 {
		t.Fatalf("SendFunc with a negative length = (%d, %v), want (0, ErrBadLength)", n, err)
	}
	if got := settle(q); got != start {
		t.Fatalf("after abandoned batches: %d frames accounted for, want %d", got, start)
	}
}

func sendFuncZeroStops(t *testing.T, open OpenFunc) {
	q := device(t, open).TxQueue(0)
	start := q.NumFreeFrames()
	calls := 0
	n, err := q.SendFunc(8, func(i int, frame []byte) int {
		calls++
		if i < 3 {
			return pattern(i, frame)
		}
		return 0
	})
	if err != nil {
		t.Fatalf("SendFunc stopped by 0: %v", err)
	}
	if n > 3 || calls != 4 {
		t.Fatalf("SendFunc stopped by 0 at i=3 sent %d after %d build calls; want at most 3 after 4", n, calls)
	}
	if got := settle(q); got != start {
		t.Fatalf("after a stopped batch: %d frames accounted for, want %d", got, start)
	}
}

func foreignDescriptorIsRefused(t *testing.T, open OpenFunc) {
	q := device(t, open).TxQueue(0)
	start := q.NumFreeFrames()
	q.Free([]packetio.Desc{{Addr: 1 << 40, Len: 64}, {Addr: ^uint64(0), Len: 64}})
	if got := q.NumFreeFrames(); got != start {
		t.Fatalf("Free of foreign descriptors changed the pool from %d to %d", start, got)
	}
}

func transmitRefusesOutsideAFrame(t *testing.T, open OpenFunc) {
	d := device(t, open)
	q := d.TxQueue(0)
	r := q.Region()
	held := append([]packetio.Desc(nil), q.Alloc(1)...)
	if len(held) == 0 {
		t.Fatal("Alloc(1) on a fresh queue returned nothing")
	}
	defer q.Free(held)
	for _, c := range []struct {
		name string
		d    packetio.Desc
	}{
		{"past the region", packetio.Desc{Addr: uint64(r.NumFrames()) * uint64(r.FrameSize()), Len: 64}},
		{"past its own frame", packetio.Desc{Addr: held[0].Addr, Len: uint32(r.FrameSize()) + 64}},
		{"address wraps", packetio.Desc{Addr: ^uint64(0), Len: 64}},
		{"empty", packetio.Desc{Addr: held[0].Addr, Len: 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := q.NumFreeFrames()
			if n := q.Transmit([]packetio.Desc{c.d}); n != 0 {
				t.Fatalf("Transmit(%+v) took %d", c.d, n)
			}
			if got := q.NumFreeFrames(); got > start {
				t.Fatalf("a refused descriptor entered the pool (%d -> %d free)", start, got)
			}
		})
	}
}

func transmitTakesAPrefix(t *testing.T, open OpenFunc) {
	q := device(t, open).TxQueue(0)
	start := q.NumFreeFrames()
	descs := append([]packetio.Desc(nil), q.Alloc(8)...)
	if len(descs) < 2 {
		q.Free(descs)
		t.Fatalf("Alloc(8) on a fresh queue gave %d frames; the check needs 2", len(descs))
	}
	for i := range descs {
		descs[i].Len = frameLen
		pattern(i, q.Region().Writable(descs[i]))
	}
	bad := len(descs) / 2
	orig := descs[bad]
	descs[bad] = packetio.Desc{Addr: ^uint64(0), Len: frameLen}
	n := q.Transmit(descs)
	if n > bad {
		t.Fatalf("Transmit took %d descriptors past the bad one at %d", n, bad)
	}
	descs[bad] = orig
	q.Free(descs[n:])
	if got := settle(q); got != start {
		t.Fatalf("after a prefix transmit: %d frames accounted for, want %d", got, start)
	}
}

func reclaimHandsFramesBack(t *testing.T, open OpenFunc) {
	d := device(t, open)
	if !d.Capabilities().HandsBackFrames {
		t.Skipf("%s: HandsBackFrames is false; Reclaim does not name frames here", d.Capabilities().Backend)
	}
	q := d.TxQueue(0)
	start := q.NumFreeFrames()
	descs := append([]packetio.Desc(nil), q.Alloc(64)...)
	for i := range descs {
		descs[i].Len = frameLen
		pattern(i, q.Region().Writable(descs[i]))
	}
	n := q.Transmit(descs)
	q.Free(descs[n:])
	if n == 0 {
		t.Fatal("Transmit of 64 fresh frames took none")
	}
	sent := map[uint64]bool{}
	for _, d := range descs[:n] {
		sent[d.Addr] = true
	}
	var back []packetio.Desc
	for i := 0; i < 500 && len(back) < n; i++ {
		back = q.Reclaim(1<<20, back)
		if len(back) < n {
			time.Sleep(time.Millisecond)
		}
	}
	if len(back) == 0 {
		t.Fatal("Reclaim returned nothing for transmitted frames")
	}
	for _, b := range back {
		if !sent[b.Addr] {
			t.Errorf("Reclaim returned %+v, which was not transmitted", b)
		}
		if q.Region().Writable(b) == nil {
			t.Errorf("reclaimed %+v is outside the region", b)
		}
	}
	q.Free(back)
	if got := settle(q); got != start {
		t.Fatalf("after Reclaim and Free: %d frames accounted for, want %d", got, start)
	}
}

func closeTwice(t *testing.T, open OpenFunc) {
	d := device(t, open)
	if err := d.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func methodsAfterClose(t *testing.T, open OpenFunc) {
	d := device(t, open)
	tx := d.TxQueue(0)
	var rx packetio.RxQueue
	if d.NumRxQueues() > 0 {
		rx = d.RxQueue(0)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := tx.Transmit(tx.Alloc(4)); n != 0 {
		t.Errorf("Transmit after Close took %d", n)
	}
	tx.Free(nil)
	tx.Free([]packetio.Desc{{Addr: 0, Len: 64}})
	tx.Complete(16)
	tx.Reclaim(16, nil)
	tx.NumCompleted()
	tx.NumInFlight()
	tx.NumFreeSlots()
	tx.NumFreeFrames()
	if n, err := tx.SendFunc(4, pattern); n != 0 || err == nil {
		t.Errorf("SendFunc after Close = (%d, %v), want (0, error)", n, err)
	}
	tx.Stats()
	if err := tx.Close(); err != nil {
		t.Errorf("queue Close after device Close: %v", err)
	}
	if rx == nil {
		return
	}
	if _, err := rx.Poll(0); err == nil {
		t.Error("Poll after Close returned no error")
	}
	if got := rx.Receive(16); len(got) != 0 {
		t.Errorf("Receive after Close returned %d", len(got))
	}
	if n := rx.Fill(16); n != 0 {
		t.Errorf("Fill after Close posted %d", n)
	}
	rx.Recycle(nil)
	rx.Recycle([]packetio.Desc{{Addr: 0, Len: 64}})
	rx.NumFreeFillSlots()
	rx.NumReceived()
	rx.NumFreeFrames()
	rx.Stats()
}

func capabilitiesAreConsistent(t *testing.T, open OpenFunc) {
	d := device(t, open)
	c := d.Capabilities()
	if c.Backend == "" {
		t.Error("Capabilities.Backend is empty")
	}
	if c.MaxFrameSize <= 0 {
		t.Errorf("MaxFrameSize %d", c.MaxFrameSize)
	}
	if c.MaxQueues < d.NumTxQueues() || c.MaxQueues < d.NumRxQueues() {
		t.Errorf("MaxQueues %d below the %d tx / %d rx queues open", c.MaxQueues, d.NumTxQueues(), d.NumRxQueues())
	}
	if c.RSS && d.NumRxQueues() < 2 {
		t.Errorf("RSS claimed with %d receive queues", d.NumRxQueues())
	}
	if d.TxQueue(-1) != nil || d.TxQueue(d.NumTxQueues()) != nil {
		t.Error("TxQueue out of range is not nil")
	}
	if d.RxQueue(-1) != nil || d.RxQueue(d.NumRxQueues()) != nil {
		t.Error("RxQueue out of range is not nil")
	}
	var regions []packetio.Region
	for i := 0; i < d.NumTxQueues(); i++ {
		regions = append(regions, d.TxQueue(i).Region())
	}
	for i := 0; i < d.NumRxQueues(); i++ {
		regions = append(regions, d.RxQueue(i).Region())
	}
	for i, r := range regions {
		if r.FrameSize() <= 0 || r.FrameSize()&(r.FrameSize()-1) != 0 || r.NumFrames() <= 0 {
			t.Fatalf("region %d: frame size %d, %d frames", i, r.FrameSize(), r.NumFrames())
		}
		if len(r.Bytes()) < r.NumFrames()*r.FrameSize() {
			t.Errorf("region %d: %d bytes for %d frames of %d", i, len(r.Bytes()), r.NumFrames(), r.FrameSize())
		}
		if c.MaxFrameSize > r.FrameSize() {
			t.Errorf("MaxFrameSize %d exceeds the frame size %d", c.MaxFrameSize, r.FrameSize())
		}
		for _, far := range []packetio.Desc{{Addr: 1 << 40, Len: 64}, {Addr: ^uint64(0), Len: 64}, {Addr: uint64(len(r.Bytes())) - 1, Len: 64}} {
			if r.Frame(far) != nil {
				t.Errorf("region %d: Frame(%+v) is not nil", i, far)
			}
		}
		for _, far := range []packetio.Desc{{Addr: 1 << 40}, {Addr: ^uint64(0)}, {Addr: uint64(len(r.Bytes()))}} {
			if r.Writable(far) != nil {
				t.Errorf("region %d: Writable(%+v) is not nil", i, far)
			}
		}
		if w := r.Writable(packetio.Desc{Addr: uint64(r.FrameSize()) + 7}); len(w) != r.FrameSize()-7 || cap(w) != len(w) {
			t.Errorf("region %d: Writable inside frame 1 has len %d cap %d, want %d", i, len(w), cap(w), r.FrameSize()-7)
		}
		if c.SharedRegion && r != regions[0] && &r.Bytes()[0] != &regions[0].Bytes()[0] {
			t.Errorf("SharedRegion claimed but queue region %d is a different mapping", i)
		}
	}
}

func firstRx(t *testing.T, d Device) packetio.RxQueue {
	t.Helper()
	if d.NumRxQueues() == 0 {
		t.Fatalf("%s: the check needs a receive queue; open the device with one", d.Capabilities().Backend)
	}
	return d.RxQueue(0)
}

// blockInPoll drains rx and starts a goroutine that polls it until Poll
// fails, then sends Poll's error; it returns once the goroutine had time to
// block.
func blockInPoll(rx packetio.RxQueue) <-chan error {
	rx.Fill(rx.NumFreeFillSlots())
	// Drain anything already queued so the poller really waits.
	for i := 0; i < 100 && rx.NumReceived() > 0; i++ {
		rx.Recycle(rx.Receive(1 << 10))
	}
	done := make(chan error, 1)
	go func() {
		var err error
		for err == nil {
			// Packets may still arrive on a live link; only Close ends it.
			var n int
			if n, err = rx.Poll(10 * time.Second); n > 0 && err == nil {
				time.Sleep(time.Millisecond)
			}
		}
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	return done
}

func closeWakesAPoller(t *testing.T, open OpenFunc) {
	d := device(t, open)
	rx := firstRx(t, d)
	done := blockInPoll(rx)
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, packetio.ErrClosed) {
			t.Fatalf("Poll woken by Close returned %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake a goroutine blocked in Poll within 5s")
	}
}

// closeDuringCalls: Close from another goroutine while calls are inside
// the queues never faults or panics. A backend that unmaps rings, closes
// descriptors or stops a driver at Close must wait for the calls in
// progress first (BACKENDS.md, rule 12); one that does not touches released
// memory here. The call in progress ends normally or with ErrClosed, Close
// returns nil, and every call afterwards is refused.
func closeDuringCalls(t *testing.T, open OpenFunc) {
	t.Run("SendFuncBuilding", func(t *testing.T) { closeDuringBuild(t, open) })
	t.Run("FromInsideBuild", func(t *testing.T) { closeInsideBuild(t, open) })
	t.Run("DrivingLoop", func(t *testing.T) {
		for round := range 3 {
			closeDuringLoop(t, open, time.Duration(round)*5*time.Millisecond)
		}
	})
}

// closeDuringBuild closes the device while a SendFunc is inside its build
// function, then lets the build return: the frame is written into the
// region and handed to the transmit path after Close began.
func closeDuringBuild(t *testing.T, open OpenFunc) {
	d := device(t, open)
	tx := d.TxQueue(0)
	building, resume := make(chan struct{}), make(chan struct{})
	sent := make(chan error, 1)
	go func() {
		n, err := tx.SendFunc(1, func(i int, frame []byte) int {
			close(building)
			<-resume
			return pattern(i, frame)
		})
		if err == nil && n != 1 {
			err = fmt.Errorf("SendFunc sent %d of 1 and returned no error", n)
		}
		sent <- err
	}()
	select {
	case <-building:
	case err := <-sent:
		t.Fatalf("SendFunc returned (%v) without calling build", err)
	case <-time.After(5 * time.Second):
		t.Fatal("SendFunc did not call build within 5s")
	}
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	// Give Close time to finish if it does not wait (closing a packet
	// socket takes an RCU grace period, tens of milliseconds), then let
	// the build return.
	time.Sleep(200 * time.Millisecond)
	close(resume)
	for range 2 {
		select {
		case err := <-sent:
			if err != nil && !errors.Is(err, packetio.ErrClosed) {
				t.Errorf("SendFunc under Close: %v, want nil or ErrClosed", err)
			}
		case err := <-closed:
			if err != nil {
				t.Errorf("Close: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("SendFunc or Close still running 5s after the build returned")
		}
	}
	if _, err := tx.SendFunc(1, pattern); !errors.Is(err, packetio.ErrClosed) {
		t.Errorf("SendFunc after Close: %v, want ErrClosed", err)
	}
}

// closeInsideBuild calls Close from inside a SendFunc build function on the
// same device. A backend whose Close waits for the calls in progress would
// wait for itself there: its Close must refuse at once with ErrBusy (an
// OpError) and leave the device as it was, so the SendFunc sends and the
// device keeps working until a Close after the call closes it. A backend
// that need not wait may close instead; SendFunc then returns ErrClosed or
// nil. Either way Close returns within 5 s.
func closeInsideBuild(t *testing.T, open OpenFunc) {
	d := open(t)
	if d == nil {
		cannotOpen(t)
		return
	}
	var returned atomic.Bool // a Close inside that hangs holds the device: no cleanup then
	t.Cleanup(func() {
		if returned.Load() {
			d.Close()
		}
	})
	tx := d.TxQueue(0)
	var closeErr error
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := tx.SendFunc(1, func(i int, frame []byte) int {
			closeErr = d.Close()
			return pattern(i, frame)
		})
		done <- result{n, err}
	}()
	var r result
	select {
	case r = <-done:
		returned.Store(true)
	case <-time.After(5 * time.Second):
		t.Fatal("Close from inside a SendFunc build function did not return within 5s: it waits for the call it is inside")
	}
	t.Logf("Close from inside a build: %v; the SendFunc around it: %d, %v", closeErr, r.n, r.err)
	switch {
	case closeErr == nil: // closed inside: the send says so or went
		if r.err != nil && !errors.Is(r.err, packetio.ErrClosed) {
			t.Errorf("SendFunc around a Close that closed: %d, %v; want nil or ErrClosed", r.n, r.err)
		}
	case errors.Is(closeErr, packetio.ErrBusy):
		var oe *packetio.OpError
		if !errors.As(closeErr, &oe) || oe.Op != "close" {
			t.Errorf("Close inside a build: %v, not an OpError of op close", closeErr)
		}
		if r.n != 1 || r.err != nil {
			t.Errorf("SendFunc around a refused Close: %d, %v; want 1, nil: the device is as it was", r.n, r.err)
		}
		settle(tx)
		if n, err := tx.SendFunc(1, pattern); n != 1 || err != nil {
			t.Errorf("SendFunc after the refused Close: %d, %v; want 1, nil", n, err)
		}
	default:
		t.Errorf("Close inside a build: %v; want nil (closed) or an error matching ErrBusy", closeErr)
	}
	if err := d.Close(); err != nil {
		t.Errorf("Close after the build returned: %v", err)
	}
	if _, err := tx.SendFunc(1, pattern); !errors.Is(err, packetio.ErrClosed) {
		t.Errorf("SendFunc after Close: %v, want ErrClosed", err)
	}
}

// closeDuringLoop closes the device after wait while one goroutine drives
// both queues through every non-blocking call and another reads Stats and
// Err.
func closeDuringLoop(t *testing.T, open OpenFunc, wait time.Duration) {
	d := device(t, open)
	tx := d.TxQueue(0)
	var rx packetio.RxQueue
	if d.NumRxQueues() > 0 {
		rx = d.RxQueue(0)
	}
	var loops testenv.Loops
	loops.Go(func() {
		_, _ = tx.SendFunc(4, pattern)
		tx.Complete(tx.NumCompleted())
		tx.NumFreeSlots()
		tx.Free(tx.Alloc(2))
		if rx == nil {
			return
		}
		if rn, ok := rx.(packetio.ReadyNotifier); ok {
			rn.Arm()
		}
		rx.Fill(rx.NumFreeFillSlots())
		rx.NumReceived()
		rx.Recycle(rx.Receive(16))
	})
	loops.Go(func() {
		_, _ = tx.Stats()
		_ = tx.Err()
		if rx != nil {
			_, _ = rx.Stats()
			_ = rx.Err()
		}
	})
	time.Sleep(wait)
	if err := d.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	loops.Stop()
	if n := tx.Transmit(tx.Alloc(1)); n != 0 {
		t.Errorf("Transmit after Close took %d", n)
	}
	if err := tx.Err(); !errors.Is(err, packetio.ErrClosed) {
		t.Errorf("tx Err after Close: %v, want ErrClosed", err)
	}
	if rx != nil && len(rx.Receive(16)) != 0 {
		t.Error("Receive after Close returned packets")
	}
}

func errIsNilOnAHealthyQueue(t *testing.T, open OpenFunc) {
	d := device(t, open)
	tx := d.TxQueue(0)
	var rx packetio.RxQueue
	if d.NumRxQueues() > 0 {
		rx = d.RxQueue(0)
	}
	if err := tx.Err(); err != nil {
		t.Fatalf("fresh tx Err: %v", err)
	}
	if rx != nil && rx.Err() != nil {
		t.Fatalf("fresh rx Err: %v", rx.Err())
	}
	d.Close()
	if err := tx.Err(); !errors.Is(err, packetio.ErrClosed) {
		t.Fatalf("tx Err after Close: %v, want ErrClosed", err)
	}
	if rx != nil && !errors.Is(rx.Err(), packetio.ErrClosed) {
		t.Fatalf("rx Err after Close: %v, want ErrClosed", rx.Err())
	}
}

// statsRace drives both directions while another goroutine reads Stats and
// Err; the race detector is the judge.
func statsRace(t *testing.T, open OpenFunc) {
	d := device(t, open)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			for i := 0; i < d.NumTxQueues(); i++ {
				d.TxQueue(i).Stats()
				d.TxQueue(i).Err()
			}
			for i := 0; i < d.NumRxQueues(); i++ {
				d.RxQueue(i).Stats()
				d.RxQueue(i).Err()
			}
		}
	}()
	tx := d.TxQueue(0)
	var rx packetio.RxQueue
	if d.NumRxQueues() > 0 {
		rx = d.RxQueue(0)
		rx.Fill(rx.NumFreeFillSlots())
	}
	for i := 0; i < 200; i++ {
		if _, err := tx.SendFunc(8, pattern); err != nil {
			t.Errorf("SendFunc: %v", err)
			break
		}
		tx.Complete(1 << 20)
		if rx != nil {
			rx.Poll(0)
			rx.Recycle(rx.Receive(64))
			rx.Fill(rx.NumFreeFillSlots())
		}
	}
	close(stop)
	<-done
	s, err := tx.Stats()
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if s.Packets == 0 {
		t.Fatal("200 SendFunc calls and TxStats.Packets is 0")
	}
}

// fastPathDoesNotAllocate measures every per-batch call. Stats is not on the
// fast path and may allocate its Backend map.
func fastPathDoesNotAllocate(t *testing.T, open OpenFunc) {
	d := device(t, open)
	tx := d.TxQueue(0)
	back := make([]packetio.Desc, 0, 1<<10)
	check := func(name string, f func()) {
		t.Helper()
		f() // warm up scratch slices
		if a := testing.AllocsPerRun(100, f); a != 0 {
			t.Errorf("%s allocates %.1f times per call", name, a)
		}
	}
	check("Alloc+Free", func() { tx.Free(tx.Alloc(8)) })
	check("Alloc+Transmit+Complete", func() {
		descs := tx.Alloc(8)
		for i := range descs {
			descs[i].Len = frameLen
		}
		n := tx.Transmit(descs)
		tx.Free(descs[n:])
		tx.Complete(1 << 20)
	})
	check("SendFunc", func() {
		tx.SendFunc(8, pattern)
		tx.Complete(1 << 20)
	})
	check("Transmit+Reclaim+Free", func() {
		descs := tx.Alloc(8)
		for i := range descs {
			descs[i].Len = frameLen
		}
		n := tx.Transmit(descs)
		tx.Free(descs[n:])
		back = tx.Reclaim(1<<20, back[:0])
		tx.Free(back)
	})
	settle(tx)
	if d.NumRxQueues() == 0 {
		return
	}
	rx := d.RxQueue(0)
	check("Fill+Poll+Receive+Recycle", func() {
		rx.Fill(rx.NumFreeFillSlots())
		rx.Poll(0)
		rx.Recycle(rx.Receive(64))
	})
	check("NumX", func() {
		tx.NumCompleted()
		tx.NumInFlight()
		tx.NumFreeSlots()
		tx.NumFreeFrames()
		rx.NumFreeFillSlots()
		rx.NumReceived()
		rx.NumFreeFrames()
	})
}
