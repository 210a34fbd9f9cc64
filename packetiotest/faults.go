package packetiotest

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/testenv"
)

// FaultEnv is one device under test for RunFaults, on a link of its own
// that a fault case may break for good. RunFaults asks for a fresh one per
// case. Open is required; every other field is a handle a case needs, and a
// case whose handle is nil is skipped with the reason (failed under
// PACKETIO_CONFORM_REQUIRED, unless WithoutFault says why the backend
// cannot offer it).
//
// VethEnv builds one on a veth pair for a backend with a kernel interface.
type FaultEnv struct {
	// Open opens the device under test, with the same options each time.
	// It must take the frames the suite sends (EtherType) on its receive
	// queues.
	Open func() (Device, error)
	// Remove deletes the interface under the device (for a veth: the
	// pair), as a user's `ip link del` or a hot unplug would.
	Remove func() error
	// SetLink takes the link down (false) or brings it back up (true), at
	// both ends.
	SetLink func(up bool) error
	// Peer is the far end of the link, for the cases that watch frames
	// arrive. Nil where there is none.
	Peer Peer
	// Occupy puts something packetio does not own where Open needs to be
	// (another process's XDP program, a claimed port). It returns a check
	// that the foreign thing is still intact and a release.
	Occupy func() (intact func() error, release func(), err error)
	// Snapshot describes every host setting Open or a crash could leave
	// changed (programs attached, pins, sysfs values, interfaces), for the
	// kill -9 case.
	Snapshot func() (map[string]string, error)
	// Child is the argument a child process needs to open the same device
	// (see FaultChildMain); empty where the device cannot be opened from
	// another process.
	Child string
}

// Peer is the far end of a FaultEnv's link: a plain socket that sends and
// counts the suite's frames, independent of the backend under test.
type Peer interface {
	// Send sends n test frames numbered from first and reports how many
	// the kernel took.
	Send(first uint32, n int) int
	// Received returns the sequence numbers of the suite's frames that
	// arrived since the last call.
	Received() []uint32
}

// FaultOption adjusts RunFaults.
type FaultOption func(*faultOptions)

type faultOptions struct {
	without map[string]string
}

// WithoutFault declares that the backend's mechanism cannot offer what the
// named case needs, and why; the case is skipped with that reason even under
// PACKETIO_CONFORM_REQUIRED. Use it only for a true limit of the mechanism
// (a device with no link cannot lose it), never for a defect.
func WithoutFault(name, reason string) FaultOption {
	return func(o *faultOptions) { o.without[name] = reason }
}

type faultCase struct {
	name string
	what string
	run  func(t *testing.T, env *FaultEnv)
}

func faultCases() []faultCase {
	return []faultCase{
		{"device-gone", "the interface is deleted while one goroutine polls and another sends: every queue reports ErrDeviceGone within 2s, Stats stay readable, frames add up", deviceGone},
		{"link-down-up", "the link goes down and up under traffic: the queues either carry frames again within 5s or report ErrQueueFailed, never neither", linkDownUp},
		{"close-wakes-poll", "closing a receive queue wakes a Poll on it with ErrClosed within 1s; closing one queue leaves the others working", closeWakesPoll},
		{"bad-frame", "a frame longer than the link carries between good ones: Transmit refuses it up front and counts it, the good ones go out, nothing stays in flight", badFrame},
		{"busy", "something packetio does not own holds the interface: Open fails with ErrBusy and leaves it intact", busy},
		{"kill-9", "a child process holding the device is killed with SIGKILL: the host is as it was, and the device opens again", killed},
	}
}

// Faults lists the fault cases RunFaults runs, one line each: "name: what
// the user sees".
func Faults() []string {
	var out []string
	for _, c := range faultCases() {
		out = append(out, c.name+": "+c.what)
	}
	return out
}

// RunFaults is the fault half of the contract: it breaks a device the ways
// users' devices break (see Faults) and checks what the caller sees: an
// error matching a package sentinel within a bounded time, counters that add
// up, the host as it was. newEnv makes a fresh FaultEnv for each case.
//
// Each case logs a line starting "fault-timing" with what it measured (time
// from the fault to the first error, frames offered, accepted, completed,
// refused and in flight), for the backend's documentation.
func RunFaults(t *testing.T, newEnv func(t *testing.T) *FaultEnv, opts ...FaultOption) {
	o := faultOptions{without: map[string]string{}}
	for _, opt := range opts {
		opt(&o)
	}
	for _, c := range faultCases() {
		t.Run(c.name, func(t *testing.T) {
			if reason, ok := o.without[c.name]; ok {
				t.Skipf("the backend cannot offer this case: %s", reason)
			}
			env := newEnv(t)
			if env == nil || env.Open == nil {
				cannotOpen(t)
				return
			}
			c.run(t, env)
		})
	}
}

