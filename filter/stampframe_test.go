package filter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

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
	prog := loadStamping(t, true)
	taken := testframe.Spec{DPort: 9, Payload: []byte("stamp me")}.Build(t)
	other := testframe.Spec{DPort: 10, Payload: []byte("not me")}.Build(t)
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

// TestStampInFrameRedirectsOnlyStamped: a StampInFrame program has one
// redirect, after the stamp is written, whatever the stamp's clock. A
// second, for a queue found without a socket, would hand a socket bound
// between the look and the redirect a packet without a stamp, whose
// first bytes it would then strip as one.
func TestStampInFrameRedirectsOnlyStamped(t *testing.T) {
	for _, stamp := range []Stamp{StampMonotonic, StampDevice} {
		pc := Program{Matches: []Match{MatchUDPPort(9)}, Stamp: stamp, StampInFrame: true, Kfuncs: Kfuncs{Timestamp: 1}}
		insns, err := pc.Instructions()
		if err != nil {
			t.Fatal(err)
		}
		var redirects, stampStores []int
		for i, ins := range insns {
			switch {
			case ins.IsBuiltinCall() && ins.Constant == int64(asm.FnRedirectMap):
				redirects = append(redirects, i)
			case ins.OpCode.Class().IsStore() && ins.Src == asm.R9:
				stampStores = append(stampStores, i)
			}
		}
		if len(redirects) != 1 || len(stampStores) != 1 || redirects[0] < stampStores[0] {
			t.Errorf("stamp %v: redirects at %v, the stamp stored at %v; want one redirect, after the one store\n%v", stamp, redirects, stampStores, insns)
		}
	}
}

// TestStampInMetadata runs a stamping program without StampInFrame
// (BPF_PROG_TEST_RUN, which hands back the metadata in front of the
// frame): the frame it takes, whose queue has no socket here, goes to the
// kernel as it came with RxMetadataLen bytes of metadata in front, a
// CLOCK_MONOTONIC stamp from the run and its clock; the frame it does not
// take comes back with no metadata.
func TestStampInMetadata(t *testing.T) {
	prog := loadStamping(t, false)
	for _, tc := range []struct {
		frame []byte
		meta  bool
	}{
		{testframe.Spec{DPort: 9, Payload: []byte("stamp me")}.Build(t), true},
		{testframe.Spec{DPort: 10, Payload: []byte("not me")}.Build(t), false},
	} {
		out := make([]byte, len(tc.frame)+64)
		before := monotonicNow(t)
		ret, err := prog.Run(&ebpf.RunOptions{Data: tc.frame, DataOut: out})
		after := monotonicNow(t)
		if err != nil {
			t.Fatal(err)
		}
		if ret != actPass {
			t.Errorf("verdict %d, want XDP_PASS (%d)", ret, actPass)
		}
		if !tc.meta {
			if !bytes.Equal(out[:len(tc.frame)], tc.frame) {
				t.Errorf("an untaken frame came back as % x, want % x", out[:len(tc.frame)], tc.frame)
			}
			continue
		}
		stamp, clock := binary.NativeEndian.Uint64(out), binary.NativeEndian.Uint64(out[8:])
		if stamp < before || stamp > after || clock != ClockMonotonic {
			t.Errorf("metadata: stamp %d clock %d, want CLOCK_MONOTONIC (%d) in [%d, %d]", stamp, clock, ClockMonotonic, before, after)
		}
		if got := out[RxMetadataLen : RxMetadataLen+len(tc.frame)]; !bytes.Equal(got, tc.frame) {
			t.Errorf("after the metadata: % x, want the frame as it came, % x", got, tc.frame)
		}
	}
}

// loadStamping loads a program that takes UDP port 9 and stamps it with
// CLOCK_MONOTONIC, in the frame or in the metadata, redirecting to an
// empty socket map; both go when the test ends.
func loadStamping(t *testing.T, inFrame bool) *ebpf.Program {
	t.Helper()
	testenv.NeedBPF(t)
	_ = rlimit.RemoveMemlock()
	xsks, err := ebpf.NewMap(&ebpf.MapSpec{Name: XSKMapName, Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { xsks.Close() })
	pc := Program{Matches: []Match{MatchUDPPort(9)}, Stamp: StampMonotonic, StampInFrame: inFrame, XSKMapFD: xsks.FD()}
	prog, err := pc.Load(0)
	if err != nil {
		if !inFrame && errors.Is(features.HaveProgramHelper(ebpf.XDP, asm.FnXdpAdjustMeta), ebpf.ErrNotSupported) {
			// What a caller sees on such a kernel: the load refused,
			// naming the helper and the way out.
			if !strings.Contains(err.Error(), "may not call bpf_xdp_adjust_meta") || !strings.Contains(err.Error(), "StampInFrame") || !IsVerifierError(err) {
				t.Fatalf("the kernel refuses bpf_xdp_adjust_meta in XDP programs, and the load's error does not say so: %v", err)
			}
			testenv.KernelLimit(t, "XDP programs may not call bpf_xdp_adjust_meta here, so a stamp in the metadata area cannot load (%v); afxdp/xdp stamps in the frame", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	return prog
}

// monotonicNow is CLOCK_MONOTONIC in nanoseconds, bpf_ktime_get_ns's clock.
func monotonicNow(t *testing.T) uint64 {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}
