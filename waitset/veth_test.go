//go:build linux

package waitset_test

import (
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afpacket"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/testframe"
	"github.com/packetio/packetio/waitset"
)

const testEtherType = 0x88b5 // IEEE local experimental

var testSrcMAC = net.HardwareAddr{0x02, 0, 0, 0, 0x57, 0x01}

// testFrames builds n frames to dst of our EtherType, each with a
// different flow word (so fanout spreads them) and its sequence number.
func testFrames(dst net.HardwareAddr, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		f := make([]byte, 64)
		copy(f, dst)
		copy(f[6:], testSrcMAC)
		binary.BigEndian.PutUint16(f[12:], testEtherType)
		binary.BigEndian.PutUint32(f[14:], uint32(i))
		out[i] = f
	}
	return out
}

// udpFrames builds n IPv4/UDP frames to dst, each from another source port,
// so afpacket's fanout hash spreads them over its queues.
func udpFrames(t testing.TB, dst net.HardwareAddr, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = testframe.Spec{SrcMAC: testSrcMAC, DstMAC: dst, SPort: uint16(1024 + i), DPort: 9}.Build(t)
	}
	return out
}

// ours reports whether a frame is one a test sent.
func ours(f []byte) bool {
	return len(f) >= 18 && string(f[6:12]) == string(testSrcMAC)
}

