// Package numatest holds what the backends' NUMA tests share: the host's
// online nodes (a host without NUMA support cannot run them, which fails
// under PACKETIO_CONFORM_REQUIRED) and a fake sysfs tree in which a network
// interface reports a node.
package numatest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/packetio/packetio/internal/host"
	"github.com/packetio/packetio/internal/testenv"
)

// OnlineNodes returns the host's online NUMA nodes, or ends the test through
// testenv.CannotRun when the host has no NUMA support.
func OnlineNodes(t testing.TB) []int {
	t.Helper()
	online, err := host.OnlineNodes("/sys")
	if err != nil {
		testenv.CannotRun(t, "host without NUMA support: %v", err)
	}
	return online
}

// FakeSys writes a sysfs tree under a temporary directory and returns its
// root: nodes online (as in /sys/devices/system/node/online, e.g. "0" or
// "0-1"), and the interface link with ifindex reporting node (its
// device/numa_node).
func FakeSys(t testing.TB, online, link string, ifindex, node int) string {
	t.Helper()
	root := t.TempDir()
	for file, v := range map[string]string{
		"devices/system/node/online":              online,
		"class/net/" + link + "/ifindex":          strconv.Itoa(ifindex),
		"class/net/" + link + "/device/numa_node": strconv.Itoa(node),
	} {
		p := filepath.Join(root, file)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}
