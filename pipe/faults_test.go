package pipe_test

import (
	"testing"

	"github.com/packetio/packetio/packetiotest"
	"github.com/packetio/packetio/pipe"
)

// TestFaults runs the fault cases that apply to memory inside one process:
// closing one queue wakes its poller and leaves the others alone. The rest
// need a link, an interface or host state, which a pipe has none of, and
// bad-frame needs a link shorter than a frame (a pipe carries whole frames).
func TestFaults(t *testing.T) {
	packetiotest.RunFaults(t, func(t *testing.T) *packetiotest.FaultEnv {
		return &packetiotest.FaultEnv{Open: func() (packetiotest.Device, error) {
			a, b, err := pipe.New(pipe.WithQueues(2))
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { b.Close() })
			return a, nil
		}}
	},
		packetiotest.WithoutFault("device-gone", "a pipe is memory inside the process: there is no interface to lose"),
		packetiotest.WithoutFault("link-down-up", "a pipe has no link to take down"),
		packetiotest.WithoutFault("busy", "nothing outside the process can hold a pipe"),
		packetiotest.WithoutFault("kill-9", "a pipe changes nothing on the host, so a killed process leaves nothing behind"),
	)
}
