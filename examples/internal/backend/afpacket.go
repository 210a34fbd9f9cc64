//go:build linux

package backend

import (
	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afpacket"
)

func init() {
	Register("afpacket", func(name string, c Config) (packetio.Device, error) {
		if len(c.Steering.Match) > 0 || c.Steering.Promiscuous {
			return nil, errNoSteering("afpacket")
		}
		var opts []afpacket.Option
		if c.TxQueues > 0 {
			opts = append(opts, afpacket.WithTxQueues(c.TxQueues))
		}
		if c.RxQueues > 0 {
			opts = append(opts, afpacket.WithRxQueues(c.RxQueues))
		}
		if c.Frames > 0 {
			opts = append(opts, afpacket.WithFrames(c.Frames))
		}
		if c.FrameSize > 0 {
			opts = append(opts, afpacket.WithFrameSize(c.FrameSize))
		}
		if c.LowLatency {
			opts = append(opts, afpacket.WithLowLatency())
		}
		if c.MultiBuffer {
			opts = append(opts, afpacket.WithMultiBuffer())
		}
		return afpacket.Open(name, opts...)
	})
}

func init() {
	traitsOf["afpacket"] = func(d packetio.Device, c Config) Traits {
		mode := "kernel copy (TPACKET_V3 receive rings)"
		switch {
		case c.RxQueues == 0:
			mode = "kernel copy (AF_PACKET transmit, qdisc bypass)"
		case c.LowLatency:
			mode = "kernel copy (TPACKET_V2 receive rings, woken per packet)"
		}
		stamps := "n/a"
		if c.RxQueues > 0 && d.Capabilities().RxTimestamps {
			stamps = "on (the kernel's, always)"
		}
		return Traits{Mode: mode, NeedWakeup: "n/a", BusyPoll: "n/a", Stamps: stamps}
	}
}
