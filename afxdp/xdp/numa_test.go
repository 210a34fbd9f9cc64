package xdp

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/numa"
	"github.com/packetio/packetio/internal/numa/numatest"
)

// withSysRoot points the NIC's node lookup at a fake sysfs.
func withSysRoot(root string) Option { return func(c *config) { c.sysRoot = root } }

// offlineNode is a node number the host does not have.
func offlineNode(t *testing.T) int {
	t.Helper()
	online := numatest.OnlineNodes(t)
	n := 0
	for _, o := range online {
		if o == n {
			n++
		}
	}
	return n
}

// umemPolicy is the memory policy of the first and last frame of every
// socket's UMEM.
func umemPolicies(t *testing.T, f *Fleet) []numa.Policy {
	t.Helper()
	var out []numa.Policy
	for _, s := range f.Sockets() {
		u := s.UMEM()
		for _, b := range [][]byte{u, u[len(u)-1:]} {
			p, err := numa.PolicyOf(b)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p)
		}
	}
	return out
}

// TestNUMANode opens on a veth (which reports no node) with and without
// WithNUMANode(0), one UMEM per socket and one shared, and with a fake sysfs
// whose NIC reports node 0, and reads back the policy of the UMEM's pages.
func TestNUMANode(t *testing.T) {
	offlineNode(t) // skips on a host without NUMA
	p := vethPair(t)
	var ifindex int
	if err := p.B.Do(func() error {
		ifi, err := net.InterfaceByName(p.B.Link)
		if err == nil {
			ifindex = ifi.Index
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	fake := numatest.FakeSys(t, "0", p.B.Link, ifindex, 0)
	for _, tc := range []struct {
		name  string
		opts  []Option
		bound bool
	}{
		{"default on veth", nil, false},
		{"node 0", []Option{WithNUMANode(0)}, true},
		{"node 0, shared UMEM", []Option{WithNUMANode(0), WithSharedMemory(4096)}, true},
		{"-1 follows veth: none", []Option{WithNUMANode(-1)}, false},
		{"NIC on node 0 (fake sysfs)", []Option{withSysRoot(fake)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]Option{WithFilter(filter.MatchEtherType(testEtherType)), WithNumFrames(64), WithRingSize(32)}, tc.opts...)
			f := openIn(t, p.B, opts...)
			info, _ := f.Info()
			if info.NUMABound != tc.bound || info.NUMANode != 0 {
				t.Errorf("Info NUMABound %v, NUMANode %d; want %v, 0", info.NUMABound, info.NUMANode, tc.bound)
			}
			if got := strings.Contains(info.String(), "frames on NUMA node 0"); got != tc.bound {
				t.Errorf("Info %q", info)
			}
			for _, pol := range umemPolicies(t, f) {
				want := "default"
				if tc.bound {
					want = "bind=static:0"
				}
				if pol.String() != want {
					t.Errorf("UMEM policy %v, want %s", pol, want)
				}
			}
		})
	}
	t.Run("offline node refused", func(t *testing.T) {
		n := offlineNode(t)
		err := p.B.Do(func() error {
			f, err := Open(p.B.Link, WithFilter(filter.MatchEtherType(testEtherType)), WithNumFrames(64), WithRingSize(32), WithNUMANode(n))
			if err == nil {
				f.Close()
			}
			return err
		})
		want := "WithNUMANode(" + strconv.Itoa(n) + "): NUMA node " + strconv.Itoa(n) + ": no such NUMA node"
		if !errors.Is(err, packetio.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Fatalf("Open(WithNUMANode(%d)) = %v, want ErrInvalid saying %q", n, err, want)
		}
	})
}

// TestNewUMEMBindsBeforeTouching maps a bound UMEM on 2 MiB pages when the
// host has them (falling back to normal pages otherwise) and checks every
// page's policy range.
func TestNewUMEMBinds(t *testing.T) {
	offlineNode(t)
	for _, huge := range []bool{false, true} {
		u, err := newUMEM(64*2048, 2048, huge, 0)
		if err != nil {
			t.Fatal(err)
		}
		p, err := numa.PolicyOf(u.mem[len(u.mem)-1:])
		u.release()
		if err != nil {
			t.Fatal(err)
		}
		if p.String() != "bind=static:0" {
			t.Errorf("huge %v (%v): policy %v", huge, u.huge, p)
		}
	}
}
