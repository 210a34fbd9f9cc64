package xdp

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp/xdp/internal/libxdp"
	"github.com/packetio/packetio/afxdp/xdp/internal/libxdp/xdploadertest"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// noFreplace checks what a caller sees where the kernel refuses freplace
// programs, which every dispatcher slot is: Open fails with ErrUnsupported
// wrapping libxdp.ErrNoFreplace and naming the interface, and leaves no
// program on the hook and no pin. It reports whether that is the case.
func noFreplace(t *testing.T, h *netns.Host, bpffs string, err error) bool {
	t.Helper()
	if !errors.Is(err, libxdp.ErrNoFreplace) {
		return false
	}
	if !errors.Is(err, packetio.ErrUnsupported) || !strings.Contains(err.Error(), h.Link) {
		t.Errorf("refused for want of freplace: %v, want ErrUnsupported naming %s", err, h.Link)
	}
	if got := xdpAttached(t, h); got != 0 {
		t.Errorf("the refused Open left program %d on the hook", got)
	}
	if pins := testenv.BPFFSPins(t, bpffs); len(pins) > 0 {
		t.Errorf("the refused Open left pins: %v", pins)
	}
	return true
}

// TestSharedHookAlone: with WithSharedHook on an empty hook, packetio's
// program runs in a dispatcher of its own: the split is right, Info says
// so, and Close leaves no program and no pin.
func TestSharedHookAlone(t *testing.T) {
	bpffs := testenv.PrivateBPFFS(t)
	p := vethPair(t, netns.WithAddrs(splitA, splitB))
	f, err := openErr(t, p.B, WithUDPPorts(9000), WithNeedWakeup(), WithSharedHook(0))
	if noFreplace(t, p.B, bpffs, err) {
		testenv.KernelLimit(t, "the refusal was checked; a dispatcher cannot be built here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	in, _ := f.Info()
	if in.Hook != HookShared || !strings.Contains(in.Program, "in libxdp dispatcher") || !strings.Contains(in.Program, "priority 50, runs 1 of 1") {
		t.Errorf("Info: hook %v, program %q", in.Hook, in.Program)
	}
	if pins := testenv.BPFFSPins(t, bpffs); len(pins) != 2 {
		t.Errorf("pins while open: %v, want the program and its link", pins)
	}
	checkSplit(t, p, f)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := xdpAttached(t, p.B); got != 0 {
		t.Errorf("program %d left on the hook", got)
	}
}

// TestSharedHookRefusesForeign: WithSharedHook never takes a hook held by a
// program that is not libxdp's dispatcher: ErrBusy naming it, and it stays.
func TestSharedHookRefusesForeign(t *testing.T) {
	bpffs := testenv.PrivateBPFFS(t)
	p := vethPair(t)
	id := attachLegacy(t, p.B, passProgram(t, "not_a_dispatch"))
	_, err := openErr(t, p.B, WithUDPPorts(9000), WithSharedHook(7))
	if !errors.Is(err, packetio.ErrBusy) || !strings.Contains(err.Error(), `"not_a_dispatch"`) {
		t.Errorf("Open on a foreign program: %v, want ErrBusy naming it", err)
	}
	if got := xdpAttached(t, p.B); got != id {
		t.Errorf("program %d on the hook, want the foreign %d untouched", got, id)
	}
	if pins := testenv.BPFFSPins(t, bpffs); len(pins) > 0 {
		t.Errorf("pins left: %v", pins)
	}
}

// TestXDPLoaderFirst: xdp-loader (xdp-tools 1.3.1) loads xdp-filter's
// pass-all program, then packetio opens. Where libxdp built a dispatcher,
// packetio joins it without being asked (Info says so), both programs are
// listed, packetio's steers, and Close leaves theirs attached and listed.
// Where the kernel refuses freplace, libxdp attached its program alone:
// packetio refuses it with ErrBusy naming it, and it stays.
func TestXDPLoaderFirst(t *testing.T) {
	bpffs := testenv.PrivateBPFFS(t)
	p := vethPair(t, netns.WithAddrs(splitA, splitB))
	xl := xdploadertest.Loader{Host: p.B, BPFFS: bpffs}
	if out, err := xl.Run(t, "load", "-m", "skb", p.B.Link, xdploadertest.PassAll); err != nil {
		t.Fatalf("xdp-loader load: %v\n%s", err, out)
	}
	defer func() {
		if out, err := xl.Run(t, "unload", p.B.Link, "--all"); err != nil {
			t.Errorf("xdp-loader unload --all: %v\n%s", err, out)
		}
	}()
	rows := xl.Status(t)
	theirs := xdploadertest.Find(rows, "xdpfilt_alw_all")
	if theirs.ID == 0 {
		t.Fatalf("xdp-loader lists %+v, without its program", rows)
	}
	if len(rows) == 1 {
		// No dispatcher: libxdp fell back to attaching its program alone.
		_, err := openErr(t, p.B, WithUDPPorts(9000))
		if !errors.Is(err, packetio.ErrBusy) || !strings.Contains(err.Error(), `"xdpfilt_alw_all"`) {
			t.Errorf("Open beside libxdp's lone program: %v, want ErrBusy naming it", err)
		}
		if got := xdpAttached(t, p.B); got != uint32(theirs.ID) {
			t.Errorf("program %d on the hook, want xdp-loader's %d", got, theirs.ID)
		}
		testenv.KernelLimit(t, "libxdp attached its program without a dispatcher (the kernel refuses freplace); the refusal was checked, joining cannot be")
	}
	f := openIn(t, p.B, WithUDPPorts(9000), WithNeedWakeup())
	in, _ := f.Info()
	if in.Hook != HookShared || !strings.Contains(in.Program, "xdpfilt_alw_all") || !strings.Contains(strings.Join(in.Decisions, "; "), "joined the libxdp dispatcher") {
		t.Errorf("Info: hook %v, program %q, decisions %q", in.Hook, in.Program, in.Decisions)
	}
	if ours := xdploadertest.Find(xl.Status(t), programName); ours.Prio != DefaultPriority {
		t.Errorf("xdp-loader lists packetio's program %+v, want priority %d", ours, DefaultPriority)
	}
	checkSplit(t, p, f)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	rows = xl.Status(t)
	if xdploadertest.Find(rows, "xdpfilt_alw_all").ID != theirs.ID || xdploadertest.Find(rows, programName).ID != 0 {
		t.Errorf("after Close xdp-loader lists %+v, want its program alone", rows)
	}
}

// TestXDPLoaderSecond: packetio opens first, then xdp-loader loads. With a
// dispatcher (WithSharedHook) xdp-loader joins it, both are listed,
// packetio's still steers after xdp-loader unloads its own, and Close
// leaves nothing. Where the kernel refuses freplace, packetio's own
// program (a BPF link) makes xdp-loader fail, and packetio's keeps
// steering.
func TestXDPLoaderSecond(t *testing.T) {
	bpffs := testenv.PrivateBPFFS(t)
	p := vethPair(t, netns.WithAddrs(splitA, splitB))
	xl := xdploadertest.Loader{Host: p.B, BPFFS: bpffs}
	f, err := openErr(t, p.B, WithUDPPorts(9000), WithNeedWakeup(), WithSharedHook(60))
	if noFreplace(t, p.B, bpffs, err) {
		f = openIn(t, p.B, WithUDPPorts(9000), WithNeedWakeup())
		ours := xdpAttached(t, p.B)
		out, err := xl.Run(t, "load", "-m", "skb", p.B.Link, xdploadertest.PassAll)
		if err == nil {
			xl.Run(t, "unload", p.B.Link, "--all")
			t.Fatalf("xdp-loader loaded beside packetio's own program:\n%s", out)
		}
		if got := xdpAttached(t, p.B); got != ours {
			t.Errorf("program %d on the hook after xdp-loader failed, want packetio's %d", got, ours)
		}
		checkSplit(t, p, f)
		testenv.KernelLimit(t, "xdp-loader's refusal of packetio's own program was checked; a dispatcher cannot be built here")
	}
	if err != nil {
		t.Fatal(err)
	}
	if out, err := xl.Run(t, "load", "-m", "skb", p.B.Link, xdploadertest.PassAll); err != nil {
		t.Fatalf("xdp-loader load beside packetio: %v\n%s", err, out)
	}
	rows := xl.Status(t)
	ours, theirs := xdploadertest.Find(rows, programName), xdploadertest.Find(rows, "xdpfilt_alw_all")
	if ours.Prio != 60 || theirs.ID == 0 {
		t.Fatalf("xdp-loader lists %+v, want packetio's at 60 and its own", rows)
	}
	checkSplit(t, p, f)
	if out, err := xl.Run(t, "unload", p.B.Link, "-i", strconv.Itoa(int(theirs.ID))); err != nil {
		t.Fatalf("xdp-loader unload its own: %v\n%s", err, out)
	}
	checkSplit(t, p, f)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := xdpAttached(t, p.B); got != 0 {
		t.Errorf("program %d left on the hook", got)
	}
}
