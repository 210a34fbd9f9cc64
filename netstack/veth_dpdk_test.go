//go:build dpdk && linux && amd64 && cgo

package netstack

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/dpdk"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/netstack/afxdpsteer"
)

// With -tags dpdk the veth tests also run the stack over DPDK's AF_PACKET
// driver. Like the afpacket backend it is a tap on A's interface, so the
// addressing is the same (the stack has an address no kernel owns). It has
// no offloads: B's kernel finishes its own checksums and segments.
var (
	dpdkPort atomic.Int32
	ealOnce  sync.Once
	ealErr   error
)

// startEAL starts DPDK's EAL, whose thread lives as long as the process,
// before any test counts goroutines.
func startEAL(t *testing.T) {
	testenv.NeedRoot(t)
	ealOnce.Do(func() {
		var d *dpdk.Device
		if d, ealErr = dpdk.Open("net_null0", eal...); ealErr == nil {
			d.Close()
		}
	})
	if ealErr != nil {
		t.Fatalf("start DPDK: %v", ealErr)
	}
}

var eal = []dpdk.Option{dpdk.WithNoHuge(), dpdk.WithMemory(256)}

func init() {
	vethModes = append(vethModes, vethMode{
		name:   "dpdk-net_af_packet",
		warmup: startEAL,
		open: func(h *netns.Host, _ afxdpsteer.Traffic) (packetio.Device, error) {
			name := fmt.Sprintf("net_af_packet%d,iface=%s", dpdkPort.Add(1), h.Link)
			return dpdk.Open(name, append(eal, dpdk.WithRxQueues(1))...)
		},
		peerTxOff: true,
	})
}
