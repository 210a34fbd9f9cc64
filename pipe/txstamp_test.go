package pipe_test

import (
	"testing"

	"github.com/packetio/packetio/packetiotest"
)

// A pipe has no clock: it says so and stamps nothing.
func TestConformTxTimestamps(t *testing.T) {
	open, _ := conformPair()
	packetiotest.RunTxTimestamps(t, open)
}
