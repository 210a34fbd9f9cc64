// Package hosttest is test support for the host package: a snapshot of a
// test host's settings, taken inside its namespace, that fails the test
// when it cannot be read.
package hosttest

import (
	"testing"

	"github.com/packetio/packetio/internal/host"
	"github.com/packetio/packetio/internal/netns"
)

// Snapshot reads the host settings of h's interface inside h's namespace
// (host.TakeSnapshot), for tests that prove an Open changed nothing.
func Snapshot(t testing.TB, h *netns.Host) host.Snapshot {
	t.Helper()
	s, err := host.TakeSnapshotIn(h.Do, h.Link)
	if err != nil {
		t.Fatalf("snapshot of %s: %v", h.Link, err)
	}
	if s["sysfs napi_defer_hard_irqs"] == "absent" {
		t.Fatalf("%s has no napi_defer_hard_irqs: a snapshot of it would prove nothing", h.Link)
	}
	return s
}
