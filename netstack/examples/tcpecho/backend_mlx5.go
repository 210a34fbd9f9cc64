//go:build linux && cgo && mlx5 && (amd64 || arm64)

package main

import (
	"net/netip"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/mlx5"
	"github.com/packetio/packetio/netstack/afxdpsteer"
)

// With -tags mlx5, -backend mlx5 opens a ConnectX port through Direct
// Verbs with one flow rule: IP packets to the stack's address, on the
// interface's MAC. The kernel keeps everything else, ARP included, and
// an ARP rule cannot be told from the kernel's (a flow rule has no
// condition on the ARP target): so the stack's neighbours are pinned with
// -neighbor, and its peers need a static entry for the stack (ip neigh
// replace STACK-IP lladdr IF-MAC dev IF). It needs a ConnectX card, which
// a veth pair is not: no self-test.
func init() {
	tagged["mlx5"] = taggedBackend{
		describe:     "mlx5 Direct Verbs, stack segments and checksums",
		noSelfTest:   "mlx5 opens a ConnectX port, and a veth pair is not one",
		pinNeighbors: "the ARP and neighbour discovery replies to the stack reach the kernel, not the stack (its flow rule takes IP to its address only)",
		open: func(o options, iface string, need afxdpsteer.Traffic) (packetio.Device, error) {
			var m []packetio.Match
			for _, a := range need.Addrs {
				m = append(m, packetio.MatchDstIP(netip.PrefixFrom(a, a.BitLen())))
			}
			return mlx5.Open(iface, mlx5.WithRxQueues(1), mlx5.WithTxQueues(1),
				mlx5.WithSteering(packetio.SteeringFilter{Match: m}))
		},
	}
}
