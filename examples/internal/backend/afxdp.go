//go:build linux

package backend

import (
	"errors"
	"fmt"
	"strings"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/afxdp/xdp"
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
		if c.MultiBuffer {
			opts = append(opts, afxdp.WithMultiBuffer())
		}
		if c.Forwards && c.RxQueues > 0 && !c.MultiBuffer && c.FrameSize == 0 {
			d, err := afxdp.Open(name, append(opts, afxdp.WithCacheColours())...)
			if !errors.Is(err, packetio.ErrUnsupported) {
				return d, err
			}
			// A link whose MTU carries packets longer than a coloured
			// frame holds: plain frames, which the first line shows.
		}
		return afxdp.Open(name, opts...)
	})
}

func init() {
	traitsOf["afxdp"] = func(d packetio.Device, _ Config) Traits {
		x, ok := d.(*afxdp.Device)
		if !ok {
			return na
		}
		return XDPTraits(x.Info())
	}
}

// XDPTraits reads an AF_XDP datapath's traits from its Info, as the kernel
// granted them: the attach mode and zero-copy read back, need-wakeup as
// bound, busy-poll as the socket reports it, stamps as the program does.
func XDPTraits(in xdp.Info) Traits {
	copyMode := "copy mode"
	if in.ZeroCopy {
		copyMode = "zero-copy mode"
	}
	var mode string
	switch in.Mode {
	case "native", "generic":
		mode = in.Mode + " XDP " + copyMode
	case "", "none":
		mode = "no XDP program (transmit only), " + copyMode
	default:
		mode = in.Mode + " XDP " + copyMode
	}
	stamps := "on"
	if in.Timestamps == "" || in.Timestamps == "off" {
		stamps = "off"
	}
	busy := in.BusyPoll
	if busy == "" {
		busy = "off"
	}
	if in.Colours > 0 {
		mode += fmt.Sprintf(", frames in %d cache colours", in.Colours)
	}
	t := Traits{Mode: mode, NeedWakeup: onOff(in.NeedWakeup), BusyPoll: busy, Stamps: stamps}
	if in.TxBudget > 0 { // copy-mode transmit
		t.Kick = fmt.Sprintf("up to %d frames a kick", in.TxBudget)
		for _, d := range in.Decisions {
			if strings.HasPrefix(d, "transmit budget kept") {
				t.Kick += " (" + d + ")"
			}
		}
	}
	return t
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// XDPLine is the first line of a program on the AF_XDP datapath itself
// (afxdp/xdp): as Line, from the fleet's Info as the kernel granted it.
func XDPLine(program string, in xdp.Info, batch int, cpus []int, feed string) string {
	t := XDPTraits(in)
	mode := t.Mode
	if t.Kick != "" {
		mode += ", " + t.Kick
	}
	s := fmt.Sprintf("%s: afxdp/xdp on %s, %s, %s, need-wakeup %s, busy-poll %s, stamps %s, batch %d, %s",
		program, in.Interface, plural(in.Queues, "queue"), mode, t.NeedWakeup, t.BusyPoll, t.Stamps, batch, CPUString(cpus))
	if feed != "" {
		s += "; " + feed
	}
	return s
}
