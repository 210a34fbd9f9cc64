//go:build dpdk && linux && amd64 && cgo

package backend

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/dpdk"
)

func init() {
	Register("dpdk", func(name string, c Config) (packetio.Device, error) {
		// A plain interface name means DPDK's AF_PACKET driver on it,
		// one queue pair per queue, under a name of its own (one EAL
		// serves every device of the process); a PCI address or a vdev
		// spec is passed as it is.
		if !strings.Contains(name, ",") && !strings.HasPrefix(name, "net_") && strings.Count(name, ":") < 2 {
			name = fmt.Sprintf("net_af_packet%d,iface=%s,qpairs=%d", vdevs.Add(1)-1, name, max(c.TxQueues, c.RxQueues, 1))
		}
		opts := []dpdk.Option{dpdk.WithTxQueues(max(c.TxQueues, 1)), dpdk.WithRxQueues(c.RxQueues)}
		if c.Frames > 0 {
			opts = append(opts, dpdk.WithFrames(c.Frames))
		}
		if c.FrameSize > 0 {
			opts = append(opts, dpdk.WithFrameSize(c.FrameSize))
		}
		if len(c.Steering.Match) > 0 || c.Steering.Promiscuous {
			opts = append(opts, dpdk.WithSteering(c.Steering))
		}
		if !hugePages() {
			opts = append(opts, dpdk.WithNoHuge())
		}
		return dpdk.Open(name, opts...)
	})
}

// vdevs numbers the AF_PACKET virtual devices this process makes.
var vdevs atomic.Int64

// hugePages reports whether the machine has free huge pages for the EAL.
func hugePages() bool {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "HugePages_Free:" {
			return f[1] != "0"
		}
	}
	return false
}

func init() {
	traitsOf["dpdk"] = func(d packetio.Device, _ Config) Traits {
		t := Traits{Mode: "n/a", NeedWakeup: "n/a", BusyPoll: "always (a polling driver)", Stamps: "n/a"}
		if x, ok := d.(*dpdk.Device); ok {
			in := x.Info()
			t.Mode = "poll-mode driver " + in.Driver
			if in.TxBudget > 0 { // net_af_xdp
				t.Kick = fmt.Sprintf("up to %d frames a kick", in.TxBudget)
				if in.TxBudgetKept != "" {
					t.Kick += " (" + in.TxBudgetKept + ")"
				}
			}
		}
		return t
	}
}
