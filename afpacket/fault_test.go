//go:build linux

package afpacket

import (
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/packetiotest"
)

func TestMain(m *testing.M) {
	packetiotest.FaultChildMain(func(ifname string) (packetiotest.Device, error) {
		return Open(ifname, WithFrames(256))
	})
	os.Exit(m.Run())
}

// TestRunFaults runs the shared fault suite on a veth pair. Nothing can hold
// an interface against a packet socket (they coexist with every other user),
// so the busy case cannot be set up.
func TestRunFaults(t *testing.T) {
	packetiotest.RunFaults(t, func(t *testing.T) *packetiotest.FaultEnv {
		env := packetiotest.VethEnv(t, func(ifname string) (packetiotest.Device, error) {
			return Open(ifname, WithFrames(256))
		})
		return &env.FaultEnv
	}, packetiotest.WithoutFault("busy", "AF_PACKET sockets coexist with every other user of an interface: nothing can hold one against Open"))
}

// deleteLink deletes h's end of the pair (and with it the other end).
func deleteLink(t *testing.T, h *netns.Host) {
	t.Helper()
	if err := h.Do(func() error {
		l, err := netlink.LinkByName(h.Link)
		if err != nil {
			return err
		}
		return netlink.LinkDel(l)
	}); err != nil {
		t.Fatal(err)
	}
}

// A transmit queue whose interface was deleted says so: SendFunc returns the
// queue's error (matching ErrDeviceGone, and so ErrQueueFailed) within a
// bounded time, and on every call after that, instead of (0, nil) for ever.
func TestFaultSendFuncAfterDeviceGone(t *testing.T) {
	pair := netns.New(t)
	d := openIn(t, pair.A, WithRxQueues(0), WithFrames(64))
	tx := d.TxQueue(0)
	frame := func(_ int, f []byte) int { return copy(f, testFrame(t, pair.B.MAC, 1, 64)) }
	if n, err := tx.SendFunc(1, frame); n != 1 || err != nil {
		t.Fatalf("SendFunc before the fault = %d, %v", n, err)
	}
	deleteLink(t, pair.A)
	var err error
	deadline := time.Now().Add(2 * time.Second)
	for err == nil && time.Now().Before(deadline) {
		tx.Complete(1 << 10)
		_, err = tx.SendFunc(1, frame)
	}
	if !errors.Is(err, packetio.ErrDeviceGone) || !errors.Is(err, packetio.ErrQueueFailed) {
		t.Fatalf("SendFunc on a deleted interface: %v, want ErrDeviceGone", err)
	}
	wantOpError(t, "SendFunc after the loss", err, "transmit", pair.A.Link, 0, packetio.ErrDeviceGone)
	for i := range 3 {
		if n, err := tx.SendFunc(1, frame); n != 0 || !errors.Is(err, packetio.ErrDeviceGone) {
			t.Fatalf("SendFunc %d after the first error = %d, %v; want 0, ErrDeviceGone", i, n, err)
		}
	}
	if !errors.Is(tx.Err(), packetio.ErrDeviceGone) {
		t.Errorf("Err: %v, want ErrDeviceGone", tx.Err())
	}
	tx.Complete(1 << 10)
	if got, want := tx.NumFreeFrames(), 64; got != want {
		t.Errorf("%d frames in the pool after the failure, want all %d back", got, want)
	}
}

