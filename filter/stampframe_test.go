package filter

import (
	"bytes"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/testframe"
)

// TestStampInFrameNoSocket runs a StampInFrame program (BPF_PROG_TEST_RUN)
// on a frame it takes whose queue has no socket: it goes to the kernel
// (XDP_PASS) as it came, with no stamp grown in front, which the kernel
// would read as the start of the frame. A frame it does not take passes
// as it came too. (afxdp/xdp's TestStampInFrame receives stamped frames
// through a socket.)
func TestStampInFrameNoSocket(t *testing.T) {
	testenv.NeedBPF(t)
	_ = rlimit.RemoveMemlock()
	xsks, err := ebpf.NewMap(&ebpf.MapSpec{Name: XSKMapName, Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer xsks.Close()
	taken := testframe.Spec{DPort: 9, Payload: []byte("stamp me")}.Build(t)
	other := testframe.Spec{DPort: 10, Payload: []byte("not me")}.Build(t)
	pc := Program{Matches: []Match{MatchUDPPort(9)}, Stamp: StampMonotonic, StampInFrame: true, XSKMapFD: xsks.FD()}
	prog, err := pc.Load(0)
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	for _, frame := range [][]byte{taken, other} {
		out := make([]byte, len(frame)+64)
		ret, err := prog.Run(&ebpf.RunOptions{Data: frame, DataOut: out})
		if err != nil {
			t.Fatal(err)
		}
		if ret != actPass {
			t.Errorf("verdict %d, want XDP_PASS (%d)", ret, actPass)
		}
		if !bytes.Equal(out[:len(frame)], frame) || bytes.Count(out[len(frame):], []byte{0}) != 64 {
			t.Errorf("the kernel gets % x, want the frame as it came, % x", out, frame)
		}
	}
}
