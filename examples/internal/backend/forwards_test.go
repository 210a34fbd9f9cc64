package backend

import (
	"strings"
	"testing"

	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// TestForwards: Config.Forwards opens afxdp with cache colours where the
// link lets it, and the mode on the first line says so; on a link whose
// MTU carries longer packets than a coloured frame holds it opens with
// plain frames, and the mode says nothing of colours. Without Forwards,
// or with MultiBuffer, no colours.
func TestForwards(t *testing.T) {
	testenv.NeedBPF(t)
	const said = "frames in 32 cache colours"
	for _, tc := range []struct {
		name    string
		mtu     int
		c       Config
		colours int
	}{
		{"forwards", 1500, Config{TxQueues: 1, RxQueues: 1, Forwards: true}, 32},
		{"forwards, MTU 1900", 1900, Config{TxQueues: 1, RxQueues: 1, Forwards: true}, 0},
		{"forwards, multi-buffer", 1500, Config{TxQueues: 1, RxQueues: 1, Forwards: true, MultiBuffer: true}, 0},
		{"receives", 1500, Config{TxQueues: 1, RxQueues: 1}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := netns.New(t, netns.WithMTU(tc.mtu))
			var d *afxdp.Device
			err := p.A.Do(func() error {
				dev, err := Open("afxdp", p.A.Link, tc.c)
				if err == nil {
					d = dev.(*afxdp.Device)
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			in := d.Info()
			mode := XDPTraits(in).Mode
			if in.Colours != tc.colours || strings.Contains(mode, said) != (tc.colours > 0) {
				t.Errorf("Info().Colours %d, mode %q; want %d colours", in.Colours, mode, tc.colours)
			}
		})
	}
}
