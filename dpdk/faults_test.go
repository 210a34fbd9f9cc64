//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"os"
	"testing"

	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/packetiotest"
)

// TestMain lets this test binary serve as the child of RunFaults's kill -9
// case: PACKETIO_FAULT_CHILD names the interface, the vdev driver comes from
// PACKETIO_DPDK_FAULT_DRIVER.
func TestMain(m *testing.M) {
	packetiotest.FaultChildMain(func(ifname string) (packetiotest.Device, error) {
		drv := os.Getenv(faultDriverEnv)
		return Open(drv+"0,iface="+ifname, append(append([]Option(nil), ealOpts...), faultOpts(drv)...)...)
	})
	os.Exit(m.Run())
}

// faultDriverEnv tells the kill -9 child which vdev to open.
const faultDriverEnv = "PACKETIO_DPDK_FAULT_DRIVER"

func faultOpts(driver string) []Option {
	if driver == "net_af_xdp" {
		return afxdpOpts()
	}
	return small()
}

// runFaults runs the fault half of the contract on driver over a veth.
func runFaults(t *testing.T, driver string, opts ...packetiotest.FaultOption) {
	testenv.NeedRoot(t)
	t.Setenv(faultDriverEnv, driver)
	packetiotest.RunFaults(t, func(t *testing.T) *packetiotest.FaultEnv {
		e := packetiotest.VethEnv(t, func(ifname string) (packetiotest.Device, error) {
			d, err := Open(driver+"0,iface="+ifname, append(append([]Option(nil), ealOpts...), faultOpts(driver)...)...)
			if err != nil {
				return nil, err
			}
			return d, nil
		})
		if driver == "net_af_xdp" {
			e.Occupy = e.OccupyXDP
		}
		return &e.FaultEnv
	}, opts...)
}

// TestFaultsAFPacket: net_af_packet shares its interface with every other
// packet socket, so nothing can hold it against Open.
func TestFaultsAFPacket(t *testing.T) {
	runFaults(t, "net_af_packet", packetiotest.WithoutFault("busy", "net_af_packet binds a packet socket, which any number of sockets can share: nothing foreign can hold the interface"))
}

// TestFaultsAFXDP runs the same cases on net_af_xdp.
func TestFaultsAFXDP(t *testing.T) {
	testenv.NeedBPF(t)
	runFaults(t, "net_af_xdp", packetiotest.WithoutFault("kill-9",
		"DPDK 22.11's net_af_xdp attaches its XDP program through netlink (libxdp, with or without a dispatcher), "+
			"and the kernel keeps a netlink-attached program after its process dies: only a live Close removes it"))
}
