//go:build linux

package afpacket

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
)

// TestReadyNotifier follows the packetio.ReadyNotifier protocol by hand on
// both ring versions: the ready descriptor polls readable once a frame is in,
// Arm counts it, and after Close the closed descriptor fires and ReadyFDs
// refuses. A transmit-only device does not claim ReadyFD.
func TestReadyNotifier(t *testing.T) {
	pair := netns.New(t)
	if openIn(t, pair.A, WithRxQueues(0)).Capabilities().ReadyFD {
		t.Error("a transmit-only device claims ReadyFD")
	}
	src := openIn(t, pair.A, WithRxQueues(0))
	for _, tc := range []struct {
		name string
		opts []Option
	}{{"v3", nil}, {"v2", []Option{WithLowLatency()}}} {
		t.Run(tc.name, func(t *testing.T) {
			dev := openIn(t, pair.B, append([]Option{WithTxQueues(0)}, tc.opts...)...)
			if !dev.Capabilities().ReadyFD {
				t.Fatal("ReadyFD false")
			}
			q := dev.RxQueue(0)
			rn, ok := q.(packetio.ReadyNotifier)
			if !ok {
				t.Fatal("RxQueue does not implement ReadyNotifier")
			}
			ready, closed, err := rn.ReadyFDs()
			if err != nil {
				t.Fatal(err)
			}
			sendFrames(t, src.TxQueue(0), [][]byte{testFrame(t, pair.B.MAC, 1, 64)})
			pfd := []unix.PollFd{{Fd: int32(ready), Events: unix.POLLIN}, {Fd: int32(closed), Events: unix.POLLIN}}
			for rn.Arm() == 0 {
				if _, err := unix.Poll(pfd, 5000); err != nil && err != unix.EINTR {
					t.Fatal(err)
				}
				if pfd[0].Revents == 0 && pfd[1].Revents == 0 {
					t.Fatal("nothing polled readable within 5 s")
				}
				if pfd[1].Revents != 0 {
					t.Fatal("closed fired on an open queue")
				}
			}
			for len(q.Receive(64)) > 0 {
			}
			q.Close()
			pfd[1].Revents = 0
			if n, _ := unix.Poll(pfd[1:], 0); n != 1 {
				t.Error("closed does not poll readable after Close")
			}
			if _, _, err := rn.ReadyFDs(); !errors.Is(err, packetio.ErrClosed) {
				t.Errorf("ReadyFDs after Close: %v, want ErrClosed", err)
			}
			if rn.Arm() != 0 {
				t.Error("Arm after Close is not 0")
			}
		})
	}
}
