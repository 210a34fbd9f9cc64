//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"fmt"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/packetiotest"
)

// openIn opens a vdev over h's interface from inside h's namespace, where
// the driver's socket must live.
func openIn(t *testing.T, h *netns.Host, spec string, opts ...Option) (*Device, error) {
	t.Helper()
	testenv.NeedRoot(t)
	var d *Device
	err := h.Do(func() error {
		var err error
		d, err = Open(spec, append(append([]Option(nil), ealOpts...), opts...)...)
		return err
	})
	return d, err
}

func vdevOpener(h *netns.Host, driver string, index int, opts ...Option) packetiotest.OpenFunc {
	return func(t *testing.T) packetiotest.Device {
		t.Helper()
		d, err := openIn(t, h, fmt.Sprintf("%s%d,iface=%s", driver, index, h.Link), opts...)
		if err != nil {
			t.Fatalf("open %s on %s: %v", driver, h.Link, err)
		}
		return d
	}
}

// TestConformAFPacket runs the contract on net_af_packet over a veth pair,
// with a second net_af_packet port on the far end (in its own namespace) as
// the peer: frames cross the veth and arrive byte for byte.
func TestConformAFPacket(t *testing.T) {
	testenv.NeedRoot(t)
	p := netns.New(t)
	packetiotest.Run(t, vdevOpener(p.A, "net_af_packet", 0, small()...),
		packetiotest.WithPeer(vdevOpener(p.B, "net_af_packet", 1, small()...)))
}

// TestConformNull runs the bookkeeping half of the contract on net_null,
// which has no link: what it sends vanishes and what it receives it invents,
// so the traffic checks do not apply there (they run on net_af_packet).
func TestConformNull(t *testing.T) {
	packetiotest.Run(t, func(t *testing.T) packetiotest.Device {
		testenv.NeedRoot(t)
		d, err := Open("net_null0", append(append([]Option(nil), ealOpts...), append(small(), WithRxQueues(1))...)...)
		if err != nil {
			t.Fatalf("open net_null0: %v", err)
		}
		return d
	}, packetiotest.WithoutLink("net_null"))
}

// TestConformSteeringNull: net_null has no flow engine, so promiscuous is
// accepted and every filter with a match is refused.
func TestConformSteeringNull(t *testing.T) {
	packetiotest.RunSteering(t, func(t *testing.T, f packetio.SteeringFilter) (packetiotest.Device, error) {
		testenv.NeedRoot(t)
		d, err := Open("net_null0", append(append([]Option(nil), ealOpts...), append(small(), WithSteering(f))...)...)
		if err != nil {
			return nil, err
		}
		return d, nil
	})
}

// TestConformSteeringAFPacket: the same refusals on a port that shares its
// interface with the kernel.
func TestConformSteeringAFPacket(t *testing.T) {
	testenv.NeedRoot(t)
	p := netns.New(t)
	packetiotest.RunSteering(t, func(t *testing.T, f packetio.SteeringFilter) (packetiotest.Device, error) {
		d, err := openIn(t, p.A, "net_af_packet0,iface="+p.A.Link, append(small(), WithSteering(f))...)
		if err != nil {
			return nil, err
		}
		return d, nil
	})
}
