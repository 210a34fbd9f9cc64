//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// goneDrivers are the vdevs over a kernel interface, with their options.
var goneDrivers = []struct {
	driver string
	opts   func() []Option
	bpf    bool
}{
	{"net_af_packet", small, false},
	{"net_af_xdp", afxdpOpts, true},
}

// deleteLink runs `ip link del` on h's interface.
func deleteLink(h *netns.Host) error {
	return h.Do(func() error {
		l, err := netlink.LinkByName(h.Link)
		if err != nil {
			return err
		}
		return netlink.LinkDel(l)
	})
}

// TestDeviceGoneIsReported deletes the interface under an idle device, five
// times per driver: with no other call made, Err on every queue matches
// ErrDeviceGone within a second, and so does a Poll blocked with no
// timeout; Stats stay readable. It logs the median time to each.
func TestDeviceGoneIsReported(t *testing.T) {
	for _, dc := range goneDrivers {
		t.Run(dc.driver, func(t *testing.T) {
			testenv.NeedRoot(t)
			if dc.bpf {
				testenv.NeedBPF(t)
			}
			var errAt, pollAt []time.Duration
			for range 5 {
				e, p := deviceGoneOnce(t, dc.driver, dc.opts())
				errAt, pollAt = append(errAt, e), append(pollAt, p)
			}
			slices.Sort(errAt)
			slices.Sort(pollAt)
			t.Logf("%s: ip link del -> Err %v (median of 5, all %v), -> blocked Poll %v (all %v)", dc.driver, errAt[2], errAt, pollAt[2], pollAt)
		})
	}
}

func deviceGoneOnce(t *testing.T, driver string, opts []Option) (errAfter, pollAfter time.Duration) {
	t.Helper()
	p := netns.New(t)
	d, err := openIn(t, p.A, driver+"0,iface="+p.A.Link, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer d.Close()
	rx, tx := d.RxQueue(0), d.TxQueue(0)
	rx.Fill(rx.NumFreeFillSlots())
	type result struct {
		err error
		at  time.Time
	}
	polled := make(chan result, 1)
	go func() {
		_, err := rx.Poll(-1)
		polled <- result{err, time.Now()}
	}()
	start := time.Now()
	if err := deleteLink(p.A); err != nil {
		t.Fatalf("ip link del: %v", err)
	}
	for tx.Err() == nil || rx.Err() == nil {
		if time.Since(start) > time.Second {
			t.Fatalf("1s after ip link del: tx Err %v, rx Err %v", tx.Err(), rx.Err())
		}
		time.Sleep(time.Millisecond)
	}
	errAfter = time.Since(start)
	var r result
	select {
	case r = <-polled:
	case <-time.After(time.Second):
		t.Fatal("a Poll blocked with no timeout did not return within 1s of the loss")
	}
	pollAfter = r.at.Sub(start)
	for what, err := range map[string]error{"tx Err": tx.Err(), "rx Err": rx.Err(), "Poll": r.err} {
		if !errors.Is(err, packetio.ErrDeviceGone) || !errors.Is(err, packetio.ErrQueueFailed) {
			t.Errorf("%s after ip link del: %v, want ErrDeviceGone", what, err)
		}
	}
	if n, err := tx.SendFunc(4, func(int, []byte) int { return 60 }); n != 0 || !errors.Is(err, packetio.ErrDeviceGone) {
		t.Errorf("SendFunc after the loss = %d, %v; want 0, ErrDeviceGone", n, err)
	}
	if _, err := tx.Stats(); err != nil {
		t.Errorf("tx Stats after the loss: %v", err)
	}
	if _, err := rx.Stats(); err != nil {
		t.Errorf("rx Stats after the loss: %v", err)
	}
	if err := d.Close(); err != nil && !errors.Is(err, packetio.ErrDeviceGone) {
		t.Errorf("Close after the loss: %v", err)
	}
	return errAfter, pollAfter
}

// TestWatcherStopsOnClose: a device over a kernel interface runs one
// watcher goroutine, which its Close ends.
func TestWatcherStopsOnClose(t *testing.T) {
	testenv.NeedRoot(t)
	p := netns.New(t)
	before := runtime.NumGoroutine()
	for range 3 {
		d, err := openIn(t, p.A, "net_af_packet0,iface="+p.A.Link, small()...)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if d.watch == nil {
			t.Fatal("no watcher on a port over a kernel interface")
		}
		if err := d.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		select {
		case <-d.watch.done:
		default:
			t.Fatal("Close returned with the watcher still running")
		}
	}
	deadline := time.Now().Add(time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines before three Open/Close rounds, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}
