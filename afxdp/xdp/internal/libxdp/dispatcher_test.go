package libxdp

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/packetio/packetio/internal/testenv"
)

// frame is a minimal Ethernet frame for BPF_PROG_TEST_RUN.
var frame = make([]byte, 64)

// TestDispatcherRuns loads generated dispatchers without components and
// runs them: every enabled stub returns 31, so a slot whose chain bitmap
// has bit 31 lets the chain go on to XDP_PASS, and one without it ends the
// chain with 31. The first disabled slot ends the chain with XDP_PASS.
func TestDispatcherRuns(t *testing.T) {
	testenv.NeedBPF(t)
	const goOn = 1 << dispatcherRetval
	for _, tc := range []struct {
		name string
		cfg  config
		want uint32
	}{
		{"none enabled", config{}, xdpPass},
		{"one, chain on", config{NumProgs: 1, ChainActions: [10]uint32{goOn}}, xdpPass},
		{"one, chain off", config{NumProgs: 1}, dispatcherRetval},
		{"three, third stops", config{NumProgs: 3, ChainActions: [10]uint32{goOn, goOn, 1 << xdpPass}}, dispatcherRetval},
		{"three, fourth would stop", config{NumProgs: 3, ChainActions: [10]uint32{goOn, goOn, goOn}}, xdpPass},
		{"ten", config{NumProgs: 10, ChainActions: [10]uint32{goOn, goOn, goOn, goOn, goOn, goOn, goOn, goOn, goOn, goOn}}, xdpPass},
		{"ten, last stops", config{NumProgs: 10, ChainActions: [10]uint32{goOn, goOn, goOn, goOn, goOn, goOn, goOn, goOn, goOn}}, dispatcherRetval},
		{"frags", config{NumProgs: 1, Frags: true, ChainActions: [10]uint32{goOn}, ProgFlags: [10]uint32{fragsFlag}}, xdpPass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := loadDispatcher(&tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			got, err := p.Run(&ebpf.RunOptions{Data: frame})
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("verdict %d, want %d", got, tc.want)
			}
			ver, ok, err := IsDispatcher(p)
			if err != nil || !ok || ver != dispatcherVersion {
				t.Errorf("IsDispatcher = %d, %v, %v; want 2, true, nil", ver, ok, err)
			}
		})
	}
}
