package libxdp

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/packetio/packetio/afxdp/xdp/internal/libxdp/xdploadertest"
	"github.com/packetio/packetio/internal/testenv"
)

// xdpfilt is xdp-filter's pass-everything program (priority 10, XDP_PASS).
const xdpfilt = xdploadertest.PassAll

// loader runs xdp-loader in the A end's namespace with the test's bpffs.
func (e *env) loader(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return xdploadertest.Loader{Host: e.h, BPFFS: e.bpffs}.Run(t, args...)
}

// status is what xdp-loader lists on the A end.
func (e *env) status(t *testing.T) []xdploadertest.Row {
	t.Helper()
	return xdploadertest.Loader{Host: e.h, BPFFS: e.bpffs}.Status(t)
}

// TestXDPLoaderReadsOurDispatcher: libxdp 1.3.1 takes a dispatcher this
// package generated, with its config and pins, for one of its own: it
// lists the components with the priorities and chain actions of our
// config, and `unload --all` dismantles it, pins included.
func TestXDPLoaderReadsOurDispatcher(t *testing.T) {
	e := newEnv(t)
	f := e.fakeDispatcher(t, []uint32{10, 30}, true)
	rows := e.status(t)
	want := []xdploadertest.Row{
		{Name: dispatcherName, Prio: -1, ID: f.id},
		{Name: "fake_comp_a", Prio: 10, ID: f.ids[0], Chain: "XDP_PASS"},
		{Name: "fake_comp_b", Prio: 30, ID: f.ids[1], Chain: "XDP_PASS"},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("xdp-loader status lists %+v\nwant %+v", rows, want)
	}
	if out, err := e.loader(t, "unload", e.h.Link, "--all"); err != nil {
		t.Fatalf("xdp-loader unload --all: %v\n%s", err, out)
	}
	e.assertClean(t)
}

// TestXDPLoaderFirst: xdp-loader puts xdp-filter's program on the hook,
// then Add joins it. Where the kernel refuses freplace, libxdp 1.3.1 falls
// back to attaching the program alone, without a dispatcher: Add then
// refuses with ErrNotShared naming it and leaves it running. Where it
// has freplace, xdp-loader makes a dispatcher, Add joins it (status lists
// both, ours with our priority), and Remove leaves xdp-loader's program
// attached and listed.
func TestXDPLoaderFirst(t *testing.T) {
	e := newEnv(t)
	if out, err := e.loader(t, "load", "-m", "skb", e.h.Link, xdpfilt); err != nil {
		t.Fatalf("xdp-loader load: %v\n%s", err, out)
	}
	unload := func() {
		if out, err := e.loader(t, "unload", e.h.Link, "--all"); err != nil {
			t.Errorf("xdp-loader unload --all: %v\n%s", err, out)
		}
	}
	st := e.query(t)
	p, err := ebpf.NewProgramFromID(ebpf.ProgramID(st.ProgID))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, shared, err := IsDispatcher(p)
	if err != nil {
		t.Fatal(err)
	}
	comp := Component{Spec: componentSpec("ours_drop", xdpDrop), Priority: 5}
	if !shared {
		rows := e.status(t)
		if len(rows) != 1 || rows[0].Name != "xdpfilt_alw_all" || rows[0].ID != ebpf.ProgramID(st.ProgID) {
			t.Fatalf("xdp-loader status lists %+v, want xdpfilt_alw_all alone", rows)
		}
		before := e.snapshot(t)
		_, err := Add(e.door, e.h.Index, comp, e.opts())
		wantErr(t, err, ErrNotShared)
		if want := fmt.Sprintf(`program %d "xdpfilt_alw_all"`, st.ProgID); !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %s", err, want)
		}
		e.assertUnchanged(t, before)
		unload()
		e.assertClean(t)
		testenv.KernelLimit(t, "libxdp 1.3.1 attached its program without a dispatcher (the kernel refuses freplace); the refusal was checked, joining it cannot be")
	}
	m, err := Add(e.door, e.h.Index, comp, e.opts())
	if err != nil {
		unload()
		t.Fatal(err)
	}
	rows := e.status(t)
	ours, theirs := xdploadertest.Find(rows, "ours_drop"), xdploadertest.Find(rows, "xdpfilt_alw_all")
	if ours.Prio != 5 || ours.ID != progID(t, m.Program()) || theirs.Prio != 10 || len(rows) != 3 {
		t.Errorf("xdp-loader status lists %+v, want the dispatcher, ours_drop/5 and xdpfilt_alw_all/10", rows)
	}
	if v := e.hookVerdict(t); v != xdpDrop {
		t.Errorf("verdict %d, want ours (XDP_DROP, priority 5) to run first", v)
	}
	if err := m.Remove(); err != nil {
		t.Fatal(err)
	}
	rows = e.status(t)
	if len(rows) != 2 || rows[0].Name != dispatcherName || rows[1].Name != "xdpfilt_alw_all" || rows[1].ID != theirs.ID {
		t.Errorf("after Remove xdp-loader lists %+v, want its program alone in a dispatcher", rows)
	}
	unload()
	e.assertClean(t)
}

// TestXDPLoaderSecond: Add puts ours on the empty hook, xdp-loader joins
// it, unloading xdp-loader's program by id leaves ours attached and
// running, and Remove empties the hook. Where the kernel refuses
// freplace, Add fails with ErrNoFreplace and leaves nothing behind.
func TestXDPLoaderSecond(t *testing.T) {
	e := newEnv(t)
	m, err := Add(e.door, e.h.Index, Component{Spec: componentSpec("ours_drop", xdpDrop), Priority: 20}, e.opts())
	if err != nil {
		e.assertClean(t)
	}
	skipWithoutFreplace(t, err)
	if out, err := e.loader(t, "load", "-m", "skb", e.h.Link, xdpfilt); err != nil {
		m.Remove()
		t.Fatalf("xdp-loader load: %v\n%s", err, out)
	}
	rows := e.status(t)
	ours, theirs := xdploadertest.Find(rows, "ours_drop"), xdploadertest.Find(rows, "xdpfilt_alw_all")
	if ours.Prio != 20 || theirs.Prio != 10 || len(rows) != 3 {
		t.Errorf("xdp-loader status lists %+v, want the dispatcher, xdpfilt_alw_all/10 and ours_drop/20", rows)
	}
	if out, err := e.loader(t, "unload", e.h.Link, "-i", strconv.Itoa(int(theirs.ID))); err != nil {
		t.Errorf("xdp-loader unload -i %d: %v\n%s", theirs.ID, err, out)
	}
	st := e.read(t)
	if len(st.Entries) != 1 || st.Entries[0].ID != progID(t, m.Program()) || st.Entries[0].Priority != 20 {
		t.Errorf("after xdp-loader's unload: %+v, want ours alone", st)
	}
	if v := e.hookVerdict(t); v != xdpDrop {
		t.Errorf("verdict %d, want ours (XDP_DROP)", v)
	}
	if err := m.Remove(); err != nil {
		t.Fatal(err)
	}
	e.assertClean(t)
}
