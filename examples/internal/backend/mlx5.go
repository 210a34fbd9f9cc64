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
