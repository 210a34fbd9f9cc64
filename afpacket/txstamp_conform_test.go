//go:build linux

package afpacket_test

import (
	"testing"

	"github.com/packetio/packetio/afpacket"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/packetiotest"
)

func TestConformanceTxTimestamps(t *testing.T) {
	pair := netns.New(t)
	t.Run("tx ring", func(t *testing.T) {
		packetiotest.RunTxTimestamps(t, opener(pair.A, afpacket.WithRxQueues(0), afpacket.WithFrames(256), afpacket.WithTxTimestamps()))
	})
	t.Run("sendmmsg", func(t *testing.T) {
		packetiotest.RunTxTimestamps(t, opener(pair.A, afpacket.WithRxQueues(0), afpacket.WithFrames(256), afpacket.WithMultiBuffer(), afpacket.WithTxTimestamps()))
	})
	t.Run("off", func(t *testing.T) {
		packetiotest.RunTxTimestamps(t, opener(pair.A, afpacket.WithRxQueues(0), afpacket.WithFrames(256)))
	})
}
