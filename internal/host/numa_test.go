package host

import (
	"slices"
	"testing"
)

func TestNICNode(t *testing.T) {
	root := fakeTree(t, "numa.txt")
	for _, tc := range []struct {
		ifname  string
		ifindex int
		want    int
	}{
		{"eth0", 2, 1},
		{"eth0", 3, -1}, // another namespace's eth0
		{"veth0", 5, -1},
		{"bad0", 6, -1},
		{"far0", 7, -1},
		{"gone0", 9, -1},
		{"../eth0", 2, -1},
	} {
		if got := NICNode(root, tc.ifname, tc.ifindex); got != tc.want {
			t.Errorf("NICNode(%q, %d) = %d, want %d", tc.ifname, tc.ifindex, got, tc.want)
		}
	}
}

func TestOnlineNodes(t *testing.T) {
	got, err := OnlineNodes(fakeTree(t, "numa.txt"))
	if err != nil || !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("OnlineNodes = %v, %v", got, err)
	}
	if _, err := OnlineNodes(t.TempDir()); err == nil {
		t.Fatal("OnlineNodes of a host without NUMA: no error")
	}
}