// lacks skips a case for a missing FaultEnv handle, or fails it when
// every case must run.
func lacks(t *testing.T, what string) {
	t.Helper()
	if testenv.Required() {
		t.Fatalf("the FaultEnv has no %s, so this case cannot run (declare a true limit with WithoutFault)", what)
	}
	t.Skipf("the FaultEnv has no %s", what)
}

func openEnv(t *testing.T, env *FaultEnv) Device {
	t.Helper()
	d, err := env.Open()
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// within calls look every millisecond until it reports true or limit
// passes, and returns how long that took and whether it happened.
func within(limit time.Duration, look func() bool) (time.Duration, bool) {
	start := time.Now()
	for {
		if look() {
			return time.Since(start), true
		}
		if time.Since(start) > limit {
			return time.Since(start), false
		}
		time.Sleep(time.Millisecond)
	}
}

// rxLoop owns a receive queue on its own goroutine: it fills, polls and
// recycles until Poll fails or stop closes, and reports Poll's error and
// when it came.
type rxLoop struct {
	err  error
	at   time.Time
	last atomic.Uint32 // the highest sequence number seen
	done chan struct{}
}

func startRx(q packetio.RxQueue, wait time.Duration, stop <-chan struct{}) *rxLoop {
	l := &rxLoop{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			q.Fill(q.NumFreeFillSlots())
			n, err := q.Poll(wait)
			if err != nil {
				l.err, l.at = err, time.Now()
				return
			}
			if n == 0 {
				continue
			}
			descs := q.Receive(n)
			r := q.Region()
			for _, d := range descs {
				if seq, ours, _ := parseTestFrame(r.Frame(d)); ours && seq > l.last.Load() {
					l.last.Store(seq)
				}
			}
			q.Recycle(descs)
		}
	}()
	return l
}

// txLoop owns a transmit queue on its own goroutine: it sends small
// batches until SendFunc fails or stop closes, and counts what it built and
// what was accepted.
type txLoop struct {
	built, accepted uint64
	err             error
	at              time.Time
	done            chan struct{}
}