// Closing one receive queue (not the device) from another goroutine wakes a
// Poll blocked on it at once with ErrClosed, and leaves the other receive
// queue working.
func TestFaultCloseRxQueueWakesPoll(t *testing.T) {
	pair := netns.New(t)
	b := openIn(t, pair.B, WithTxQueues(0), WithRxQueues(2), WithFrames(64))
	for _, timeout := range []time.Duration{-1, 10 * time.Second} {
		d := openIn(t, pair.B, WithTxQueues(0), WithFrames(64))
		rx := d.RxQueue(0)
		woke := make(chan error, 1)
		go func() {
			_, err := rx.Poll(timeout)
			woke <- err
		}()
		time.Sleep(50 * time.Millisecond)
		start := time.Now()
		if err := rx.Close(); err != nil {
			t.Fatalf("rx Close: %v", err)
		}
		select {
		case err := <-woke:
			wantOpError(t, "Poll woken by the queue's Close", err, "poll", pair.B.Link, 0, packetio.ErrClosed)
			if took := time.Since(start); took > 100*time.Millisecond {
				t.Errorf("timeout %v: Poll woke %v after Close", timeout, took)
			}
		case <-time.After(time.Second):
			t.Fatalf("timeout %v: closing the receive queue did not wake Poll within 1s", timeout)
		}
	}
	// Close one queue of a two-queue device: the other stays healthy.
	if err := b.RxQueue(0).Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.RxQueue(1).Err(); err != nil {
		t.Errorf("closing receive queue 0 broke queue 1: %v", err)
	}
	if _, err := b.RxQueue(1).Poll(0); err != nil {
		t.Errorf("Poll on queue 1 after queue 0 closed: %v", err)
	}
}

// Every method of a nil *Device (what a failed Open returns), also through a
// packetio.Device variable, returns an error matching ErrClosed or a zero
// value instead of panicking.
func TestNilDevice(t *testing.T) {
	d, err := Open("pktio-none0", nil)
	if err == nil || d != nil {
		t.Fatalf("Open with a nil option = %v, %v; want nil and an error", d, err)
	}
	var dev packetio.Device = d
	for _, c := range []struct {
		name string
		call func() bool // reports whether the result is right
	}{
		{"Close", func() bool { return errors.Is(dev.Close(), packetio.ErrClosed) }},
		{"Close again", func() bool { return errors.Is(dev.Close(), packetio.ErrClosed) }},
		{"Capabilities", func() bool { return dev.Capabilities() == packetio.Capabilities{} }},
		{"NumTxQueues", func() bool { return dev.NumTxQueues() == 0 }},
		{"NumRxQueues", func() bool { return dev.NumRxQueues() == 0 }},
		{"TxQueue", func() bool { return dev.TxQueue(0) == nil }},
		{"RxQueue", func() bool { return dev.RxQueue(0) == nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic: %v", r)
				}
			}()
			if !c.call() {
				t.Error("wrong result")
			}
		})
	}
	wantOpError(t, "Close of a nil Device", dev.Close(), "close", "", packetio.NoQueue, packetio.ErrClosed)
}

