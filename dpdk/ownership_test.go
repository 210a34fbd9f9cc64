//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"testing"

	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/pool"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/packetiotest"
)

// TestOwnership drives a million random frame moves, misuses among them,
// through a real DPDK driver (a tenth under -race): net_af_packet over a
// veth pair with a second port as the peer, and net_null, whose receive
// side invents packets into whatever Fill posted.
func TestOwnership(t *testing.T) {
	testenv.NeedRoot(t)
	t.Run("net_af_packet", func(t *testing.T) {
		p := netns.New(t)
		packetiotest.RunOwnership(t, vdevOpener(p.A, "net_af_packet", 40, small()...), 1_000_000, pool.Checked(),
			packetiotest.WithPeer(vdevOpener(p.B, "net_af_packet", 41, small()...)))
	})
	t.Run("net_null", func(t *testing.T) {
		packetiotest.RunOwnership(t, func(t *testing.T) packetiotest.Device {
			return openT(t, "net_null40", append(small(), WithRxQueues(1))...)
		}, 1_000_000, pool.Checked())
	})
}
