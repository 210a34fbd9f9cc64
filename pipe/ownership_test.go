package pipe_test

import (
	"testing"

	"github.com/packetio/packetio/internal/pool"
	"github.com/packetio/packetio/packetiotest"
)

func TestOwnership(t *testing.T) {
	open, peer := conformPair()
	packetiotest.RunOwnership(t, open, 1_000_000, pool.Checked(), packetiotest.WithPeer(peer))
}
