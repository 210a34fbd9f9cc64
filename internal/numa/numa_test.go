package numa

import (
	"errors"
	"github.com/packetio/packetio/internal/numa/numatest"
	"os"
	"path/filepath"
	"testing"
)

// fakeSys writes a sysfs tree: the online nodes and, when node is not "",
// an interface eth9 of ifindex 7 whose device reports node.
func fakeSys(t *testing.T, online, node string) string {
	t.Helper()
	root := t.TempDir()
	write := func(p, v string) {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if online != "" {
		write("devices/system/node/online", online)
	}
	write("class/net/veth9/ifindex", "8") // no device directory, as veth
	if node != "" {
		write("class/net/eth9/ifindex", "7")
		write("class/net/eth9/device/numa_node", node)
	}
	return root
}

func TestChoose(t *testing.T) {
	tests := []struct {
		name            string
		online, nicNode string
		ifname          string
		ifindex, want   int
		node            int
		err             error
	}{
		{"follow a NIC on node 1", "0-1", "1", "eth9", 7, Unset, 1, nil},
		{"follow a NIC that reports -1", "0-1", "-1", "eth9", 7, Unset, Unset, nil},
		{"follow veth (no device)", "0-1", "", "veth9", 8, Unset, Unset, nil},
		{"no NIC at all", "0", "", "", 0, Unset, Unset, nil},
		{"another namespace's eth9", "0-1", "1", "eth9", 3, Unset, Unset, nil},
		{"NIC on an offline node", "0", "1", "eth9", 7, Unset, Unset, nil},
		{"NIC node, host without NUMA", "", "1", "eth9", 7, Unset, Unset, nil},
		{"garbage node", "0-1", "x", "eth9", 7, Unset, Unset, nil},
		{"option wins over the NIC", "0-1", "1", "eth9", 7, 0, 0, nil},
		{"option without a NIC", "0,2", "", "", 0, 2, 2, nil},
		{"offline node refused", "0", "", "", 0, 1, Unset, ErrBadNode},
		{"negative node refused", "0", "", "", 0, -2, Unset, ErrBadNode},
		{"huge node refused", "0", "", "", 0, MaxNode + 1, Unset, ErrBadNode},
		{"node on a host without NUMA", "", "", "", 0, 0, Unset, ErrNoNUMA},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeSys(t, tc.online, tc.nicNode)
			n, err := Choose(root, tc.ifname, tc.ifindex, tc.want)
			if n != tc.node || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Fatalf("Choose(%q, %d, %d) = %d, %v; want %d, %v", tc.ifname, tc.ifindex, tc.want, n, err, tc.node, tc.err)
			}
		})
	}
}

func TestChooseErrorNamesTheNode(t *testing.T) {
	_, err := Choose(fakeSys(t, "0", ""), "", 0, 5)
	if err == nil || err.Error() != "NUMA node 5: no such NUMA node (online: 0)" {
		t.Fatalf("err = %v", err)
	}
}

// TestAllocBindsNode0 binds a region to node 0, which every Linux host
// with NUMA support has, and reads the policy back.
func TestAllocBindsNode0(t *testing.T) {
	numatest.OnlineNodes(t)
	mem, err := Alloc(1<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer Release(mem)
	for _, off := range []int{0, len(mem) - 1} {
		p, err := PolicyOf(mem[off:])
		if err != nil {
			t.Fatal(err)
		}
		if p.Mode != ModeBind || p.Flags&FlagStaticNodes == 0 || len(p.Nodes) != 1 || p.Nodes[0] != 0 {
			t.Fatalf("policy at %d = %v (%+v), want bind=static:0", off, p, p)
		}
	}
	// Release keeps the range: a stale read finds zeros, not a fault.
	mem[0] = 1
	Release(mem)
	if mem[0] != 0 {
		t.Fatalf("released memory reads %d", mem[0])
	}
}

func TestDefaultPolicyOfGoMemory(t *testing.T) {
	numatest.OnlineNodes(t)
	b := make([]byte, 64)
	p, err := PolicyOf(b)
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != ModeDefault || p.String() != "default" {
		t.Fatalf("policy of Go memory = %v", p)
	}
}

func TestBindRefusesBadNode(t *testing.T) {
	for _, n := range []int{-1, MaxNode + 1} {
		if err := Bind(make([]byte, 1), n); !errors.Is(err, ErrBadNode) {
			t.Errorf("Bind(node %d) = %v", n, err)
		}
	}
}

func TestPolicyString(t *testing.T) {
	for _, tc := range []struct {
		p    Policy
		want string
	}{
		{Policy{}, "default"},
		{Policy{Mode: ModeBind, Flags: FlagStaticNodes, Nodes: []int{0}}, "bind=static:0"},
		{Policy{Mode: ModePreferred, Nodes: []int{1, 3}}, "preferred=1,3"},
		{Policy{Mode: 9}, "mode9="},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
}

// FuzzChoose: any node number and any online list either binds to an
// online node or is refused with ErrBadNode or ErrNoNUMA; it never panics.
func FuzzChoose(f *testing.F) {
	f.Add("0", 0)
	f.Add("0-3,8", 8)
	f.Add("", -1)
	f.Add("x", 1024)
	f.Fuzz(func(t *testing.T, online string, want int) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "devices/system/node"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "devices/system/node/online"), []byte(online), 0o644); err != nil {
			t.Fatal(err)
		}
		n, err := Choose(root, "", 0, want)
		switch {
		case err != nil:
			if n != Unset || !(errors.Is(err, ErrBadNode) || errors.Is(err, ErrNoNUMA)) {
				t.Fatalf("Choose(%q, %d) = %d, %v", online, want, n, err)
			}
		case want == Unset:
			if n != Unset {
				t.Fatalf("Choose(%q, unset) = %d", online, n)
			}
		case n != want:
			t.Fatalf("Choose(%q, %d) = %d", online, want, n)
		}
	})
}
