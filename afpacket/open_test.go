//go:build linux

package afpacket

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
)

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// Every refusal is an open OpError naming the interface and matching the
// sentinel of its cause, and leaves no socket, eventfd or mapping behind.
func TestIntegrationOpenRefusesAndRollsBack(t *testing.T) {
	pair := netns.New(t)
	t.Cleanup(func() { testHookSocket = nil })
	before := openFDs(t)
	for _, c := range []struct {
		name   string
		ifname string
		setup  func() error
		opts   []Option
		is     error
	}{
		{"no such interface", "nosuch0", nil, nil, packetio.ErrNoDevice},
		{"empty name", "", nil, nil, packetio.ErrInvalid},
		{"name too long", "abcdefghijklmnopq", nil, nil, packetio.ErrInvalid},
		{"bad option", pair.A.Link, nil, []Option{WithFrameSize(1000)}, packetio.ErrInvalid},
		{"late failure, after sockets and rings", pair.A.Link, func() error {
			testHookSocket = func(i int) error {
				if i == 2 {
					return errors.New("injected")
				}
				return nil
			}
			return nil
		}, []Option{WithQueues(4), WithFrames(256)}, packetio.ErrSetup},
		{"late failure, after TPACKET_V2 rings", pair.A.Link, func() error {
			testHookSocket = func(i int) error {
				if i == 2 {
					return errors.New("injected")
				}
				return nil
			}
			return nil
		}, []Option{WithLowLatency(), WithQueues(4), WithFrames(256)}, packetio.ErrSetup},
		{"interface down", pair.A.Link, func() error {
			testHookSocket = nil
			l, err := netlink.LinkByName(pair.A.Link)
			if err != nil {
				return err
			}
			return netlink.LinkSetDown(l)
		}, nil, packetio.ErrUnsupported},
	} {
		t.Run(c.name, func(t *testing.T) {
			var d *Device
			err := pair.A.Do(func() error {
				if c.setup != nil {
					if err := c.setup(); err != nil {
						return err
					}
				}
				var err error
				d, err = Open(c.ifname, c.opts...)
				return err
			})
			if err == nil {
				d.Close()
				t.Fatal("opened")
			}
			var oe *packetio.OpError
			if !errors.As(err, &oe) || oe.Op != "open" || oe.Backend != "afpacket" || oe.Iface != c.ifname || oe.Queue != packetio.NoQueue {
				t.Fatalf("%v (%T) is not an open OpError on %q", err, err, c.ifname)
			}
			if !errors.Is(err, c.is) {
				t.Fatalf("%v does not match %v", err, c.is)
			}
			t.Logf("%v", err)
			if n := openFDs(t); n != before {
				t.Fatalf("%d file descriptors open after a failed Open, %d before", n, before)
			}
		})
	}
}

// A receive queue whose interface disappears fails for good, and a poller
// blocked on it wakes with ErrQueueFailed instead of sleeping for ever, also
// when it already woke for the link going down (the kernel reports the down,
// not the deletion after it). A link that only went down and up again keeps
// the queue healthy.
func TestIntegrationInterfaceGoneFailsTheQueue(t *testing.T) {
	link := func(h *netns.Host, fn func(netlink.Link) error) {
		t.Helper()
		if err := h.Do(func() error {
			l, err := netlink.LinkByName(h.Link)
			if err != nil {
				return err
			}
			return fn(l)
		}); err != nil {
			t.Fatal(err)
		}
	}
	for _, downFirst := range []bool{false, true} {
		pair := netns.New(t)
		d := openIn(t, pair.B, WithTxQueues(0))
		rx := d.RxQueue(0)
		done := make(chan error, 1)
		go func() {
			_, err := rx.Poll(-1)
			done <- err
		}()
		if downFirst {
			time.Sleep(50 * time.Millisecond)
			link(pair.B, netlink.LinkSetDown)
			time.Sleep(300 * time.Millisecond) // the poller wakes, finds the interface, sleeps again
			select {
			case err := <-done:
				t.Fatalf("Poll returned %v for a link that is only down", err)
			default:
			}
			if rx.Err() != nil {
				t.Fatalf("Err %v for a link that is only down", rx.Err())
			}
		}
		link(pair.A, netlink.LinkDel)
		select {
		case err := <-done:
			if !errors.Is(err, packetio.ErrQueueFailed) {
				t.Fatalf("down first %v: Poll: %v, want ErrQueueFailed", downFirst, err)
			}
		case <-time.After(5 * time.Second):
			d.Close()
			t.Fatalf("down first %v: Poll still asleep 5 s after the interface went away", downFirst)
		}
		if !errors.Is(rx.Err(), packetio.ErrQueueFailed) {
			t.Fatalf("Err: %v", rx.Err())
		}
	}

	// Down and up again: traffic flows, the queue stays healthy.
	pair := netns.New(t)
	a := openIn(t, pair.A, WithRxQueues(0))
	b := openIn(t, pair.B, WithTxQueues(0))
	link(pair.B, netlink.LinkSetDown)
	b.RxQueue(0).Poll(300 * time.Millisecond)
	link(pair.B, netlink.LinkSetUp)
	time.Sleep(100 * time.Millisecond) // veth carrier
	sendFrames(t, a.TxQueue(0), [][]byte{testFrame(t, pair.B.MAC, 1, 64)})
	if got := receiveOurs(t, b.RxQueue(0), 1, 3*time.Second); len(got) != 1 {
		t.Fatal("nothing arrived after the link came back")
	}
	if err := b.RxQueue(0).Err(); err != nil {
		t.Fatalf("Err after down and up: %v", err)
	}
}
