package libxdp

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/afxdp/xdp/internal/hook"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/xdpbtf"
)

const xdpDrop = 1

// skipWithoutFreplace ends a test whose Add was refused because the kernel
// refuses extensions, once the test has checked what it could; any other
// error fails it.
func skipWithoutFreplace(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, ErrNoFreplace) {
		testenv.KernelLimit(t, "this kernel refuses freplace programs, so no component can be linked (%v)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// hookVerdict runs the program on the hook over a frame.
func (e *env) hookVerdict(t *testing.T) uint32 {
	t.Helper()
	st := e.query(t)
	p, err := ebpf.NewProgramFromID(ebpf.ProgramID(st.ProgID))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	v, err := p.Run(&ebpf.RunOptions{Data: frame})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (e *env) read(t *testing.T) State {
	t.Helper()
	st, err := Read(e.door, e.h.Index, e.bpffs)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func names(st State) string {
	var n []string
	for _, en := range st.Entries {
		n = append(n, fmt.Sprintf("%s/%d", en.Name, en.Priority))
	}
	return strings.Join(n, " ")
}

// TestAddRemoveEmptyHook adds one component to an empty hook: a
// dispatcher of its own appears, runs it, and Remove leaves the hook and
// bpffs empty. Where the kernel refuses extensions, Add fails with
// ErrNoFreplace and leaves nothing behind.
func TestAddRemoveEmptyHook(t *testing.T) {
	e := newEnv(t)
	m, err := Add(e.door, e.h.Index, Component{Spec: componentSpec("drop_all", xdpDrop), Priority: 20}, e.opts())
	if err != nil {
		e.assertClean(t)
	}
	skipWithoutFreplace(t, err)
	st := e.read(t)
	if len(st.Entries) != 1 || st.Entries[0].ID != progID(t, m.Program()) || st.Entries[0].Priority != 20 ||
		st.Entries[0].ChainActions != 1<<xdpPass || st.Mode != hook.AttachedGeneric || st.Version != 2 {
		t.Errorf("state %+v", st)
	}
	if v := e.hookVerdict(t); v != xdpDrop {
		t.Errorf("verdict %d, want the component's XDP_DROP", v)
	}
	if err := m.Remove(); err != nil {
		t.Fatal(err)
	}
	e.assertClean(t)
	if err := m.Remove(); err != nil || m.Program() != nil {
		t.Errorf("second Remove: %v, program %v", err, m.Program())
	}
}

// counting is a component that counts its runs in cnt, then returns
// verdict.
func counting(t *testing.T, name string, verdict int32) (*ebpf.ProgramSpec, *ebpf.Map) {
	t.Helper()
	cnt, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cnt.Close() })
	ld := asm.LoadMapValue(asm.R1, 0, 0)
	if err := ld.AssociateMap(cnt); err != nil {
		t.Fatal(err)
	}
	insns := xdpbtf.Mark(asm.Instructions{
		ld,
		asm.Mov.Imm(asm.R2, 1),
		asm.StoreXAdd(asm.R1, asm.R2, asm.DWord),
		asm.Mov.Imm(asm.R0, verdict),
		asm.Return(),
	}, name)
	return &ebpf.ProgramSpec{Name: name, Type: ebpf.XDP, License: "GPL", Instructions: insns}, cnt
}

func count(t *testing.T, m *ebpf.Map) uint64 {
	t.Helper()
	var n uint64
	if err := m.Lookup(uint32(0), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestChainOrder: components run by priority; one passing lets the next
// run, one dropping ends the chain (the counting component after it
// never runs).
func TestChainOrder(t *testing.T) {
	e := newEnv(t)
	counter, cnt := counting(t, "count_drop", xdpDrop)
	b, err := Add(e.door, e.h.Index, Component{Spec: counter, Priority: 20}, e.opts())
	skipWithoutFreplace(t, err)
	defer b.Remove()
	a, err := Add(e.door, e.h.Index, Component{Spec: componentSpec("pass_first", xdpPass), Priority: 10}, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Remove()
	if got := names(e.read(t)); got != "pass_first/10 count_drop/20" {
		t.Errorf("entries %s", got)
	}
	if v, n := e.hookVerdict(t), count(t, cnt); v != xdpDrop || n != 1 {
		t.Errorf("pass then drop: verdict %d, %d counted runs; want XDP_DROP, 1", v, n)
	}
	c, err := Add(e.door, e.h.Index, Component{Spec: componentSpec("drop_first", xdpDrop), Priority: 5}, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	if got := names(e.read(t)); got != "drop_first/5 pass_first/10 count_drop/20" {
		t.Errorf("entries %s", got)
	}
	if v, n := e.hookVerdict(t), count(t, cnt); v != xdpDrop || n != 1 {
		t.Errorf("drop first: verdict %d, %d counted runs; want XDP_DROP and still 1", v, n)
	}
	if err := c.Remove(); err != nil {
		t.Fatal(err)
	}
	if v, n := e.hookVerdict(t), count(t, cnt); v != xdpDrop || n != 2 {
		t.Errorf("after removing the first: verdict %d, %d counted runs; want XDP_DROP, 2", v, n)
	}
	if err := a.Remove(); err != nil {
		t.Fatal(err)
	}
	if err := b.Remove(); err != nil {
		t.Fatal(err)
	}
	e.assertClean(t)
}

// TestAddRefusesForeign: a program that is no dispatcher stays on the
// hook untouched, and the error names it.
func TestAddRefusesForeign(t *testing.T) {
	e := newEnv(t)
	p := xdpProgram(t, "foreign_pass", xdpPass)
	if err := e.door.Set(e.h.Index, p.FD(), -1, unix.XDP_FLAGS_UPDATE_IF_NOEXIST|unix.XDP_FLAGS_SKB_MODE); err != nil {
		t.Fatal(err)
	}
	defer e.door.Set(e.h.Index, -1, p.FD(), unix.XDP_FLAGS_SKB_MODE)
	before := e.snapshot(t)
	_, err := Add(e.door, e.h.Index, Component{Spec: componentSpec("mine", xdpPass)}, e.opts())
	wantErr(t, err, ErrNotShared)
	want := fmt.Sprintf(`libxdp add ifindex %d: program %d "foreign_pass": the XDP hook is not shared through a libxdp dispatcher: not a libxdp dispatcher (its name is not xdp_dispatcher)`, e.h.Index, progID(t, p))
	if err.Error() != want {
		t.Errorf("error\n%s\nwant\n%s", err, want)
	}
	e.assertUnchanged(t, before)
	if _, err := Read(e.door, e.h.Index, e.bpffs); !errors.Is(err, ErrNotShared) {
		t.Errorf("Read: %v, want ErrNotShared", err)
	}
}

// TestAddRefusesUnreadable: dispatchers this package cannot rebuild are
// refused with ErrNotShared saying why, and left as they are.
func TestAddRefusesUnreadable(t *testing.T) {
	one := configFor([]*slot{{prio: 10, chain: 1 << xdpPass}})
	valid := one.marshal()
	edit := func(i int, b byte) []byte { v := slices.Clone(valid); v[i] = b; return v }
	for _, tc := range []struct {
		name  string
		value []byte
		dir   bool
		want  string
	}{
		{"pin directory missing", valid, false, "its pin directory is missing"},
		{"version 1", edit(1, 1), true, "a version 1 dispatcher"},
		{"version 3", edit(1, 3), true, "a version 3 dispatcher"},
		{"no magic, no BTF version", edit(0, 0), true, "its config has no magic and its BTF no dispatcher_version"},
		{"eleven slots", edit(2, 11), true, "config enables 11 slots"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			f := e.fakeWith(t, tc.value, 1, tc.dir, false)
			before := e.snapshot(t)
			_, err := Add(e.door, e.h.Index, Component{Spec: componentSpec("mine", xdpPass)}, e.opts())
			wantErr(t, err, ErrNotShared)
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), fmt.Sprintf(`program %d "xdp_dispatcher"`, f.id)) {
				t.Errorf("error %v, want it to name program %d and say %q", err, f.id, tc.want)
			}
			if !tc.dir && !strings.Contains(err.Error(), f.dir) {
				t.Errorf("error %v does not name the directory %s", err, f.dir)
			}
			e.assertUnchanged(t, before)
		})
	}
}

// TestAddFull: an eleventh component is refused before anything is
// loaded.
func TestAddFull(t *testing.T) {
	e := newEnv(t)
	f := e.fakeDispatcher(t, []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, false)
	before := e.snapshot(t)
	_, err := Add(e.door, e.h.Index, Component{Spec: componentSpec("eleventh", xdpPass)}, e.opts())
	wantErr(t, err, ErrFull)
	if !strings.Contains(err.Error(), fmt.Sprintf("program %d", f.id)) {
		t.Errorf("error %v does not name the dispatcher %d", err, f.id)
	}
	e.assertUnchanged(t, before)
}

// TestAddFailsHalfWay: an Add whose new dispatcher cannot be completed (a
// component the verifier refuses; or, where extensions are refused, any)
// leaves the dispatcher on the hook and its pins exactly as they were.
func TestAddFailsHalfWay(t *testing.T) {
	e := newEnv(t)
	e.fakeDispatcher(t, []uint32{10, 30}, true)
	before := e.snapshot(t)
	bad := &ebpf.ProgramSpec{Name: "reads_r2", Type: ebpf.XDP, License: "GPL",
		Instructions: xdpbtf.Mark(asm.Instructions{asm.Mov.Reg(asm.R0, asm.R2), asm.Return()}, "reads_r2")}
	for _, c := range []Component{{Spec: bad, Priority: 5}, {Spec: componentSpec("fine", xdpPass), Priority: 20}} {
		_, err := Add(e.door, e.h.Index, c, e.opts())
		if err == nil {
			t.Fatalf("adding %s next to components that are no extensions succeeded", c.Spec.Name)
		}
		t.Logf("%s: %v", c.Spec.Name, err)
		e.assertUnchanged(t, before)
	}
}

// TestRead reports the components from the pins and the config, in run
// order.
func TestRead(t *testing.T) {
	e := newEnv(t)
	if _, err := Read(e.door, e.h.Index, e.bpffs); !errors.Is(err, ErrNotShared) {
		t.Errorf("Read of an empty hook: %v, want ErrNotShared", err)
	}
	f := e.fakeDispatcher(t, []uint32{10, 30}, false)
	st := e.read(t)
	want := State{DispatcherID: f.id, Version: 2, Mode: hook.AttachedGeneric, Dir: f.dir, Entries: []Entry{
		{ID: f.ids[0], Name: "fake_comp_a", Priority: 10, ChainActions: 1 << xdpPass},
		{ID: f.ids[1], Name: "fake_comp_b", Priority: 30, ChainActions: 1 << xdpPass},
	}}
	if fmt.Sprint(st) != fmt.Sprint(want) {
		t.Errorf("Read = %+v\nwant   %+v", st, want)
	}
}

// TestRemoveLast: removing the only component detaches the dispatcher
// and removes its pins.
func TestRemoveLast(t *testing.T) {
	e := newEnv(t)
	f := e.fakeDispatcher(t, []uint32{10}, true)
	m := e.member(f, 0)
	if err := m.Remove(); err != nil {
		t.Fatal(err)
	}
	e.assertClean(t)
	if err := m.Remove(); err != nil || m.Program() != nil {
		t.Errorf("second Remove: %v, program %v", err, m.Program())
	}
}

// TestRemoveFailsHalfWay: a Remove whose new dispatcher cannot be
// completed leaves everything as it was, the member included.
func TestRemoveFailsHalfWay(t *testing.T) {
	e := newEnv(t)
	f := e.fakeDispatcher(t, []uint32{10, 30}, true)
	before := e.snapshot(t)
	m := e.member(f, 0)
	defer m.Program().Close()
	if err := m.Remove(); err == nil {
		t.Fatal("Remove relinked a component that is no extension")
	} else {
		t.Log(err)
	}
	e.assertUnchanged(t, before)
	if m.Program() == nil {
		t.Error("a failed Remove dropped the program")
	}
}

// TestRemoveGone: a component no longer on the hook counts as removed,
// and the dispatcher there is left alone.
func TestRemoveGone(t *testing.T) {
	e := newEnv(t)
	f := e.fakeDispatcher(t, []uint32{10}, false)
	other := xdpProgram(t, "elsewhere", xdpPass)
	c, _ := other.Clone()
	m := &Member{door: e.door, ifindex: e.h.Index, top: e.bpffs, id: progID(t, other), prog: c}
	before := e.snapshot(t)
	if err := m.Remove(); err != nil {
		t.Fatal(err)
	}
	e.assertUnchanged(t, before)
	if st := e.query(t); ebpf.ProgramID(st.ProgID) != f.id {
		t.Errorf("hook holds %d, want the dispatcher %d", st.ProgID, f.id)
	}
}

// TestNoBPFFS: a top directory that is no bpffs is refused up front.
func TestNoBPFFS(t *testing.T) {
	dir := t.TempDir()
	_, err := Add(nil, 1, Component{Spec: componentSpec("x", xdpPass)}, Options{BPFFS: dir})
	wantErr(t, err, ErrNoBPFFS)
	_, err = Read(nil, 1, dir)
	wantErr(t, err, ErrNoBPFFS)
	t.Setenv(bpffsEnv, dir)
	_, err = Read(nil, 1, "")
	wantErr(t, err, ErrNoBPFFS)
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("error %v does not name %s", err, dir)
	}
}

func TestAddOptions(t *testing.T) {
	_, err := Add(nil, 1, Component{Spec: componentSpec("x", xdpPass)}, Options{Mode: 0x8})
	if err == nil || !strings.Contains(err.Error(), "mode 0x8") {
		t.Errorf("error %v, want a refused mode", err)
	}
}

// TestInstallRetries: when the hook changed while a new dispatcher was
// built (a program took an empty hook; the dispatcher to replace is no
// longer there), installing it asks to start over and leaves no pins.
func TestInstallRetries(t *testing.T) {
	e := newEnv(t)
	f := e.fakeDispatcher(t, []uint32{10}, false)
	gone, err := loadDispatcher(&config{})
	if err != nil {
		t.Fatal(err)
	}
	defer gone.Close()
	before := e.snapshot(t)
	for _, tc := range []struct {
		name string
		old  *dispatcher
	}{
		{"hook taken meanwhile", nil},
		{"dispatcher replaced meanwhile", &dispatcher{prog: gone, mode: hook.AttachedGeneric}},
	} {
		b, err := build(nil)
		if err != nil {
			t.Fatal(err)
		}
		dir, err := install(e.door, e.h.Index, e.bpffs, b, tc.old, unix.XDP_FLAGS_SKB_MODE)
		b.close()
		if err != errRetry {
			t.Errorf("%s: %v, want errRetry", tc.name, err)
		}
		if dir == f.dir {
			t.Errorf("%s: new dispatcher's directory is the old one's", tc.name)
		}
		e.assertUnchanged(t, before)
	}
}

// TestRetryGivesUp: a hook that keeps changing ends in an error after
// maxAttempts tries.
func TestRetryGivesUp(t *testing.T) {
	n := 0
	err := retry("add", 3, func() error { n++; return errRetry })
	if n != maxAttempts || err == nil || !strings.Contains(err.Error(), "gave up after 10 attempts") {
		t.Errorf("%d attempts, error %v", n, err)
	}
}

// TestProbe: Probe's answer is the one Add gets: nil where extensions
// load, ErrNoFreplace where the kernel refuses them.
func TestProbe(t *testing.T) {
	testenv.NeedBPF(t)
	err := Probe()
	if err != nil && !errors.Is(err, ErrNoFreplace) {
		t.Fatalf("Probe: %v", err)
	}
	e := newEnv(t)
	m, addErr := Add(e.door, e.h.Index, Component{Spec: componentSpec("probe_twin", xdpPass)}, e.opts())
	if addErr == nil {
		defer m.Remove()
	}
	if errors.Is(err, ErrNoFreplace) != errors.Is(addErr, ErrNoFreplace) {
		t.Errorf("Probe says %v, Add %v", err, addErr)
	}
	t.Logf("Probe: %v", err)
}
