package afxdp_test

import (
	"testing"

	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/numa"
	"github.com/packetio/packetio/packetiotest"
)

// TestNUMANode: WithNUMANode(0) binds the region to node 0 and says so in
// Capabilities; the default on veth (no node) sets no policy.
func TestNUMANode(t *testing.T) {
	pair := netns.New(t)
	for _, tc := range []struct {
		name  string
		opts  []afxdp.Option
		bound bool
	}{
		{"default", nil, false},
		{"node 0", []afxdp.Option{afxdp.WithNUMANode(0)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := opener(pair.A, tc.opts...)(t).(*afxdp.Device)
			t.Cleanup(func() { d.Close() })
			c := d.Capabilities()
			if c.NUMABound != tc.bound || c.NUMANode != 0 {
				t.Errorf("Capabilities NUMABound %v, NUMANode %d; want %v, 0", c.NUMABound, c.NUMANode, tc.bound)
			}
			mem := d.Rx[0].Region().Bytes()
			p, err := numa.PolicyOf(mem[len(mem)-1:])
			if err != nil {
				t.Fatal(err)
			}
			want := map[bool]string{false: "default", true: "bind=static:0"}[tc.bound]
			if p.String() != want {
				t.Errorf("region policy %v, want %s", p, want)
			}
		})
	}
}

// TestConformanceNUMANode runs the suite on memory bound to node 0.
func TestConformanceNUMANode(t *testing.T) {
	pair := netns.New(t)
	m := afxdp.WithXDP(xdp.WithDriverMode())
	packetiotest.Run(t, opener(pair.A, m, afxdp.WithNUMANode(0)), packetiotest.WithPeer(opener(pair.B, m)))
}
