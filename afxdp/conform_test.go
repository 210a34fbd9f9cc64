package afxdp_test

import (
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/packetiotest"
)

// testFilter takes only the conformance suite's frames, so nothing the
// kernel sends by itself is counted and everything else stays with it.
var testFilter = packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchEtherType(packetiotest.EtherType)}}

// opener opens afxdp devices on one end of a veth pair, inside its
// namespace.
func opener(h *netns.Host, opts ...afxdp.Option) packetiotest.OpenFunc {
	return func(t *testing.T) packetiotest.Device {
		t.Helper()
		testenv.NeedBPF(t)
		var d *afxdp.Device
		if err := h.Do(func() (err error) {
			d, err = afxdp.Open(h.Link, append([]afxdp.Option{afxdp.WithSteering(testFilter), afxdp.WithFrames(2048)}, opts...)...)
			return err
		}); err != nil {
			t.Fatalf("afxdp.Open(%s): %v", h.Link, err)
		}
		return d
	}
}

var modes = []struct {
	name string
	opt  afxdp.Option
}{
	{"native", afxdp.WithXDP(xdp.WithDriverMode())},
	{"generic", afxdp.WithXDP(xdp.WithGenericMode())},
}

func TestConformance(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			pair := netns.New(t)
			packetiotest.Run(t, opener(pair.A, m.opt), packetiotest.WithPeer(opener(pair.B, m.opt)))
		})
	}
}

// TestConformanceColours: the contract holds with cache colours (native
// mode, both ends coloured).
func TestConformanceColours(t *testing.T) {
	pair := netns.New(t)
	colours := afxdp.WithCacheColours()
	packetiotest.Run(t, opener(pair.A, colours), packetiotest.WithPeer(opener(pair.B, colours)))
}

func TestConformanceMultiQueue(t *testing.T) {
	pair := netns.New(t, netns.WithQueues(2))
	packetiotest.Run(t, opener(pair.A, afxdp.WithXDP(xdp.WithDriverMode())), packetiotest.WithPeer(opener(pair.B)))
}

func TestConformanceSteering(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			pair := netns.New(t)
			packetiotest.RunSteering(t, func(t *testing.T, f packetio.SteeringFilter) (packetiotest.Device, error) {
				testenv.NeedBPF(t)
				var d *afxdp.Device
				err := pair.A.Do(func() (err error) {
					d, err = afxdp.Open(pair.A.Link, afxdp.WithSteering(f), afxdp.WithFrames(1024), m.opt)
					return err
				})
				if err != nil {
					return nil, err
				}
				return d, nil
			})
		})
	}
}

func TestConformanceTimestamps(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			pair := netns.New(t)
			packetiotest.RunTimestamps(t, opener(pair.A, m.opt, afxdp.WithTimestamps()), func(t *testing.T, d packetiotest.Device) int {
				peer := opener(pair.B, m.opt)(t)
				defer peer.Close()
				return sendTestFrames(t, peer.TxQueue(0), 16)
			})
		})
	}
}

// sendTestFrames sends n 64-byte broadcast frames of the suite's EtherType.
func sendTestFrames(t *testing.T, tx packetio.TxQueue, n int) int {
	t.Helper()
	sent := 0
	for try := 0; try < 100 && sent < n; try++ {
		k, err := tx.SendFunc(n-sent, func(i int, f []byte) int {
			clear(f[:64])
			copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 0x09, 0x88, 0xb5})
			f[14] = byte(sent + i)
			return 64
		})
		if err != nil {
			t.Fatalf("SendFunc: %v", err)
		}
		sent += k
		tx.Complete(1 << 20)
	}
	return sent
}

func TestConformanceMultiBuffer(t *testing.T) {
	pair := netns.New(t, netns.WithMTU(9000))
	packetiotest.Run(t, opener(pair.A, afxdp.WithMultiBuffer()), packetiotest.WithPeer(opener(pair.B, afxdp.WithMultiBuffer())))
}

func TestConformanceTxChecksumOffload(t *testing.T) {
	pair := netns.New(t)
	packetiotest.Run(t, opener(pair.A, afxdp.WithTxChecksumOffload()), packetiotest.WithPeer(opener(pair.B)))
}
