//go:build dpdk && linux && amd64 && cgo

package main

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/dpdk"
	"github.com/packetio/packetio/netstack/afxdpsteer"
)

// With -tags dpdk, -backend dpdk opens DPDK's AF_PACKET driver on the
// interface: a tap, like afpacket, so the stack is addressed the same way
// (an address the kernel does not own). It has no offloads: the stack
// cuts and checksums every segment, and on the self-test's veth pair B's
// kernel finishes its own checksums and segments.
func init() {
	tagged["dpdk"] = taggedBackend{
		describe:  "dpdk net_af_packet, stack segments and checksums",
		peerTxOff: true,
		open: func(o options, iface string, _ afxdpsteer.Traffic) (packetio.Device, error) {
			name := fmt.Sprintf("net_af_packet%d,iface=%s", dpdkPorts.Add(1)-1, iface)
			opts := []dpdk.Option{dpdk.WithRxQueues(1)}
			if !hugePages() {
				opts = append(opts, dpdk.WithNoHuge(), dpdk.WithMemory(256))
			}
			return dpdk.Open(name, opts...)
		},
	}
}

// dpdkPorts numbers the virtual devices this process makes: one EAL
// serves them all, and each needs a name of its own.
var dpdkPorts atomic.Int64

// hugePages reports whether the machine has free huge pages for the EAL.
func hugePages() bool {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "HugePages_Free:" {
			return f[1] != "0"
		}
	}
	return false
}
