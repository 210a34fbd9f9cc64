//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"errors"
	"strings"
	"testing"

	"github.com/packetio/packetio"
)

// TestNUMANodeOnNoHuge: the test EAL runs on --no-huge memory, which DPDK
// binds to no node: the default reports no binding, and a named node is
// refused with ErrUnsupported saying why.
func TestNUMANodeOnNoHuge(t *testing.T) {
	d := openT(t, "net_null0", small()...)
	if c := d.Capabilities(); c.NUMABound {
		t.Errorf("NUMABound on --no-huge memory: %+v", c)
	}
	_, err := Open("net_null1", append(append(append([]Option(nil), ealOpts...), small()...), WithNUMANode(0))...)
	if !errors.Is(err, packetio.ErrUnsupported) || !strings.Contains(err.Error(), "WithNUMANode(0): the EAL runs on --no-huge memory") {
		t.Fatalf("Open(WithNUMANode(0)) on --no-huge: %v, want ErrUnsupported naming --no-huge", err)
	}
}