func startTx(q packetio.TxQueue, first uint32, stop <-chan struct{}) *txLoop {
	l := &txLoop{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		seq := first
		for {
			select {
			case <-stop:
				return
			default:
			}
			q.Complete(1 << 16)
			n, err := q.SendFunc(8, func(i int, frame []byte) int {
				l.built++
				return testFrame(frame, seq+uint32(i), frameLen)
			})
			l.accepted += uint64(n)
			seq += uint32(n)
			if err != nil {
				l.err, l.at = err, time.Now()
				return
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	return l
}

func deviceGone(t *testing.T, env *FaultEnv) {
	if env.Remove == nil {
		lacks(t, "Remove")
	}
	d := openEnv(t, env)
	tx := d.TxQueue(0)
	stop := make(chan struct{})
	var rx packetio.RxQueue
	var rl *rxLoop
	if d.NumRxQueues() > 0 {
		rx = d.RxQueue(0)
		rl = startRx(rx, 10*time.Second, stop) // blocked in Poll when the loss comes
	}
	tl := startTx(tx, 1, stop)
	time.Sleep(100 * time.Millisecond) // traffic flowing
	start := time.Now()
	if err := env.Remove(); err != nil {
		close(stop)
		t.Fatalf("Remove: %v", err)
	}
	errAfter, ok := within(2*time.Second, func() bool {
		return tx.Err() != nil && (rx == nil || rx.Err() != nil)
	})
	timer := time.AfterFunc(3*time.Second, func() { close(stop) })
	<-tl.done
	if rl != nil {
		<-rl.done
	}
	if !timer.Stop() {
		t.Errorf("a queue goroutine was still running 3s after the interface went away")
	}
	if !ok {
		t.Errorf("2s after the interface went away: tx Err %v, rx Err %v; want both to match ErrDeviceGone", tx.Err(), errOf(rx))
	}
	if err := tx.Err(); !errors.Is(err, packetio.ErrDeviceGone) {
		t.Errorf("tx Err after the interface went away: %v, want ErrDeviceGone", err)
	}
	if rx != nil {
		if err := rx.Err(); !errors.Is(err, packetio.ErrDeviceGone) {
			t.Errorf("rx Err after the interface went away: %v, want ErrDeviceGone", err)
		}
		if !errors.Is(rl.err, packetio.ErrDeviceGone) {
			t.Errorf("Poll woken by the loss returned %v, want ErrDeviceGone", rl.err)
		}
		if _, err := rx.Poll(0); !errors.Is(err, packetio.ErrDeviceGone) {
			t.Errorf("a later Poll returned %v, want ErrDeviceGone", err)
		}
		if _, err := rx.Stats(); err != nil {
			t.Errorf("rx Stats after the loss: %v, want the counters", err)
		}
	}
	if !errors.Is(tl.err, packetio.ErrDeviceGone) {
		t.Errorf("SendFunc after the loss returned %v, want ErrDeviceGone", tl.err)
	}
	if n, err := tx.SendFunc(1, func(_ int, f []byte) int { return testFrame(f, 0, frameLen) }); n != 0 || !errors.Is(err, packetio.ErrDeviceGone) {
		t.Errorf("a later SendFunc = %d, %v; want 0, ErrDeviceGone", n, err)
	}
	if descs := tx.Alloc(1); len(descs) > 0 {
		descs[0].Len = frameLen
		if n := tx.Transmit(descs); n != 0 {
			t.Errorf("Transmit on a dead queue took %d", n)
		}
		tx.Free(descs)
	}
	tx.Complete(1 << 16)
	st, err := tx.Stats()
	if err != nil {
		t.Fatalf("tx Stats after the loss: %v, want the counters", err)
	}
	inFlight := uint64(tx.NumInFlight())
	if st.Packets != tl.accepted {
		t.Errorf("tx Stats.Packets %d, but SendFunc reported %d accepted", st.Packets, tl.accepted)
	}
	if st.Packets-st.Completed != inFlight {
		t.Errorf("frames do not add up: Packets %d - Completed %d != NumInFlight %d", st.Packets, st.Completed, inFlight)
	}
	if tl.accepted > tl.built {
		t.Errorf("SendFunc accepted %d frames, more than the %d built", tl.accepted, tl.built)
	}
	closeErr := closeWithin(t, d, 2*time.Second)
	if closeErr != nil && !errors.Is(closeErr, packetio.ErrDeviceGone) {
		t.Errorf("Close after the loss: %v, want nil or ErrDeviceGone", closeErr)
	}
	if !errors.Is(tx.Err(), packetio.ErrClosed) {
		t.Errorf("tx Err after Close: %v, want ErrClosed", tx.Err())
	}
	pollAfter := time.Duration(-1)
	if rl != nil && !rl.at.IsZero() {
		pollAfter = rl.at.Sub(start)
	}
	sendAfter := time.Duration(-1)
	if !tl.at.IsZero() {
		sendAfter = tl.at.Sub(start)
	}
	t.Logf("fault-timing device-gone: Err after %v, Poll after %v, SendFunc after %v; offered %d = accepted %d (completed %d + in flight %d) + refused %d",
		errAfter, pollAfter, sendAfter, tl.built, tl.accepted, st.Completed, inFlight, tl.built-tl.accepted)
}

func errOf(q packetio.RxQueue) error {
	if q == nil {
		return nil
	}
	return q.Err()
}

// closeWithin closes d and fails the test if that takes longer than limit.
func closeWithin(t *testing.T, d Device, limit time.Duration) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- d.Close() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("Close took longer than %v", limit)
		return nil
	}
}

func linkDownUp(t *testing.T, env *FaultEnv) {
	if env.SetLink == nil {
		lacks(t, "SetLink")
	}
	if env.Peer == nil {
		lacks(t, "Peer")
	}
	d := openEnv(t, env)
	needRx(t, d)
	tx, rx := d.TxQueue(0), d.RxQueue(0)
	stop := make(chan struct{})
	var once sync.Once
	halt := func() { once.Do(func() { close(stop) }) }
	defer halt()
	rl := startRx(rx, 50*time.Millisecond, stop)
	tl := startTx(tx, 1, stop)
	const upFrom = 1 << 20 // the peer's frames after the link came back
	if _, ok := within(2*time.Second, func() bool { return env.Peer.Send(0, 1) == 1 && len(env.Peer.Received()) > 0 }); !ok {
		t.Fatalf("the link carries nothing before the fault (tx Err %v)", tx.Err())
	}
	if err := env.SetLink(false); err != nil {
		t.Fatalf("link down: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := env.SetLink(true); err != nil {
		t.Fatalf("link up: %v", err)
	}
	env.Peer.Received() // forget what came before
	seq := uint32(upFrom)
	var peerSaw, weSaw bool
	var failed error
	took, ok := within(5*time.Second, func() bool {
		if err := errors.Join(tx.Err(), rx.Err()); err != nil {
			failed = err
			return true
		}
		if env.Peer.Send(seq, 1) == 1 {
			seq++
		}
		peerSaw = peerSaw || len(env.Peer.Received()) > 0
		return peerSaw && rxSawFrom(rl, upFrom)
	})
	weSaw = rxSawFrom(rl, upFrom)
	halt()
	<-tl.done
	<-rl.done
	switch {
	case failed != nil && errors.Is(failed, packetio.ErrQueueFailed):
		t.Logf("fault-timing link-down-up: reported %v %v after the link came back", failed, took)
	case failed != nil:
		t.Errorf("after the link came back a queue reported %v, which does not match ErrQueueFailed", failed)
	case !ok:
		t.Errorf("5s after the link came back: device->peer %v, peer->device %v, and no queue reports an error (tx %v, rx %v): a queue that neither moves nor errs",
			peerSaw, weSaw, tx.Err(), rx.Err())
	default:
		t.Logf("fault-timing link-down-up: resumed both ways %v after the link came back", took)
	}
}

// rxSawFrom reports whether the receive loop saw a frame numbered from
// first.
func rxSawFrom(l *rxLoop, first uint32) bool { return l.last.Load() >= first }

func closeWakesPoll(t *testing.T, env *FaultEnv) {
	d := openEnv(t, env)
	needRx(t, d)
	rx := d.RxQueue(0)
	woke := blockInPoll(rx)
	start := time.Now()
	if err := rx.Close(); err != nil {
		t.Fatalf("rx Close: %v", err)
	}
	select {
	case err := <-woke:
		if !errors.Is(err, packetio.ErrClosed) {
			t.Errorf("Poll woken by the queue's Close returned %v, want ErrClosed", err)
		}
		t.Logf("fault-timing close-wakes-poll: Poll returned %v after rx Close", time.Since(start))
	case <-time.After(time.Second):
		t.Fatal("closing the receive queue did not wake a Poll on it within 1s")
	}
	if err := rx.Err(); !errors.Is(err, packetio.ErrClosed) {
		t.Errorf("rx Err after its Close: %v, want ErrClosed", err)
	}
	if got := rx.Receive(16); len(got) != 0 {
		t.Errorf("Receive after Close returned %d frames", len(got))
	}
	tx := d.TxQueue(0)
	if err := tx.Err(); err != nil {
		t.Errorf("closing receive queue 0 broke transmit queue 0: %v", err)
	}
	// Closing a transmit queue leaves the device's other queues alone.
	if err := tx.Close(); err != nil {
		t.Fatalf("tx Close: %v", err)
	}
	if n, err := tx.SendFunc(1, func(_ int, f []byte) int { return testFrame(f, 0, frameLen) }); n != 0 || !errors.Is(err, packetio.ErrClosed) {
		t.Errorf("SendFunc after the queue's Close = %d, %v; want 0, ErrClosed", n, err)
	}
	for i := 1; i < d.NumTxQueues(); i++ {
		if err := d.TxQueue(i).Err(); err != nil {
			t.Errorf("closing transmit queue 0 broke transmit queue %d: %v", i, err)
		}
	}
	if err := d.Close(); err != nil {
		t.Errorf("device Close after its queues' Close: %v", err)
	}
}

func badFrame(t *testing.T, env *FaultEnv) {
	d := openEnv(t, env)
	caps := d.Capabilities()
	tx := d.TxQueue(0)
	if caps.MaxTxLen == 0 {
		t.Fatalf("Capabilities().MaxTxLen is 0: the device does not say how long a frame the link carries")
	}
	descs := tx.Alloc(3)
	if len(descs) < 3 {
		t.Fatalf("Alloc(3) gave %d frames", len(descs))
	}
	descs = append([]packetio.Desc(nil), descs...)
	r := tx.Region()
	room := len(r.Writable(descs[1]))
	if caps.MaxTxLen >= room {
		tx.Free(descs)
		t.Skipf("every frame fits the link (MaxTxLen %d, frame room %d): no frame is too long for it", caps.MaxTxLen, room)
	}
	before, _ := tx.Stats()
	descs[0].Len = uint32(testFrame(r.Writable(descs[0]), 1<<24, frameLen))
	descs[1].Len = uint32(caps.MaxTxLen + 1)
	testFrame(r.Writable(descs[1]), 1<<24+1, frameLen) // a test frame, padded past the link's limit
	descs[2].Len = uint32(testFrame(r.Writable(descs[2]), 1<<24+2, frameLen))
	if n := tx.Transmit(descs); n != 1 {
		t.Fatalf("Transmit([good, %d bytes, good]) took %d, want 1: the prefix ends at the frame the link cannot carry", caps.MaxTxLen+1, n)
	}
	tx.Free(descs[1:2])
	if n := tx.Transmit(descs[2:]); n != 1 {
		t.Fatalf("Transmit of the good frame behind the refused one took %d, want 1", n)
	}
	_, drained := within(2*time.Second, func() bool {
		tx.Complete(1 << 16)
		return tx.NumInFlight() == 0
	})
	after, err := tx.Stats()
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if !drained {
		t.Errorf("2s after the bad frame: %d frames still in flight (Err %v)", tx.NumInFlight(), tx.Err())
	}
	if got := after.Refused - before.Refused; got != 1 {
		t.Errorf("TxStats.Refused grew by %d, want 1", got)
	}
	if got := after.Packets - before.Packets; got != 2 {
		t.Errorf("TxStats.Packets grew by %d, want the 2 good frames", got)
	}
	if err := tx.Err(); err != nil {
		t.Errorf("one refused frame put the queue out of service: %v", err)
	}
	// SendFunc given the same length abandons the batch.
	free := tx.NumFreeFrames()
	n, err := tx.SendFunc(2, func(i int, f []byte) int {
		if i == 1 {
			return caps.MaxTxLen + 1
		}
		return testFrame(f, 1<<24+3, frameLen)
	})
	if n != 0 || !errors.Is(err, packetio.ErrBadLength) {
		t.Errorf("SendFunc building a %d-byte frame = %d, %v; want 0, ErrBadLength", caps.MaxTxLen+1, n, err)
	}
	tx.Complete(1 << 16)
	if got := tx.NumFreeFrames(); got < free {
		t.Errorf("the abandoned batch lost frames: %d free before, %d after", free, got)
	}
	if env.Peer != nil {
		var seen []uint32
		within(time.Second, func() bool {
			seen = append(seen, env.Peer.Received()...)
			return countFrom(seen, 1<<24) >= 2
		})
		if got := countFrom(seen, 1<<24); got != 2 {
			t.Errorf("the peer saw %d of the frames (%v), want the 2 good ones", got, seen)
		}
	}
	t.Logf("fault-timing bad-frame: offered 3 = sent %d + refused %d + in flight %d", after.Packets-before.Packets, after.Refused-before.Refused, tx.NumInFlight())
}

func countFrom(seqs []uint32, first uint32) int {
	n := 0
	for _, s := range seqs {
		if s >= first && s < first+16 {
			n++
		}
	}
	return n
}

func busy(t *testing.T, env *FaultEnv) {
	if env.Occupy == nil {
		lacks(t, "Occupy")
	}
	intact, release, err := env.Occupy()
	if err != nil {
		t.Fatalf("Occupy: %v", err)
	}
	defer release()
	d, err := env.Open()
	if err == nil {
		d.Close()
		t.Fatal("Open succeeded on an interface something else holds")
	}
	if !errors.Is(err, packetio.ErrBusy) {
		t.Errorf("Open on a held interface: %v, want ErrBusy", err)
	}
	var oe *packetio.OpError
	if !errors.As(err, &oe) {
		t.Errorf("Open's error is %T, want *packetio.OpError", err)
	}
	if err := intact(); err != nil {
		t.Errorf("after the refused Open the holder is not intact: %v", err)
	}
	t.Logf("fault-timing busy: %v", err)
}

func killed(t *testing.T, env *FaultEnv) {
	if env.Child == "" {
		lacks(t, "Child")
	}
	if env.Snapshot == nil {
		lacks(t, "Snapshot")
	}
	before, err := env.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	kill := startChild(t, env.Child)
	during, err := env.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	held := snapshotDiff(before, during)
	if err := kill(); err != nil {
		t.Fatalf("kill -9: %v", err)
	}
	start := time.Now()
	var diff []string
	took, ok := within(5*time.Second, func() bool {
		now, err := env.Snapshot()
		if err != nil {
			diff = []string{err.Error()}
			return false
		}
		diff = snapshotDiff(before, now)
		return len(diff) == 0
	})
	if !ok {
		t.Fatalf("5s after kill -9 the host still differs from before the child opened the device:\n%s", strings.Join(diff, "\n"))
	}
	d, err := env.Open()
	if err != nil {
		t.Fatalf("Open after the holder was killed: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	t.Logf("fault-timing kill-9: the child changed %d host settings (%s); the host was as before %v after SIGKILL (%v)", len(held), strings.Join(held, "; "), took, time.Since(start))
}

// snapshotDiff lists the keys whose values differ, sorted.
func snapshotDiff(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, fmt.Sprintf("%s: %q -> %q", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("%s: absent -> %q", k, v))
		}
	}
	sort.Strings(out)
	return out
}
