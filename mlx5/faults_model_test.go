package mlx5

import (
	"testing"

	"github.com/packetio/packetio/mlx5/internal/mockdev"
	"github.com/packetio/packetio/packetiotest"
)

// TestModelFaults runs the fault cases on the model card, with its second
// port as the peer. The model has no interface, link or host state of its
// own, so the cases that break those run only on hardware.
func TestModelFaults(t *testing.T) {
	packetiotest.RunFaults(t, func(t *testing.T) *packetiotest.FaultEnv {
		a, b, err := mockdev.Pair(mockdev.Config{RxQueues: 2, TxQueues: 2}, mockdev.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close(); b.Close() })
		// The cases that run here open the device once; the pair is
		// the case's own.
		return &packetiotest.FaultEnv{
			Open: func() (packetiotest.Device, error) { return a, nil },
			Peer: packetiotest.DevicePeer(b),
		}
	},
		packetiotest.WithoutFault("device-gone", "the model card cannot be unplugged; on a ConnectX a lost device flushes its queues with error completions, which mockdev's TestCardFailureSurfaces drives to ErrQueueFailed"),
		packetiotest.WithoutFault("link-down-up", "the model card has no link state"),
		packetiotest.WithoutFault("busy", "nothing outside the process can hold the model card"),
		packetiotest.WithoutFault("kill-9", "the model card changes nothing on the host"),
	)
}
