//go:build linux

package afpacket_test

import (
	"testing"

	"github.com/packetio/packetio"

	"github.com/packetio/packetio/afpacket"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/packetiotest"
)

// opener opens afpacket devices on one end of a veth pair, inside its
// namespace.
func opener(h *netns.Host, opts ...afpacket.Option) packetiotest.OpenFunc {
	return func(t *testing.T) packetiotest.Device {
		var d *afpacket.Device
		if err := h.Do(func() error {
			var err error
			d, err = afpacket.Open(h.Link, opts...)
			return err
		}); err != nil {
			t.Fatalf("afpacket.Open(%s): %v", h.Link, err)
		}
		return d
	}
}

func TestConformance(t *testing.T) {
	pair := netns.New(t)
	packetiotest.Run(t, opener(pair.A, afpacket.WithFrames(1024)),
		packetiotest.WithPeer(opener(pair.B, afpacket.WithFrames(1024))))
}

func TestConformanceMultiQueue(t *testing.T) {
	pair := netns.New(t)
	packetiotest.Run(t, opener(pair.A, afpacket.WithQueues(2), afpacket.WithFrames(1024)),
		packetiotest.WithPeer(opener(pair.B, afpacket.WithFrames(1024))))
}

func TestConformanceGSO(t *testing.T) {
	pair := netns.New(t)
	packetiotest.Run(t, opener(pair.A, afpacket.WithGSO()),
		packetiotest.WithPeer(opener(pair.B, afpacket.WithGSO())))
}

func TestConformanceMultiBuffer(t *testing.T) {
	pair := netns.New(t)
	opts := []afpacket.Option{afpacket.WithMultiBuffer(), afpacket.WithGSO(), afpacket.WithFrameSize(1024), afpacket.WithFrames(1024)}
	packetiotest.Run(t, opener(pair.A, opts...), packetiotest.WithPeer(opener(pair.B, opts...)))
}

func TestConformanceTimestamps(t *testing.T) {
	pair := netns.New(t)
	packetiotest.RunTimestamps(t, opener(pair.A, afpacket.WithTxQueues(1), afpacket.WithRxQueues(1), afpacket.WithFrames(256)),
		sendStamped(pair))
}

// The TPACKET_V2 ring of WithLowLatency passes the same suites.

func TestConformanceLowLatency(t *testing.T) {
	pair := netns.New(t)
	packetiotest.Run(t, opener(pair.A, afpacket.WithLowLatency(), afpacket.WithFrames(1024)),
		packetiotest.WithPeer(opener(pair.B, afpacket.WithLowLatency(), afpacket.WithFrames(1024))))
}

func TestConformanceLowLatencyMultiQueue(t *testing.T) {
	pair := netns.New(t)
	packetiotest.Run(t, opener(pair.A, afpacket.WithLowLatency(), afpacket.WithQueues(2), afpacket.WithFrames(1024)),
		packetiotest.WithPeer(opener(pair.B, afpacket.WithFrames(1024))))
}

func TestConformanceLowLatencyGSO(t *testing.T) {
	pair := netns.New(t)
	packetiotest.Run(t, opener(pair.A, afpacket.WithLowLatency(), afpacket.WithGSO()),
		packetiotest.WithPeer(opener(pair.B, afpacket.WithLowLatency(), afpacket.WithGSO())))
}

func TestConformanceLowLatencyMultiBuffer(t *testing.T) {
	pair := netns.New(t)
	opts := []afpacket.Option{afpacket.WithLowLatency(), afpacket.WithMultiBuffer(), afpacket.WithGSO(), afpacket.WithFrameSize(1024), afpacket.WithFrames(1024)}
	packetiotest.Run(t, opener(pair.A, opts...), packetiotest.WithPeer(opener(pair.B, opts...)))
}

func TestConformanceLowLatencyTimestamps(t *testing.T) {
	pair := netns.New(t)
	packetiotest.RunTimestamps(t, opener(pair.A, afpacket.WithLowLatency(), afpacket.WithTxQueues(1), afpacket.WithRxQueues(1), afpacket.WithFrames(256)),
		sendStamped(pair))
}

// sendStamped sends 8 broadcast frames from a transmit-only device on the
// pair's B end, for packetiotest.RunTimestamps.
func sendStamped(pair *netns.Pair) func(t *testing.T, d packetiotest.Device) int {
	return func(t *testing.T, d packetiotest.Device) int {
		peer := opener(pair.B, afpacket.WithRxQueues(0), afpacket.WithFrames(64))(t)
		defer peer.Close()
		tx := peer.TxQueue(0)
		sent := 0
		for try := 0; try < 100 && sent < 8; try++ {
			n, err := tx.SendFunc(8-sent, func(i int, f []byte) int {
				if len(f) < 64 {
					return 0
				}
				for j := range 64 {
					f[j] = 0
				}
				copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 0x09, 0x88, 0xb5})
				f[14] = byte(sent + i)
				return 64
			})
			if err != nil {
				t.Fatalf("SendFunc: %v", err)
			}
			sent += n
			tx.Complete(1 << 20)
		}
		return sent
	}
}

// The steering part of the suite, with the one difference it reads from
// Capabilities: the kernel keeps its copy of every frame
// (SteeringCopies).
func TestConformanceSteering(t *testing.T) {
	pair := netns.New(t)
	packetiotest.RunSteering(t, func(t *testing.T, f packetio.SteeringFilter) (packetiotest.Device, error) {
		var d *afpacket.Device
		err := pair.A.Do(func() (err error) {
			d, err = afpacket.Open(pair.A.Link, afpacket.WithSteering(f), afpacket.WithFrames(256))
			return err
		})
		if err != nil {
			return nil, err
		}
		if !d.Capabilities().SteeringCopies {
			t.Errorf("opened with WithSteering(%v), SteeringCopies is false", f)
		}
		return d, nil
	})
}
