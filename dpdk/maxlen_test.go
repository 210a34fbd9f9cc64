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

// TestRegionAfterClose: after Close the Region answers nil and 0, and a
// slice taken before Close, with --no-huge, still reads without a fault
// (the memory is the EAL's one mapping, given back to its heap).
func TestRegionAfterClose(t *testing.T) {
	d := openT(t, "net_null0", small()...)
	tx := d.TxQueue(0)
	r := tx.Region()
	descs := tx.Alloc(1)
	if len(descs) != 1 {
		t.Fatal("Alloc(1)")
	}
	descs[0].Len = 60
	stale := r.Frame(descs[0])
	if len(stale) != 60 || len(r.Bytes()) == 0 || r.NumFrames() == 0 {
		t.Fatal("the region is empty while open")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if r.Bytes() != nil || r.Frame(descs[0]) != nil || r.Writable(descs[0]) != nil || r.NumFrames() != 0 {
		t.Errorf("after Close: Bytes %d, Frame %d, Writable %d bytes, NumFrames %d; want nil and 0",
			len(r.Bytes()), len(r.Frame(descs[0])), len(r.Writable(descs[0])), r.NumFrames())
	}
	_ = stale[0] // --no-huge: mapped still, DPDK's again
}
