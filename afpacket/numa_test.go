//go:build linux

package afpacket

import (
	"bytes"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/numa"
	"github.com/packetio/packetio/internal/numa/numatest"
)

// withSysRoot points the NIC's node lookup at a fake sysfs.
func withSysRoot(root string) Option { return func(c *config) { c.sysRoot = root } }

// TestIntegrationNUMANode opens on a veth (no node) by default, with
// WithNUMANode(0), and with a fake sysfs whose NIC reports node 0; checks
// the region's memory policy and Capabilities, and that frames still pass
// through a bound region.
func TestIntegrationNUMANode(t *testing.T) {
	online := numatest.OnlineNodes(t)
	pair := netns.New(t)
	var ifindex int
	if err := pair.A.Do(func() error {
		ifi, err := net.InterfaceByName(pair.A.Link)
		if err == nil {
			ifindex = ifi.Index
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	fake := numatest.FakeSys(t, "0", pair.A.Link, ifindex, 0)
	b := openIn(t, pair.B, WithTxQueues(0))
	for _, tc := range []struct {
		name  string
		opts  []Option
		bound bool
	}{
		{"default on veth", nil, false},
		{"node 0", []Option{WithNUMANode(0)}, true},
		{"NIC on node 0 (fake sysfs)", []Option{withSysRoot(fake)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := openIn(t, pair.A, append(tc.opts, WithRxQueues(0), WithFrames(256))...)
			c := a.Capabilities()
			if c.NUMABound != tc.bound || c.NUMANode != 0 {
				t.Errorf("NUMABound %v, NUMANode %d; want %v, 0", c.NUMABound, c.NUMANode, tc.bound)
			}
			mem := a.TxQueue(0).Region().Bytes()
			p, err := numa.PolicyOf(mem[len(mem)-1:])
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]string{false: "default", true: "bind=static:0"}[tc.bound]; p.String() != want {
				t.Errorf("region policy %v, want %s", p, want)
			}
			var frames [][]byte
			for i := range 8 {
				frames = append(frames, testFrame(t, pair.B.MAC, uint32(i), 100))
			}
			sendFrames(t, a.TxQueue(0), frames)
			got := receiveOurs(t, b.RxQueue(0), len(frames), 3*time.Second)
			if len(got) != len(frames) || !bytes.Equal(got[0], frames[0]) {
				t.Fatalf("received %d of %d frames", len(got), len(frames))
			}
		})
	}
	t.Run("offline node refused", func(t *testing.T) {
		n := 0
		for _, o := range online {
			if o == n {
				n++
			}
		}
		err := pair.A.Do(func() error {
			d, err := Open(pair.A.Link, WithNUMANode(n))
			if err == nil {
				d.Close()
			}
			return err
		})
		want := "WithNUMANode(" + strconv.Itoa(n) + "): NUMA node " + strconv.Itoa(n) + ": no such NUMA node"
		var oe *packetio.OpError
		if !errors.As(err, &oe) || !errors.Is(err, packetio.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Fatalf("Open(WithNUMANode(%d)) = %v, want ErrInvalid saying %q", n, err, want)
		}
	})
}
