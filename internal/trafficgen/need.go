package trafficgen

import (
	"errors"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/testenv"
)

// NeedLiveFrames stops a test that needs the generator on a kernel that
// refuses live frames (Probe), with testenv.KernelLimit's "kernel limit"
// skip, after checking what a caller sees of the refusal: New's error,
// matching packetio.ErrUnsupported and naming live frames. On any other
// kernel it returns, having checked testenv.NeedBPF.
func NeedLiveFrames(t testing.TB) {
	t.Helper()
	testenv.NeedBPF(t)
	refused := Probe()
	if refused == nil {
		return
	}
	_, err := New("lo", make([]byte, 60))
	if !errors.Is(err, packetio.ErrUnsupported) || !errors.Is(refused, packetio.ErrUnsupported) {
		t.Fatalf("the kernel refuses live frames (%v), and New says %v: want both to match packetio.ErrUnsupported", refused, err)
	}
	testenv.KernelLimit(t, "%v", err)
}
