//go:build linux

package afpacket

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

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

// socketMappings counts the process's mappings of sockets (the rings).
func socketMappings(t *testing.T) int {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(maps), "socket:[")
}

// Every refusal is an open OpError naming the interface and matching the
// sentinel of its cause, and leaves no socket, eventfd or mapping behind.
func TestIntegrationOpenRefusesAndRollsBack(t *testing.T) {
	pair := netns.New(t)
	t.Cleanup(func() { testHookSocket, testHookTxMap = nil, nil })
	before, beforeMaps := openFDs(t), socketMappings(t)
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
		{"late failure, after transmit rings", pair.A.Link, func() error {
			testHookSocket = func(i int) error {
				if i == 5 { // the second transmit socket: rx 0-3, then tx
					return errors.New("injected")
				}
				return nil
			}
			return nil
		}, []Option{WithQueues(4), WithFrames(256)}, packetio.ErrSetup},
		{"transmit ring mapping fails", pair.A.Link, func() error {
			testHookSocket = nil
			calls := 0
			testHookTxMap = func() error {
				if calls++; calls == 2 {
					return unix.ENOMEM
				}
				return nil
			}
			return nil
		}, []Option{WithQueues(3), WithFrames(256)}, packetio.ErrSetup},
		{"interface down", pair.A.Link, func() error {
			testHookTxMap = nil
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
			if n := socketMappings(t); n != beforeMaps {
				t.Fatalf("%d ring mappings after a failed Open, %d before", n, beforeMaps)
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

// Every option is checked before anything is opened: a refusal wraps
// ErrInvalid and names the option and its value (or the nil option's
// position, or the interface name, quoted).
func TestValidateNamesTheInput(t *testing.T) {
	long := "abcdefghijklmnop" // 16 bytes
	for _, c := range []struct {
		name   string
		ifname string
		opts   []Option
		says   string
	}{
		{"nil option", "veth0", []Option{WithFrames(64), nil}, "option 2 is nil"},
		{"nil first option", "veth0", []Option{nil}, "option 1 is nil"},
		{"negative tx queues", "veth0", []Option{WithTxQueues(-1)}, "WithTxQueues(-1)"},
		{"negative rx queues", "veth0", []Option{WithRxQueues(-3)}, "WithRxQueues(-3)"},
		{"negative queues", "veth0", []Option{WithQueues(-2)}, "WithQueues(-2)"},
		{"zero queues", "veth0", []Option{WithQueues(0)}, "WithQueues(0)"},
		{"zero tx and rx", "veth0", []Option{WithTxQueues(0), WithRxQueues(0)}, "WithTxQueues(0) and WithRxQueues(0)"},
		{"too many tx queues", "veth0", []Option{WithTxQueues(65)}, "WithTxQueues(65)"},
		{"too many queues", "veth0", []Option{WithQueues(100)}, "WithQueues(100)"},
		{"zero frames", "veth0", []Option{WithFrames(0)}, "WithFrames(0)"},
		{"negative frames", "veth0", []Option{WithFrames(-5)}, "WithFrames(-5)"},
		{"frames that wrap the region size", "veth0", []Option{WithFrames(1 << 62)}, "WithFrames(4611686018427387904)"},
		{"too few frames per queue", "veth0", []Option{WithQueues(4), WithFrames(32)}, "WithFrames(32)"},
		{"zero frame size", "veth0", []Option{WithFrameSize(0)}, "WithFrameSize(0)"},
		{"frame size not a power of two", "veth0", []Option{WithFrameSize(1000)}, "WithFrameSize(1000)"},
		{"frame size too big", "veth0", []Option{WithFrameSize(1 << 17)}, "WithFrameSize(131072)"},
		{"negative frame size", "veth0", []Option{WithFrameSize(-2048)}, "WithFrameSize(-2048)"},
		{"zero block size", "veth0", []Option{WithBlockSize(0)}, "WithBlockSize(0)"},
		{"block size too small", "veth0", []Option{WithBlockSize(2048)}, "WithBlockSize(2048)"},
		{"GSO with small frames", "veth0", []Option{WithGSO(), WithFrameSize(2048)}, "WithFrameSize(2048)"},
		{"GSO with small blocks", "veth0", []Option{WithGSO(), WithBlockSize(1 << 16)}, "WithBlockSize(65536)"},
		{"empty name", "", nil, `""`},
		{"name with NUL", "veth\x000", nil, `"veth\x000"`},
		{"name 16 bytes", long, nil, `"` + long + `"`},
		{"name with slash", "a/b", nil, `"a/b"`},
		{"name with space", "a b", nil, `"a b"`},
		{"name dot-dot", "..", nil, `".."`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := validate(c.ifname, c.opts)
			if !errors.Is(err, packetio.ErrInvalid) {
				t.Fatalf("validate: %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("%q does not say %s", err, c.says)
			}
			d, err := Open(c.ifname, c.opts...)
			if d != nil || !errors.Is(err, packetio.ErrInvalid) {
				t.Fatalf("Open: %v, %v; want nil and ErrInvalid", d, err)
			}
			var oe *packetio.OpError
			if !errors.As(err, &oe) || oe.Op != "open" || oe.Iface != c.ifname {
				t.Errorf("Open: %v is not an open OpError on %q", err, c.ifname)
			}
		})
	}
	// The edges that are fine.
	for _, opts := range [][]Option{
		nil,
		{WithTxQueues(0)},
		{WithRxQueues(0)},
		{WithQueues(MaxQueues), WithFrames(8 * 2 * MaxQueues)},
		{WithFrameSize(128), WithFrames(16)},
		{WithFrameSize(65536), WithFrames(256)},
		{WithBlockSize(4096), WithBlockSize(1 << 22)},
		{WithGSO()},
		{WithLowLatency(), WithMultiBuffer()},
	} {
		if _, err := validate("abcdefghijklmno", opts); err != nil {
			t.Errorf("validate(%d options): %v", len(opts), err)
		}
	}
}