func openAfpacket(t testing.TB, h *netns.Host, opts ...afpacket.Option) *afpacket.Device {
	t.Helper()
	var d *afpacket.Device
	if err := h.Do(func() (err error) { d, err = afpacket.Open(h.Link, opts...); return err }); err != nil {
		t.Fatalf("afpacket.Open(%s): %v", h.Link, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func openAfxdp(t testing.TB, h *netns.Host, opts ...afxdp.Option) *afxdp.Device {
	t.Helper()
	testenv.NeedBPF(t)
	var d *afxdp.Device
	if err := h.Do(func() (err error) { d, err = afxdp.Open(h.Link, opts...); return err }); err != nil {
		t.Fatalf("afxdp.Open(%s): %v", h.Link, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// serve drains every queue the set reports into counts (by tag), counting
// only our frames, until want of them arrived or the hang guard passes.
func serve(t testing.TB, s *waitset.Set, counts []int, want int) {
	t.Helper()
	total := 0
	guard := time.Now().Add(20 * time.Second) // a hang guard, not a timing assertion
	for total < want {
		if time.Now().After(guard) {
			t.Fatalf("received %d of %d frames: %v", total, want, counts)
		}
		evs, err := s.Wait(time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.Err != nil {
				t.Fatalf("queue %d ended: %v", ev.Tag, ev.Err)
			}
			if ev.Rx == nil {
				continue
			}
			rx := ev.Rx
			for {
				rx.Fill(rx.NumFreeFillSlots())
				ds := rx.Receive(256)
				if len(ds) == 0 {
					break
				}
				for _, d := range ds {
					if ours(rx.Region().Frame(d)) {
						counts[ev.Tag]++
						total++
					}
				}
				rx.Recycle(ds)
			}
		}
	}
}

func dropped(t testing.TB, qs ...packetio.RxQueue) uint64 {
	var n uint64
	for _, q := range qs {
		st, err := q.Stats()
		if err != nil {
			t.Fatal(err)
		}
		n += st.Dropped
	}
	return n
}

// TestOneGoroutineFourQueues drains two afpacket queues and two afxdp
// queues, on two veth pairs, from one goroutine while both pairs carry
// traffic, and counts every frame sent as received or dropped.
func TestOneGoroutineFourQueues(t *testing.T) {
	p1 := netns.New(t)
	p2 := netns.New(t, netns.WithQueues(2))
	pk := openAfpacket(t, p1.B, afpacket.WithRxQueues(2), afpacket.WithTxQueues(0))
	xd := openAfxdp(t, p2.B, afxdp.WithQueues(2), afxdp.WithSteering(packetio.SteeringFilter{
		Match: []packetio.Match{packetio.MatchEtherType(testEtherType)}}))
	if !pk.Capabilities().ReadyFD || !xd.Capabilities().ReadyFD {
		t.Fatalf("ReadyFD: afpacket %v, afxdp %v", pk.Capabilities().ReadyFD, xd.Capabilities().ReadyFD)
	}
	s := newSet(t)
	rxs := []packetio.RxQueue{pk.RxQueue(0), pk.RxQueue(1), xd.RxQueue(0), xd.RxQueue(1)}
	for i, q := range rxs {
		q.Fill(q.NumFreeFillSlots())
		if err := s.AddRx(q, i); err != nil {
			t.Fatal(err)
		}
	}
	s1 := openAfpacket(t, p1.A, afpacket.WithRxQueues(0))
	s2 := openAfpacket(t, p2.A, afpacket.WithRxQueues(0), afpacket.WithTxQueues(2))
	const per = 4000
	f1, f2 := udpFrames(t, p1.B.MAC, per), testFrames(p2.B.MAC, per)
	done := make(chan struct{})
	go func() { // a modest rate: bursts of 32 with a pause
		defer close(done)
		// A packet socket sends on the veth queue of the CPU it runs on,
		// and veth delivers to the peer's queue of that index: alternate
		// the sending thread between two CPUs so both afxdp queues get
		// traffic. The thread stays locked, so it ends with the goroutine.
		runtime.LockOSThread()
		cpus := min(runtime.NumCPU(), 2)
		for i := 0; i < per; i += 32 {
			var set unix.CPUSet
			set.Set((i / 32) % cpus)
			_ = unix.SchedSetaffinity(0, &set)
			send(t, s1.TxQueue(0), f1[i:i+32])
			send(t, s2.TxQueue((i/32)%2), f2[i:i+32])
			time.Sleep(200 * time.Microsecond)
		}
	}()
	counts := make([]int, 4)
	serve(t, s, counts, 2*per)
	<-done
	// Nothing more of ours may come: every frame sent was received once.
	if evs, _ := s.Wait(50 * time.Millisecond); len(evs) > 0 {
		extra := make([]int, 4)
		for _, ev := range evs {
			if ev.Rx != nil {
				extra[ev.Tag] = drain(ev.Rx)
			}
		}
		t.Logf("after the count: %v more frames (kernel traffic)", extra)
	}
	drops := dropped(t, rxs...)
	t.Logf("per queue %v, drops %d", counts, drops)
	if got := counts[0] + counts[1] + counts[2] + counts[3]; got != 2*per {
		t.Errorf("received %d, want %d", got, 2*per)
	}
	if counts[0]+counts[1] != per || counts[2]+counts[3] != per {
		t.Errorf("per device %d and %d, want %d each", counts[0]+counts[1], counts[2]+counts[3], per)
	}
	if slices.Contains(counts, 0) {
		t.Errorf("per queue %v: one stayed empty", counts)
	}
}

// TestMixedPipeAfpacket waits on a pipe queue (polled) and an afpacket
// queue (epoll) in one set.
func TestMixedPipeAfpacket(t *testing.T) {
	p := netns.New(t)
	pk := openAfpacket(t, p.B, afpacket.WithTxQueues(0))
	src := openAfpacket(t, p.A, afpacket.WithRxQueues(0))
	pa, pb := newPipe(t)
	s := newSet(t)
	for i, q := range []packetio.RxQueue{pk.RxQueue(0), pb.RxQueue(0)} {
		q.Fill(q.NumFreeFillSlots())
		if err := s.AddRx(q, i); err != nil {
			t.Fatal(err)
		}
	}
	const n = 500
	done := make(chan struct{})
	go func() {
		defer close(done)
		fa, fp := testFrames(p.B.MAC, n), testFrames(p.B.MAC, n)
		for i := 0; i < n; i += 10 {
			send(t, src.TxQueue(0), fa[i:i+10])
			send(t, pa.TxQueue(0), fp[i:i+10])
			time.Sleep(time.Millisecond)
		}
	}()
	counts := make([]int, 2)
	serve(t, s, counts, 2*n)
	<-done
	if counts[0] != n || counts[1] != n {
		t.Errorf("afpacket %d, pipe %d, want %d each", counts[0], counts[1], n)
	}
}

// TestQueueClosedWhileWaiting closes queues under a Wait blocked for ever:
// an afpacket queue alone, then a whole afxdp device.
func TestQueueClosedWhileWaiting(t *testing.T) {
	p := netns.New(t)
	pk := openAfpacket(t, p.B, afpacket.WithTxQueues(0))
	xd := openAfxdp(t, p.A, afxdp.WithSteering(packetio.SteeringFilter{
		Match: []packetio.Match{packetio.MatchEtherType(testEtherType)}}))
	s := newSet(t)
	if err := s.AddRx(pk.RxQueue(0), 1); err != nil {
		t.Fatal(err)
	}
	if err := s.AddRx(xd.RxQueue(0), 2); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tag   int
		close func()
	}{
		{1, func() { pk.RxQueue(0).Close() }},
		{2, func() { xd.Close() }},
	} {
		go func() {
			time.Sleep(20 * time.Millisecond)
			tc.close()
		}()
		var evs []waitset.Event
		for len(evs) == 0 {
			var err error
			if evs, err = s.Wait(-1); err != nil {
				t.Fatal(err)
			}
		}
		if len(evs) != 1 || evs[0].Tag != tc.tag || !errors.Is(evs[0].Err, packetio.ErrClosed) {
			t.Fatalf("closing %d: Wait = %+v, want its ErrClosed", tc.tag, evs)
		}
	}
	if s.Len() != 0 {
		t.Errorf("%d closed queues stay in the set", s.Len())
	}
	// The device's descriptors are gone; the set must not have kept the
	// afpacket socket's registration alive in a way that wakes it.
	pk.Close()
	if evs, err := s.Wait(10 * time.Millisecond); err != nil || len(evs) != 0 {
		t.Errorf("empty set: Wait = %v, %v", evs, err)
	}
}

// threadCPU is the CPU time the calling thread has used.
func threadCPU(t testing.TB) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestIdleWaitSleeps checks that an idle Wait on epoll queues sleeps rather
// than spins: the CPU time of the waiting thread over about a second of
// waiting is a small fraction of it (a resource bound, not a timing one).
func TestIdleWaitSleeps(t *testing.T) {
	p := netns.New(t, netns.WithQueues(2))
	pk := openAfpacket(t, p.B, afpacket.WithRxQueues(2), afpacket.WithTxQueues(0))
	xd := openAfxdp(t, p.A, afxdp.WithSteering(packetio.SteeringFilter{
		Match: []packetio.Match{packetio.MatchEtherType(testEtherType)}}))
	s := newSet(t)
	for i, q := range []packetio.RxQueue{pk.RxQueue(0), pk.RxQueue(1), xd.RxQueue(0)} {
		q.Fill(q.NumFreeFillSlots())
		if err := s.AddRx(q, i); err != nil {
			t.Fatal(err)
		}
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, cpu0 := time.Now(), threadCPU(t)
	for time.Since(start) < time.Second {
		evs, err := s.Wait(time.Second - time.Since(start))
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs { // kernel traffic (IPv6 router solicitations)
			if ev.Rx != nil {
				drain(ev.Rx)
			}
		}
	}
	wall, cpu := time.Since(start), threadCPU(t)-cpu0
	t.Logf("idle Wait: %v CPU over %v", cpu, wall)
	if cpu > wall/20 {
		t.Errorf("idle Wait used %v CPU over %v: more than 5%%, it spins", cpu, wall)
	}
}

// TestWaitZeroAllocsEpoll is TestWaitZeroAllocs on epoll queues.
func TestWaitZeroAllocsEpoll(t *testing.T) {
	p := netns.New(t)
	pk := openAfpacket(t, p.B, afpacket.WithTxQueues(0), afpacket.WithLowLatency())
	src := openAfpacket(t, p.A, afpacket.WithRxQueues(0))
	s := newSet(t)
	rx := pk.RxQueue(0)
	if err := s.AddRx(rx, 0); err != nil {
		t.Fatal(err)
	}
	send(t, src.TxQueue(0), testFrames(p.B.MAC, 1))
	var evs []waitset.Event
	for len(evs) == 0 {
		var err error
		if evs, err = s.Wait(5 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		if evs, err := s.Wait(0); err != nil || len(evs) == 0 {
			t.Fatalf("Wait(0) = %v, %v", evs, err)
		}
	})
	if allocs != 0 {
		t.Errorf("Wait allocates %v times per call, want 0", allocs)
	}
}
