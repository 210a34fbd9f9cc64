//go:build dpdk && linux && amd64 && cgo

package eal

import (
	"testing"

	"github.com/packetio/packetio/dpdk/internal/queue"
)

// TestLayoutMatchesHeaders compares the queue package's hand-written mbuf
// layout with the DPDK headers it was read from.
func TestLayoutMatchesHeaders(t *testing.T) {
	l := HeaderLayout()
	if l.MbufSize != queue.MbufSize || l.Headroom != queue.Headroom || l.ObjHeader != queue.ObjHeader {
		t.Fatalf("headers: mbuf %d headroom %d object header %d; queue has %d %d %d",
			l.MbufSize, l.Headroom, l.ObjHeader, queue.MbufSize, queue.Headroom, queue.ObjHeader)
	}
	for name, off := range queue.Offsets {
		if l.Offsets[name] != off {
			t.Errorf("%s: headers say %d, queue says %d", name, l.Offsets[name], off)
		}
	}
	for name, want := range map[string]uint64{
		"rx_ip_good": queue.RxIPCksumGood, "rx_l4_good": queue.RxL4CksumGood,
		"tx_ipv4": queue.TxIPv4, "tx_ipv6": queue.TxIPv6, "tx_ip_cksum": queue.TxIPCksum,
		"tx_tcp_cksum": queue.TxTCPCksum, "tx_udp_cksum": queue.TxUDPCksum, "tx_tcp_seg": queue.TxTCPSeg,
	} {
		if l.Flags[name] != want {
			t.Errorf("flag %s: headers %#x, queue %#x", name, l.Flags[name], want)
		}
	}
}
