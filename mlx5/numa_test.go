//go:build linux && cgo && mlx5 && (amd64 || arm64)

package mlx5

import (
	"testing"

	"github.com/packetio/packetio/internal/numa"
	"github.com/packetio/packetio/internal/numa/numatest"
)

// TestMapFramesBindsNode: the region Open registers with the card is bound
// to the node before it is populated; unbound, it keeps the default policy.
// (The model card does not go through Open's region: this checks mapFrames
// itself.)
func TestMapFramesBindsNode(t *testing.T) {
	numatest.OnlineNodes(t)
	for _, tc := range []struct {
		node int
		want string
	}{{numa.Unset, "default"}, {0, "bind=static:0"}} {
		mem, err := mapFrames(1<<20, tc.node)
		if err != nil {
			t.Fatal(err)
		}
		p, err := numa.PolicyOf(mem[len(mem)-1:])
		unmapFrames(mem)
		if err != nil {
			t.Fatal(err)
		}
		if p.String() != tc.want {
			t.Errorf("node %d: policy %v, want %s", tc.node, p, tc.want)
		}
	}
}

// TestChooseNode: the port's PCI node (a fake sysfs here) is followed by
// default, WithNUMANode wins, an offline node is refused.
func TestChooseNode(t *testing.T) {
	root := numatest.FakeSys(t, "0-1", "lo", 1, 1)
	for _, tc := range []struct {
		opts []Option
		node int
		ok   bool
	}{
		{nil, 1, true},
		{[]Option{WithNUMANode(0)}, 0, true},
		{[]Option{WithNUMANode(-1)}, 1, true},
		{[]Option{WithNUMANode(2)}, numa.Unset, false},
	} {
		c, err := validate("lo", tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		c.sysRoot = root
		o := &opener{ifname: "lo", c: c}
		err = o.chooseNode()
		if (err == nil) != tc.ok || o.node != tc.node {
			t.Errorf("%d options: node %d, %v; want %d (ok %v)", len(tc.opts), o.node, err, tc.node, tc.ok)
		}
	}
}
