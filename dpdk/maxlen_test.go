//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"testing"

	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// TestMaxTxLenIsTheLinks: MaxTxLen is the kernel interface's MTU plus the
// Ethernet header, read when Open ran; a port without one (net_null) is
// bounded by its configured MTU.
func TestMaxTxLenIsTheLinks(t *testing.T) {
	testenv.NeedRoot(t)
	for _, mtu := range []int{1500, 1280} {
		p := netns.New(t, netns.WithMTU(mtu))
		d, err := openIn(t, p.A, "net_af_packet0,iface="+p.A.Link, small()...)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if got := d.Capabilities().MaxTxLen; got != mtu+14 {
			t.Errorf("MTU %d: MaxTxLen %d, want %d", mtu, got, mtu+14)
		}
		d.Close()
	}
	if got := openT(t, "net_null0", small()...).Capabilities().MaxTxLen; got != 1514 {
		t.Errorf("net_null: MaxTxLen %d, want 1514 (the default MTU)", got)
	}
}