// A frame longer than the link carries (MTU + 14, read at Open) is refused
// by Transmit up front: the prefix ends there, the frame stays the caller's,
// TxStats.Refused counts it, and the good frames behind it go out once the
// caller frees it. SendFunc abandons a batch whose build returns such a
// length with ErrBadLength.
func TestFaultTooLongFrame(t *testing.T) {
	const mtu = 1000
	pair := netns.New(t, netns.WithMTU(mtu))
	a := openIn(t, pair.A, WithRxQueues(0), WithFrames(64))
	b := openIn(t, pair.B, WithTxQueues(0), WithFrames(64))
	if got := a.Capabilities().MaxTxLen; got != mtu+14 {
		t.Fatalf("MaxTxLen %d, want MTU %d + 14", got, mtu)
	}
	tx := a.TxQueue(0)
	descs := append([]packetio.Desc(nil), tx.Alloc(3)...)
	r := tx.Region()
	for i, size := range []int{100, mtu + 15, 200} {
		descs[i].Len = uint32(copy(r.Writable(descs[i]), testFrame(t, pair.B.MAC, uint32(i), size)))
	}
	if n := tx.Transmit(descs); n != 1 {
		t.Fatalf("Transmit([good, %d bytes, good]) = %d, want 1", mtu+15, n)
	}
	st, _ := tx.Stats()
	if st.Refused != 1 || st.Packets != 1 || st.Errors != 0 {
		t.Errorf("after the refusal: Refused %d, Packets %d, Errors %d; want 1, 1, 0", st.Refused, st.Packets, st.Errors)
	}
	tx.Free(descs[1:2])
	if n := tx.Transmit(descs[2:]); n != 1 {
		t.Fatalf("Transmit of the good frame behind = %d, want 1", n)
	}
	tx.Complete(1 << 10)
	if got := receiveOurs(t, b.RxQueue(0), 2, 2*time.Second); len(got) != 2 {
		t.Errorf("the peer received %d frames, want the 2 good ones", len(got))
	}
	if err := tx.Err(); err != nil {
		t.Errorf("Err after a refused frame: %v", err)
	}

	free := tx.NumFreeFrames()
	n, err := tx.SendFunc(3, func(i int, f []byte) int {
		if i == 1 {
			return mtu + 15
		}
		return copy(f, testFrame(t, pair.B.MAC, 9, 100))
	})
	if n != 0 || !errors.Is(err, packetio.ErrBadLength) {
		t.Errorf("SendFunc building a %d-byte frame = %d, %v; want 0, ErrBadLength", mtu+15, n, err)
	}
	if got := tx.NumFreeFrames(); got != free {
		t.Errorf("the abandoned batch left %d frames in the pool, want %d", got, free)
	}
	if st, _ := tx.Stats(); st.Refused != 2 || st.Packets != 2 {
		t.Errorf("after SendFunc: Refused %d, Packets %d; want 2, 2", st.Refused, st.Packets)
	}
	// The largest frame the link carries still goes out.
	if n, err := tx.SendFunc(1, func(_ int, f []byte) int { return copy(f, testFrame(t, pair.B.MAC, 10, mtu+14)) }); n != 1 || err != nil {
		t.Errorf("SendFunc of a %d-byte frame = %d, %v; want 1, nil", mtu+14, n, err)
	}
}

