package afxdp_test

import (
	"os"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/packetiotest"
)

func faultOpener(mode afxdp.Option) func(string) (packetio.Device, error) {
	return func(ifname string) (packetio.Device, error) {
		d, err := afxdp.Open(ifname, afxdp.WithSteering(testFilter), afxdp.WithFrames(2048), mode)
		if err != nil {
			return nil, err
		}
		return d, nil
	}
}

func TestMain(m *testing.M) {
	packetiotest.FaultChildMain(faultOpener(afxdp.WithXDP(xdp.WithDriverMode())))
	os.Exit(m.Run())
}

// TestFaults runs the fault half of the contract in both attach modes. The
// busy case puts another process's XDP program on the interface first.
func TestFaults(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			packetiotest.RunFaults(t, func(t *testing.T) *packetiotest.FaultEnv {
				testenv.NeedBPF(t)
				e := packetiotest.VethEnv(t, faultOpener(m.opt))
				e.Occupy = e.OccupyXDP
				return &e.FaultEnv
			})
		})
	}
}
