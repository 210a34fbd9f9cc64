package filter

import (
	"net/netip"
	"testing"

	"github.com/cilium/ebpf/rlimit"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/testframe"
)

// BenchmarkSteering runs the steering program of each filter on a 512-byte
// UDP frame it takes, in the kernel (BPF_PROG_TEST_RUN with a repeat count,
// timed by the kernel), and reports ns/frame: what the program alone costs,
// branch predictors and caches warm. The verdict is XDP_TX rather than a
// redirect, so no socket is needed; the redirect call is the same for
// every filter. afxdp/README.md ("What steering costs") sets these beside
// what the same filters cost a receive loop on a veth.
func BenchmarkSteering(b *testing.B) {
	testenv.NeedBPF(b)
	_ = rlimit.RemoveMemlock()
	dst := netip.MustParsePrefix("10.0.0.0/24") // testframe's 10.0.0.2
	frame := testframe.Spec{DPort: 9, Payload: make([]byte, 512-14-20-8)}.Build(b)
	// The interface's addresses for the zero filter: the frame's
	// destination (testframe.MACB), broadcast and one multicast group.
	own := func() ([][6]byte, error) {
		return [][6]byte{[6]byte(testframe.MACB), {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, {0x33, 0x33, 0, 0, 0, 1}}, nil
	}
	for _, tc := range []struct {
		name string
		f    packetio.SteeringFilter
	}{
		{"everything", packetio.SteeringFilter{Promiscuous: true}},
		{"own-macs", packetio.SteeringFilter{}},
		{"dst-ip", packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchDstIP(dst)}}},
		{"udp-port", packetio.SteeringFilter{Match: packetio.MatchDstPort(packetio.IPProtoUDP, 9)}},
		{"dst-ip+udp-port", packetio.SteeringFilter{Match: append([]packetio.Match{packetio.MatchDstIP(dst)}, packetio.MatchDstPort(packetio.IPProtoUDP, 9)...)}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			m, err := Steering(tc.f, own)
			if err != nil {
				b.Fatal(err)
			}
			prog, err := Program{Matches: []Match{m}, Verdict: VerdictTX}.Load(0)
			if err != nil {
				b.Fatal(err)
			}
			defer prog.Close()
			const repeat = 100_000
			var ns, runs float64
			for b.Loop() {
				ret, per, err := prog.Benchmark(frame, repeat, nil)
				if err != nil {
					b.Fatal(err)
				}
				if ret != actTX {
					b.Fatalf("%s: verdict %d on the frame it should take, want XDP_TX (%d)", tc.name, ret, actTX)
				}
				ns += float64(per.Nanoseconds()) * repeat
				runs += repeat
			}
			b.ReportMetric(ns/runs, "ns/frame")
		})
	}
}
