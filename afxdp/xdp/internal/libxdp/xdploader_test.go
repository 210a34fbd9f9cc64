package libxdp

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/packetio/packetio/internal/testenv"
)

// xdpfilt is xdp-filter's pass-everything program, which xdp-loader
// loads with run priority 10 and chain action XDP_PASS.
const xdpfilt = "/usr/lib/x86_64-linux-gnu/bpf/xdpfilt_alw_all.o"

// loader runs xdp-loader inside the A end's namespace (nsenter --net on
// the namespace this process holds, so /sys stays as it is) with the
// test's bpffs as LIBXDP_BPFFS.
func (e *env) loader(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("xdp-loader")
	if err != nil {
		testenv.CannotRun(t, "xdp-loader (Debian package xdp-tools) is not installed: %v", err)
	}
	if _, err := os.Stat(xdpfilt); err != nil {
		testenv.CannotRun(t, "xdp-filter's programs (Debian package xdp-tools) are not installed: %v", err)
	}
	ns := fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), e.h.NamespaceFD())
	cmd := exec.Command("nsenter", append([]string{"--net=" + ns, bin}, args...)...)
	cmd.Env = append(os.Environ(), bpffsEnv+"="+e.bpffs)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// statusRow is one program in `xdp-loader status`.
type statusRow struct {
	name  string
	prio  int // -1 for the dispatcher or a program without a dispatcher
	id    ebpf.ProgramID
	chain string
}

// status parses `xdp-loader status IF`: the interface's line names the
// program on the hook (the dispatcher, or a lone program), then one
// " => PRIO NAME ID TAG ACTIONS" line per component.
func (e *env) status(t *testing.T) []statusRow {
	t.Helper()
	out, err := e.loader(t, "status", e.h.Link)
	if err != nil {
		t.Fatalf("xdp-loader status: %v\n%s", err, out)
	}
	var rows []statusRow
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 5 && f[0] == e.h.Link:
			id, _ := strconv.Atoi(f[3])
			rows = append(rows, statusRow{name: f[1], prio: -1, id: ebpf.ProgramID(id)})
		case len(f) >= 5 && f[0] == "=>":
			prio, _ := strconv.Atoi(f[1])
			id, _ := strconv.Atoi(f[3])
			r := statusRow{name: f[2], prio: prio, id: ebpf.ProgramID(id)}
			if len(f) > 5 {
				r.chain = f[5]
			}
			rows = append(rows, r)
		}
	}
	t.Logf("xdp-loader status:\n%s", out)
	return rows
}

// TestXDPLoaderReadsOurDispatcher: libxdp 1.3.1 takes a dispatcher this
// package generated, with its config and pins, for one of its own: it
// lists the components with the priorities and chain actions of our
// config, and `unload --all` dismantles it, pins included.
func TestXDPLoaderReadsOurDispatcher(t *testing.T) {
	e := newEnv(t)
	f := e.fakeDispatcher(t, []uint32{10, 30}, true)
	rows := e.status(t)
	want := []statusRow{
		{name: dispatcherName, prio: -1, id: f.id},
		{name: "fake_comp_a", prio: 10, id: f.ids[0], chain: "XDP_PASS"},
		{name: "fake_comp_b", prio: 30, id: f.ids[1], chain: "XDP_PASS"},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("xdp-loader status lists %+v\nwant %+v", rows, want)
	}
	if out, err := e.loader(t, "unload", e.h.Link, "--all"); err != nil {
		t.Fatalf("xdp-loader unload --all: %v\n%s", err, out)
	}
	e.assertClean(t)
}

// findRow is the status row of the program named name, or a zero row.
func findRow(rows []statusRow, name string) statusRow {
	for _, r := range rows {
		if r.name == name {
			return r
		}
	}
	return statusRow{}
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
		if len(rows) != 1 || rows[0].name != "xdpfilt_alw_all" || rows[0].id != ebpf.ProgramID(st.ProgID) {
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
		t.Skip("declared limit: libxdp 1.3.1 attached its program without a dispatcher (the kernel refuses freplace); the refusal was checked, joining it cannot be")
	}
	m, err := Add(e.door, e.h.Index, comp, e.opts())
	if err != nil {
		unload()
		t.Fatal(err)
	}
	rows := e.status(t)
	ours, theirs := findRow(rows, "ours_drop"), findRow(rows, "xdpfilt_alw_all")
	if ours.prio != 5 || ours.id != progID(t, m.Program()) || theirs.prio != 10 || len(rows) != 3 {
		t.Errorf("xdp-loader status lists %+v, want the dispatcher, ours_drop/5 and xdpfilt_alw_all/10", rows)
	}
	if v := e.hookVerdict(t); v != xdpDrop {
		t.Errorf("verdict %d, want ours (XDP_DROP, priority 5) to run first", v)
	}
	if err := m.Remove(); err != nil {
		t.Fatal(err)
	}
	rows = e.status(t)
	if len(rows) != 2 || rows[0].name != dispatcherName || rows[1].name != "xdpfilt_alw_all" || rows[1].id != theirs.id {
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
	ours, theirs := findRow(rows, "ours_drop"), findRow(rows, "xdpfilt_alw_all")
	if ours.prio != 20 || theirs.prio != 10 || len(rows) != 3 {
		t.Errorf("xdp-loader status lists %+v, want the dispatcher, xdpfilt_alw_all/10 and ours_drop/20", rows)
	}
	if out, err := e.loader(t, "unload", e.h.Link, "-i", strconv.Itoa(int(theirs.id))); err != nil {
		t.Errorf("xdp-loader unload -i %d: %v\n%s", theirs.id, err, out)
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