// rss is the process's resident set in bytes.
func rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// A Region slice taken before Close stays safe to read and write after it
// (no SIGSEGV), and opening and closing in a loop does not grow the resident
// set.
func TestRegionSliceAfterClose(t *testing.T) {
	pair := netns.New(t)
	d := openIn(t, pair.A, WithFrames(256))
	tx := d.TxQueue(0)
	whole := tx.Region().Bytes()
	desc := tx.Alloc(1)[0]
	frame := tx.Region().Writable(desc)
	frame[0] = 0xab
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	frame[1] = 0xcd // must not fault
	if frame[0] != 0xab || whole[len(whole)-1] != 0 {
		t.Errorf("stale slices read %#x and %#x", frame[0], whole[len(whole)-1])
	}
	for i := 0; i < len(whole); i += 4096 {
		_ = whole[i]
	}

	const rounds = 40 // of 8 MiB regions (and 8 MiB rings)
	open := func() {
		var dev *Device
		if err := pair.A.Do(func() (err error) {
			dev, err = Open(pair.A.Link, WithTxQueues(1), WithRxQueues(1))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		_ = dev.TxQueue(0).Region().Bytes()[0]
		if err := dev.Close(); err != nil {
			t.Fatal(err)
		}
	}
	open() // warm up
	runtime.GC()
	debug.FreeOSMemory()
	before := rss(t)
	for range rounds {
		open()
	}
	runtime.GC()
	debug.FreeOSMemory()
	after := rss(t)
	t.Logf("RSS %d KiB before %d Open/Close rounds, %d KiB after", before>>10, rounds, after>>10)
	if after-before > 32<<20 {
		t.Errorf("RSS grew by %d MiB over %d Open/Close rounds of an 8 MiB region", (after-before)>>20, rounds)
	}
}

// TestFaultCloseDuringCalls: Device.Close on one goroutine while the queues'
// driving goroutine calls their methods in a loop (what a waitset does
// between sleeps, or a sender told to stop) and a monitor reads Stats and
// Err never touches the rings Close unmaps or the descriptors it closes, on
// both ring versions; afterwards every call returns zero, nil or ErrClosed.
// A ring read after the unmap is a SIGSEGV, which kills the test binary.
func TestFaultCloseDuringCalls(t *testing.T) {
	pair := netns.New(t)
	frame := testFrame(t, pair.B.MAC, 1, 60)
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"TPACKET_V3", nil},
		{"TPACKET_V2", []Option{WithLowLatency()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for round := range 20 {
				var d *Device
				if err := pair.A.Do(func() (err error) {
					d, err = Open(pair.A.Link, append([]Option{WithFrames(256)}, tc.opts...)...)
					return err
				}); err != nil {
					t.Fatal(err)
				}
				rx, tx := d.RxQueue(0), d.TxQueue(0)
				rn := rx.(packetio.ReadyNotifier)
				driver := []func(){
					func() { _ = rn.Arm() },
					func() { _ = rx.NumReceived() },
					func() { rx.Fill(rx.NumFreeFillSlots()) },
					func() { rx.Recycle(rx.Receive(8)) },
					func() { _, _ = tx.SendFunc(4, func(_ int, f []byte) int { return copy(f, frame) }) },
					func() { tx.Complete(tx.NumCompleted()) },
					func() { _ = tx.(*TxQueue).NumFreeSlots() },
					func() { tx.Free(tx.Alloc(2)) },
				}
				monitor := []func(){
					func() { _, _ = rx.Stats() },
					func() { _ = rx.Err() },
					func() { _, _ = tx.Stats() },
					func() { _ = tx.Err() },
				}
				var loops testenv.Loops
				for _, calls := range [][]func(){driver, monitor} {
					loops.Go(func() {
						for _, call := range calls {
							call()
						}
					})
				}
				time.Sleep(time.Duration(round%5) * time.Millisecond)
				err := d.Close()
				loops.Stop()
				if err != nil {
					t.Fatal(err)
				}
				if rn.Arm() != 0 || rx.NumReceived() != 0 || len(rx.Receive(8)) != 0 || tx.(*TxQueue).NumFreeSlots() != 0 || len(tx.Alloc(1)) != 0 {
					t.Fatalf("round %d: a queue works after Close", round)
				}
				if _, err := tx.SendFunc(1, func(_ int, f []byte) int { return copy(f, frame) }); !errors.Is(err, packetio.ErrClosed) {
					t.Fatalf("round %d: SendFunc after Close: %v, want ErrClosed", round, err)
				}
				if err := rx.Err(); !errors.Is(err, packetio.ErrClosed) {
					t.Fatalf("round %d: RxQueue.Err after Close: %v, want ErrClosed", round, err)
				}
			}
		})
	}
}

// TestCloseWaitsForCalls: Device.Close does not unmap a ring or close a
// socket while a call on one of its queues is counted in, and returns once
// the call has left. (TestFaultCloseDuringCalls runs real calls, but the
// window between a call's closed check and its ring read is nanoseconds
// wide; this holds one open.)
func TestCloseWaitsForCalls(t *testing.T) {
	pair := netns.New(t)
	for _, side := range []string{"rx", "tx"} {
		t.Run(side, func(t *testing.T) {
			var d *Device
			if err := pair.A.Do(func() (err error) {
				d, err = Open(pair.A.Link, WithFrames(256))
				return err
			}); err != nil {
				t.Fatal(err)
			}
			rx, tx := d.RxQueue(0).(*RxQueue), d.TxQueue(0).(*TxQueue)
			calls, closed, fd := &rx.calls, &rx.closed, rx.fd
			if side == "tx" {
				calls, closed, fd = &tx.calls, &tx.closed, tx.fd
			}
			if !calls.Enter(closed) {
				t.Fatal("a call could not enter an open queue")
			}
			done := make(chan error, 1)
			go func() { done <- d.Close() }()
			select {
			case err := <-done:
				t.Fatalf("Close returned (%v) while a call was in progress", err)
			case <-time.After(50 * time.Millisecond):
			}
			// The call still reads the ring and uses the socket.
			_ = rx.ready()
			if _, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil {
				t.Fatalf("the socket was closed under a call: %v", err)
			}
			calls.Exit()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Close did not return after the call left")
			}
			if calls.Enter(closed) {
				t.Fatal("a call entered a closed queue")
			}
		})
	}
}
