//go:build linux

package backend

import (
	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
)

func init() {
	Register("afxdp", func(name string, c Config) (packetio.Device, error) {
		// AF_XDP pairs one transmit and one receive queue per socket.
		opts := []afxdp.Option{afxdp.WithQueues(max(c.TxQueues, c.RxQueues, 1))}
		if c.RxQueues == 0 {
			opts = append(opts, afxdp.WithTransmitOnly())
		} else {
			// The zero filter takes what is addressed to the
			// interface: its MAC, broadcast and joined multicast.
			opts = append(opts, afxdp.WithSteering(c.Steering))
		}
		if c.Frames > 0 {
			opts = append(opts, afxdp.WithFrames(c.Frames))
		}
		if c.FrameSize > 0 {
			opts = append(opts, afxdp.WithFrameSize(c.FrameSize))
		}
		if c.Stamps {
			opts = append(opts, afxdp.WithTimestamps())
		}
		if c.BusyPoll {
			opts = append(opts, afxdp.WithBusyPoll(BusyPollUsecs, BusyPollBudget))
		}
		return afxdp.Open(name, opts...)
	})
}
