//go:build dpdk && linux && amd64 && cgo

package backend

import (
	"strings"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// TestLineDPDKKick: on net_af_xdp the first line says what one transmit
// kick sends, read back from the port, when the example transmits, and
// leaves it out when it only receives.
func TestLineDPDKKick(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t)
	spec := "net_af_xdp0,iface=" + p.A.Link
	c := Config{TxQueues: 1, RxQueues: 1}
	var d packetio.Device
	if err := p.A.Do(func() (err error) { d, err = Open("dpdk", spec, c); return err }); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, tc := range []struct {
		rx, tx bool
		kick   bool
	}{{true, true, true}, {false, true, true}, {true, false, false}} {
		l := Line{Program: "example", Backend: "dpdk", Iface: spec, Dev: d, Config: c, Rx: tc.rx, Tx: tc.tx, Batch: 64}
		s := l.String()
		if !strings.Contains(s, "poll-mode driver net_af_xdp") || strings.Contains(s, "frames a kick") != tc.kick {
			t.Errorf("rx %v tx %v: %q; want the driver, and the kick said: %v", tc.rx, tc.tx, s, tc.kick)
		}
		if tc.kick && !strings.Contains(s, "net_af_xdp, up to 1024 frames a kick,") {
			t.Errorf("rx %v tx %v: %q; want up to 1024 frames a kick (the default ring)", tc.rx, tc.tx, s)
		}
	}
}
