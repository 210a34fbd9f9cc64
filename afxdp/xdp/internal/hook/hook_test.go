package hook_test

import (
	"errors"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/afxdp/xdp/internal/hook"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

func passProgram(t *testing.T) *ebpf.Program {
	t.Helper()
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "hook_pass", Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func progID(t *testing.T, p *ebpf.Program) uint32 {
	t.Helper()
	info, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := info.ID()
	return uint32(id)
}

// TestSetAnswers pins the kernel's answers the libxdp dispatcher protocol
// builds on: an attach with XDP_FLAGS_UPDATE_IF_NOEXIST onto a taken hook
// is EBUSY, a replace expecting a program that is not there is EEXIST and
// changes nothing, a replace or detach expecting the right one acts.
func TestSetAnswers(t *testing.T) {
	testenv.NeedBPF(t)
	pair := netns.New(t)
	h := pair.A
	var door *hook.Door
	if err := h.Do(func() (err error) { door, err = hook.OpenDoor(); return err }); err != nil {
		t.Fatal(err)
	}
	defer door.Close()
	a, b := passProgram(t), passProgram(t)
	const skb = unix.XDP_FLAGS_SKB_MODE
	query := func(wantMode, wantID uint32) {
		t.Helper()
		st, err := door.Query(h.Index)
		if err != nil {
			t.Fatal(err)
		}
		if st.Attached != wantMode || st.ProgID != wantID {
			t.Fatalf("hook %s/%d, want %s/%d", hook.ModeName(st.Attached), st.ProgID, hook.ModeName(wantMode), wantID)
		}
	}
	if err := door.Set(h.Index, a.FD(), -1, unix.XDP_FLAGS_UPDATE_IF_NOEXIST|skb); err != nil {
		t.Fatal(err)
	}
	defer door.Set(h.Index, -1, -1, skb)
	query(hook.AttachedGeneric, progID(t, a))
	if err := door.Set(h.Index, b.FD(), -1, unix.XDP_FLAGS_UPDATE_IF_NOEXIST|skb); !errors.Is(err, unix.EBUSY) {
		t.Errorf("attach onto a taken hook: %v, want EBUSY", err)
	}
	if err := door.Set(h.Index, b.FD(), b.FD(), skb); !errors.Is(err, unix.EEXIST) {
		t.Errorf("replace expecting the wrong program: %v, want EEXIST", err)
	}
	query(hook.AttachedGeneric, progID(t, a))
	if err := door.Set(h.Index, b.FD(), a.FD(), skb); err != nil {
		t.Fatalf("replace expecting the right program: %v", err)
	}
	query(hook.AttachedGeneric, progID(t, b))
	if err := door.Set(h.Index, -1, a.FD(), skb); !errors.Is(err, unix.EEXIST) {
		t.Errorf("detach expecting the wrong program: %v, want EEXIST", err)
	}
	if err := door.Set(h.Index, -1, b.FD(), skb); err != nil {
		t.Fatalf("detach expecting the right program: %v", err)
	}
	query(hook.AttachedNone, 0)
}

func TestModeFlags(t *testing.T) {
	for _, tc := range []struct {
		attached uint32
		flags    int
		name     string
	}{
		{hook.AttachedNone, 0, "none"},
		{hook.AttachedDriver, unix.XDP_FLAGS_DRV_MODE, "native"},
		{hook.AttachedGeneric, unix.XDP_FLAGS_SKB_MODE, "generic"},
		{hook.AttachedHW, 0, "hardware"},
		{hook.AttachedMulti, 0, "multi"},
		{9, 0, "unknown"},
	} {
		if f, n := hook.ModeFlags(tc.attached), hook.ModeName(tc.attached); f != tc.flags || n != tc.name {
			t.Errorf("%d: flags %#x name %q, want %#x %q", tc.attached, f, n, tc.flags, tc.name)
		}
	}
}
