package libxdp

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/afxdp/xdp/internal/hook"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/xdpbtf"
)

// env is a veth pair in throwaway namespaces, a door to the XDP hook of
// its A end and a private bpffs mounted on a temporary directory.
type env struct {
	pair  *netns.Pair
	h     *netns.Host
	door  *hook.Door
	bpffs string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	testenv.NeedBPF(t)
	e := &env{pair: netns.New(t), bpffs: t.TempDir()}
	e.h = e.pair.A
	if err := unix.Mount("bpf", e.bpffs, "bpf", 0, ""); err != nil {
		testenv.CannotRun(t, "mount a bpffs on %s: %v", e.bpffs, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(e.bpffs, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", e.bpffs, err)
		}
	})
	if err := e.h.Do(func() (err error) { e.door, err = hook.OpenDoor(); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.door.Close)
	return e
}

func (e *env) opts() Options { return Options{BPFFS: e.bpffs, Mode: unix.XDP_FLAGS_SKB_MODE} }

func (e *env) query(t *testing.T) hook.State {
	t.Helper()
	st, err := e.door.Query(e.h.Index)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// tree lists what the bpffs holds, relative to its top, leaving out the
// kernel's own iterators (progs.debug, maps.debug) and the xdp directory
// itself, which holds libxdp's lock and stays (libxdp never removes it).
func (e *env) tree(t *testing.T) []string {
	t.Helper()
	var got []string
	err := filepath.WalkDir(e.bpffs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(e.bpffs, p)
		if rel != "." && rel != "xdp" && rel != "progs.debug" && rel != "maps.debug" {
			got = append(got, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// assertClean checks the hook is empty and bpffs holds nothing but the
// empty xdp directory libxdp's lock lives on.
func (e *env) assertClean(t *testing.T) {
	t.Helper()
	if st := e.query(t); st.Attached != hook.AttachedNone {
		t.Errorf("hook holds program %d (%s), want it empty", st.ProgID, hook.ModeName(st.Attached))
	}
	if got := e.tree(t); len(got) > 0 {
		t.Errorf("bpffs holds %v, want nothing but an empty xdp/", got)
	}
}

// snapshot is the hook and the bpffs tree, to compare after a failure.
type snapshot struct {
	st   hook.State
	tree []string
}

func (e *env) snapshot(t *testing.T) snapshot {
	t.Helper()
	return snapshot{e.query(t), e.tree(t)}
}

func (e *env) assertUnchanged(t *testing.T, before snapshot) {
	t.Helper()
	after := e.snapshot(t)
	if after.st != before.st {
		t.Errorf("hook went from %+v to %+v", before.st, after.st)
	}
	if !slices.Equal(after.tree, before.tree) {
		t.Errorf("bpffs went from %v to %v", before.tree, after.tree)
	}
}

// xdpProgram loads an XDP program returning verdict, with the BTF of its
// entry, as a component would be.
func xdpProgram(t *testing.T, name string, verdict int32) *ebpf.Program {
	t.Helper()
	p, err := ebpf.NewProgram(componentSpec(name, verdict))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func componentSpec(name string, verdict int32) *ebpf.ProgramSpec {
	return &ebpf.ProgramSpec{Name: name, Type: ebpf.XDP, License: "GPL",
		Instructions: xdpbtf.Mark(asm.Instructions{asm.Mov.Imm(asm.R0, verdict), asm.Return()}, name)}
}

func progID(t *testing.T, p *ebpf.Program) ebpf.ProgramID {
	t.Helper()
	info, err := p.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := info.ID()
	return id
}

// fake is a dispatcher put together by hand where the kernel refuses
// extensions: a generated dispatcher on the hook (generic mode) whose
// pins name ordinary XDP programs as its components. It reads like a
// real one to this package and to xdp-loader; only linking its
// components into another dispatcher fails.
type fake struct {
	disp  *ebpf.Program
	id    ebpf.ProgramID
	dir   string
	comps []*ebpf.Program
	ids   []ebpf.ProgramID
}

// fakeDispatcher attaches a fake with one component per priority. With
// links, each component also gets a pinned link (a tcx one on the A end,
// standing in for the freplace link), as xdp-loader's unpinning expects.
func (e *env) fakeDispatcher(t *testing.T, prios []uint32, links bool) *fake {
	t.Helper()
	var slots []*slot
	for _, p := range prios {
		slots = append(slots, &slot{prio: p, chain: 1 << xdpPass})
	}
	c := configFor(slots)
	return e.fakeWith(t, c.marshal(), len(prios), true, links)
}

// fakeWith attaches a dispatcher with this config value and n pinned
// components (pins only with dir set).
func (e *env) fakeWith(t *testing.T, value []byte, n int, dir, links bool) *fake {
	t.Helper()
	disp, err := loadDispatcherValue(value, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { disp.Close() })
	f := &fake{disp: disp, id: progID(t, disp)}
	if err := e.door.Set(e.h.Index, disp.FD(), -1, unix.XDP_FLAGS_UPDATE_IF_NOEXIST|unix.XDP_FLAGS_SKB_MODE); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.door.Set(e.h.Index, -1, disp.FD(), unix.XDP_FLAGS_SKB_MODE) })
	f.dir = dispatchDir(e.bpffs, e.h.Index, f.id)
	if !dir {
		return f
	}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		p := xdpProgram(t, "fake_comp_"+string(rune('a'+i)), xdpPass)
		f.comps = append(f.comps, p)
		f.ids = append(f.ids, progID(t, p))
		if err := pinProgram(p, progPin(f.dir, i)); err != nil {
			t.Fatal(err)
		}
		if !links {
			continue
		}
		cls, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SchedCLS, License: "GPL",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, -1), asm.Return()}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cls.Close() })
		var l link.Link
		if err := e.h.Do(func() (err error) {
			l, err = link.AttachTCX(link.TCXOptions{Interface: e.h.Index, Program: cls, Attach: ebpf.AttachTCXIngress})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		if err := l.Pin(linkPin(f.dir, i)); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// member is a Member for a fake's component i, as Add would have made it.
func (e *env) member(f *fake, i int) *Member {
	p, _ := f.comps[i].Clone()
	return &Member{door: e.door, ifindex: e.h.Index, top: e.bpffs, id: f.ids[i], prog: p}
}

func wantErr(t *testing.T, err, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("error %v, want %v", err, sentinel)
	}
}
