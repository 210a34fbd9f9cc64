package packetiotest_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/packetiotest"
	"github.com/packetio/packetio/pipe"
)

// The suite is only worth something if it fails broken backends. Each fault
// below wraps a correct device (a pipe) and breaks one rule of BACKENDS.md;
// the test runs the suite on it in a child process and requires the named
// check to fail.

const faultEnv = "PACKETIO_CONFORM_FAULT"

var faults = []struct {
	name  string // fault
	check string // the check that must fail
}{
	{"transmit-takes-bad-descriptors", "TransmitRefusesADescriptorOutsideAFrame"},
	{"sendfunc-sends-before-bad-length", "SendFuncBadLengthAbandonsTheBatch"},
	{"complete-loses-frames", "FramesAreConserved"},
	{"receive-duplicates-a-frame", "TrafficArrivesIntact"},
	{"batches-not-counted", "ReceiveStatsCountBatches"},
	{"close-does-not-wake-poll", "CloseWakesAPoller"},
	{"reclaim-pools-frames", "ForwardingConservesFrames"},
	{"frame-outside-region", "CapabilitiesAreSelfConsistent"},
	{"bare-errors", "ErrorsAreOpErrors"},
	{"closed-send-reads-as-back-pressure", "CloseDuringCalls"},
	{"close-waits-for-its-caller", "CloseDuringCalls"},
}

func TestSuiteCatchesBrokenBackends(t *testing.T) {
	if f := os.Getenv(faultEnv); f != "" {
		open, peer := faultyPair(f)
		packetiotest.Run(t, open, packetiotest.WithPeer(peer))
		return
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestSuiteCatchesBrokenBackends$", "-test.v")
			cmd.Env = append(os.Environ(), faultEnv+"="+f.name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a backend with fault %q", f.name)
			}
			if !strings.Contains(string(out), "--- FAIL: TestSuiteCatchesBrokenBackends/"+f.check) {
				t.Fatalf("fault %q: check %s did not fail; output:\n%s", f.name, f.check, out)
			}
		})
	}
}

func faultyPair(fault string) (open, peer packetiotest.OpenFunc) {
	var b packetio.Device
	open = func(t *testing.T) packetiotest.Device {
		a, bb, err := pipe.New()
		if err != nil {
			t.Fatal(err)
		}
		b = bb
		t.Cleanup(func() { bb.Close() })
		return &faultyDevice{Device: a, fault: fault, sending: new(atomic.Int64)}
	}
	peer = func(t *testing.T) packetiotest.Device { return b }
	return open, peer
}

type faultyDevice struct {
	packetio.Device
	fault   string
	sending *atomic.Int64 // SendFunc calls in progress, for close-waits-for-its-caller
}

func (d *faultyDevice) TxQueue(i int) packetio.TxQueue {
	q := d.Device.TxQueue(i)
	if q == nil {
		return nil
	}
	return &faultyTx{TxQueue: q, fault: d.fault, sending: d.sending}
}

func (d *faultyDevice) RxQueue(i int) packetio.RxQueue {
	q := d.Device.RxQueue(i)
	if q == nil {
		return nil
	}
	return &faultyRx{RxQueue: q, fault: d.fault}
}

func (d *faultyDevice) Close() error {
	if d.fault == "close-does-not-wake-poll" {
		return nil
	}
	if d.fault == "close-waits-for-its-caller" {
		for d.sending.Load() > 0 { // a drain that cannot tell its own caller
			time.Sleep(time.Millisecond)
		}
	}
	return d.Device.Close()
}

type faultyTx struct {
	packetio.TxQueue
	fault   string
	sending *atomic.Int64
}

func (q *faultyTx) Transmit(descs []packetio.Desc) int {
	n := q.TxQueue.Transmit(descs)
	if q.fault == "transmit-takes-bad-descriptors" && n < len(descs) {
		return len(descs)
	}
	return n
}

func (q *faultyTx) SendFunc(count int, build func(int, []byte) int) (int, error) {
	if q.fault == "close-waits-for-its-caller" {
		q.sending.Add(1)
		defer q.sending.Add(-1)
	}
	if q.fault == "bare-errors" {
		n, err := q.TxQueue.SendFunc(count, build)
		if err != nil {
			err = fmt.Errorf("send: %w", errors.Unwrap(err)) // the sentinel, without the OpError
		}
		return n, err
	}
	if q.fault == "closed-send-reads-as-back-pressure" {
		n, err := q.TxQueue.SendFunc(count, build)
		if errors.Is(err, packetio.ErrClosed) {
			err = nil // a short count, as if the ring were full
		}
		return n, err
	}
	if q.fault != "sendfunc-sends-before-bad-length" {
		return q.TxQueue.SendFunc(count, build)
	}
	return q.TxQueue.SendFunc(count, func(i int, f []byte) int {
		r := build(i, f)
		if r < 0 || r > len(f) {
			return 0 // sends what came before and carries on
		}
		return r
	})
}

func (q *faultyTx) Complete(max int) int {
	if q.fault == "complete-loses-frames" {
		var lost []packetio.Desc
		lost = q.TxQueue.Reclaim(max, lost)
		if len(lost) > 1 {
			q.TxQueue.Free(lost[1:])
		}
		return len(lost)
	}
	return q.TxQueue.Complete(max)
}

func (q *faultyTx) Reclaim(max int, out []packetio.Desc) []packetio.Desc {
	if q.fault == "reclaim-pools-frames" {
		q.TxQueue.Complete(max)
		return out
	}
	return q.TxQueue.Reclaim(max, out)
}

func (q *faultyTx) Region() packetio.Region {
	return faultyRegion{Region: q.TxQueue.Region(), fault: q.fault}
}

type faultyRegion struct {
	packetio.Region
	fault string
}

func (r faultyRegion) Frame(d packetio.Desc) []byte {
	if r.fault == "frame-outside-region" && d.Addr >= uint64(len(r.Bytes())) {
		return r.Bytes()[:1]
	}
	return r.Region.Frame(d)
}

type faultyRx struct {
	packetio.RxQueue
	fault string
	dup   []packetio.Desc
}

func (q *faultyRx) Receive(max int) []packetio.Desc {
	got := q.RxQueue.Receive(max)
	if q.fault == "receive-duplicates-a-frame" && len(got) > 1 {
		q.dup = append(q.dup[:0], got...)
		q.dup[1] = q.dup[0]
		return q.dup
	}
	return got
}

func (q *faultyRx) Stats() (packetio.RxStats, error) {
	s, err := q.RxQueue.Stats()
	if q.fault == "batches-not-counted" {
		s.Batches = 0
	}
	return s, err
}
