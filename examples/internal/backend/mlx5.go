//go:build linux && cgo && mlx5 && (amd64 || arm64)

package backend

import (
	"github.com/packetio/packetio"
	"github.com/packetio/packetio/mlx5"
)

func init() {
	Register("mlx5", func(name string, c Config) (packetio.Device, error) {
		var opts []mlx5.Option
		if c.TxQueues > 0 {
			opts = append(opts, mlx5.WithTxQueues(c.TxQueues))
		}
		if c.RxQueues > 0 {
			opts = append(opts, mlx5.WithRxQueues(c.RxQueues))
		}
		if c.Frames > 0 {
			opts = append(opts, mlx5.WithFrames(c.Frames))
		}
		if c.FrameSize > 0 {
			opts = append(opts, mlx5.WithFrameSize(c.FrameSize))
		}
		if len(c.Steering.Match) > 0 || c.Steering.Promiscuous {
			opts = append(opts, mlx5.WithSteering(c.Steering))
		}
		return mlx5.Open(name, opts...)
	})
}

func init() {
	traitsOf["mlx5"] = func(d packetio.Device, _ Config) Traits {
		t := Traits{Mode: "n/a", NeedWakeup: "n/a", BusyPoll: "always (a polling driver)", Stamps: "n/a"}
		if x, ok := d.(*mlx5.Device); ok {
			in := x.Info()
			t.Mode = "user-space verbs, tx " + in.TxMode
			t.Stamps = "off"
			if in.Clock && d.Capabilities().RxTimestamps {
				t.Stamps = "on (the NIC's clock)"
			}
		}
		return t
	}
}
