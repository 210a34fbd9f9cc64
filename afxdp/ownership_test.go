package afxdp_test

import (
	"testing"

	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/pool"
	"github.com/packetio/packetio/packetiotest"
)

// TestOwnership drives a million random frame moves, misuses among them
// (recycling a frame posted to the fill ring, freeing one in flight,
// transmitting a pooled one, the zero Desc), on one end of a veth pair fed
// by the other (a tenth under -race).
func TestOwnership(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			pair := netns.New(t)
			packetiotest.RunOwnership(t, opener(pair.A, m.opt, afxdp.WithQueues(1), afxdp.WithFrames(512)), 1_000_000, pool.Checked(),
				packetiotest.WithPeer(opener(pair.B, m.opt, afxdp.WithQueues(1), afxdp.WithFrames(512))))
		})
	}
}
