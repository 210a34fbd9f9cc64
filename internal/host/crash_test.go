package host

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// crashChildEnv makes the test binary the child of the kill -9 tests:
// "MODE NSPATH IFNAME RUNDIR". MODE "tune" tunes NAPI and says ready; "mid"
// says ready from inside the second write, so it dies between the two
// settings.
const crashChildEnv = "PACKETIO_JOURNAL_CHILD"

// The values the child writes.
const (
	childDefer = 7
	childFlush = 50 * time.Microsecond
)

// TestJournalCrashChild is the child: it runs only when the parent starts
// it, and never returns.
func TestJournalCrashChild(t *testing.T) {
	arg, ok := os.LookupEnv(crashChildEnv)
	if !ok {
		return // the child of the kill -9 tests: runs only when they start it
	}
	if err := crashChild(arg); err != nil {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	for {
		time.Sleep(time.Hour)
	}
}

func crashChild(arg string) error {
	f := strings.Fields(arg)
	if len(f) != 4 {
		return fmt.Errorf("%s=%q", crashChildEnv, arg)
	}
	mode, nsPath, ifname, run := f[0], f[1], f[2], f[3]
	runtime.LockOSThread() // never unlocked: the thread stays in the namespace
	fd, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return err
	}
	unix.Close(fd)
	if mode == "mid" {
		writeFault = func(path, _ string) error {
			if strings.HasSuffix(path, FlushTimeoutFile) {
				fmt.Println("ready")
				select {} // killed here, between the two settings
			}
			return nil
		}
	}
	j := Journal{RunDir: run}
	if err := InNetnsSysfs(func(root string) error {
		return TuneNAPI(&j, root, ifname, childDefer, childFlush)
	}); err != nil {
		return err
	}
	fmt.Println("ready")
	return nil
}

// startCrashChild starts the child on h's interface and waits for ready.
func startCrashChild(t *testing.T, mode string, h *netns.Host, run string) *testenv.Child {
	t.Helper()
	nsPath := fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), h.NamespaceFD())
	return testenv.StartChild(t, "^TestJournalCrashChild$",
		[]string{crashChildEnv + "=" + strings.Join([]string{mode, nsPath, h.Link, run}, " ")}, 20*time.Second, "tune", "")
}

// napiIn reads the NAPI values of h's interface inside its namespace.
func napiIn(t *testing.T, h *netns.Host) string {
	t.Helper()
	var d int
	var f time.Duration
	err := h.Do(func() error {
		return InNetnsSysfs(func(root string) (err error) {
			d, f, err = ReadNAPI(root, h.Link)
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d/%d", d, f.Nanoseconds())
}

// setDeferIn writes napi_defer_hard_irqs of h's interface, as another tool
// would.
func setDeferIn(t *testing.T, h *netns.Host, v int) {
	t.Helper()
	err := h.Do(func() error {
		return InNetnsSysfs(func(root string) error {
			return os.WriteFile(root+"/class/net/"+h.Link+"/"+DeferIRQsFile, []byte(strconv.Itoa(v)), 0)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// recoverLines runs Recover and returns its lines, with the child's PID as
// PID, sorted.
func recoverLines(t *testing.T, run string, pid int) (lines []string, took time.Duration) {
	t.Helper()
	start := time.Now()
	got, err := Recover(run, false)
	took = time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range got {
		lines = append(lines, strings.ReplaceAll(r.String(), strconv.Itoa(pid), "PID"))
	}
	sort.Strings(lines)
	return lines, took
}

func wantLines(t *testing.T, got []string, want ...string) {
	t.Helper()
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("recoveries:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func journalFiles(t *testing.T, run string) int {
	t.Helper()
	ents, err := os.ReadDir(journalDir(run))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return len(ents)
}

const (
	restoredDefer = "restored napi_defer_hard_irqs on IF to 0, left by dead process PID"
	restoredFlush = "restored gro_flush_timeout on IF to 0, left by dead process PID"
	tuned         = "7/50000"
	untuned       = "0/0"
)

func ifLines(h *netns.Host, lines ...string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.ReplaceAll(l, "IF", h.Link)
	}
	return out
}

// TestCrashRecovered: a process killed with -9 while it holds NAPI tuned
// leaves it tuned; the next recovery puts the originals back and leaves
// an empty run directory.
func TestCrashRecovered(t *testing.T) {
	p := netns.New(t)
	h, run := p.A, t.TempDir()
	if v := napiIn(t, h); v != untuned {
		t.Fatalf("a fresh veth has NAPI %s", v)
	}
	k := startCrashChild(t, "tune", h, run)
	if v := napiIn(t, h); v != tuned {
		t.Fatalf("NAPI %s while the child holds it, want %s", v, tuned)
	}
	if n := journalFiles(t, run); n != 1 {
		t.Fatalf("%d journal files while the child runs, want 1", n)
	}
	k.Kill()
	if v := napiIn(t, h); v != tuned {
		t.Fatalf("NAPI %s after kill -9, want it still %s (the defect this recovers from)", v, tuned)
	}
	lines, took := recoverLines(t, run, k.Pid)
	t.Logf("recovery took %v", took)
	wantLines(t, lines, ifLines(h, restoredDefer, restoredFlush)...)
	if v := napiIn(t, h); v != untuned {
		t.Fatalf("NAPI %s after recovery, want %s", v, untuned)
	}
	if n := journalFiles(t, run); n != 0 {
		t.Fatalf("%d journal files after recovery, want none", n)
	}
}

// TestCrashLiveOwnerUntouched: a live owner's settings and file are left
// alone, and reported as held.
func TestCrashLiveOwnerUntouched(t *testing.T) {
	p := netns.New(t)
	h, run := p.A, t.TempDir()
	k := startCrashChild(t, "tune", h, run)
	lines, _ := recoverLines(t, run, k.Pid)
	wantLines(t, lines, ifLines(h,
		"napi_defer_hard_irqs on IF held at 7 by live process PID (original 0)",
		"gro_flush_timeout on IF held at 50000 by live process PID (original 0)")...)
	if v := napiIn(t, h); v != tuned {
		t.Fatalf("NAPI %s after a recovery with the owner alive, want %s", v, tuned)
	}
	if n := journalFiles(t, run); n != 1 {
		t.Fatalf("%d journal files, want the live owner's", n)
	}
	k.Kill()
	lines, _ = recoverLines(t, run, k.Pid)
	wantLines(t, lines, ifLines(h, restoredDefer, restoredFlush)...)
}

// TestCrashChangedSinceLeft: a setting someone changed after the crash is
// left as they set it, and the recovery says so.
func TestCrashChangedSinceLeft(t *testing.T) {
	p := netns.New(t)
	h, run := p.A, t.TempDir()
	k := startCrashChild(t, "tune", h, run)
	k.Kill()
	setDeferIn(t, h, 3)
	lines, _ := recoverLines(t, run, k.Pid)
	wantLines(t, lines, ifLines(h, restoredFlush,
		"left napi_defer_hard_irqs on IF at 3: changed since dead process PID set it to 7 (original 0)")...)
	if v := napiIn(t, h); v != "3/0" {
		t.Fatalf("NAPI %s after recovery, want 3/0", v)
	}
	if n := journalFiles(t, run); n != 0 {
		t.Fatalf("%d journal files after recovery, want none", n)
	}
}

// TestCrashMidTuning: killed between its two writes, a process leaves one
// setting tuned and the other recorded but untouched; both come out right.
func TestCrashMidTuning(t *testing.T) {
	p := netns.New(t)
	h, run := p.A, t.TempDir()
	k := startCrashChild(t, "mid", h, run)
	k.Kill()
	if v := napiIn(t, h); v != "7/0" {
		t.Fatalf("NAPI %s after a kill between the settings, want 7/0", v)
	}
	lines, _ := recoverLines(t, run, k.Pid)
	wantLines(t, lines, ifLines(h, restoredDefer,
		"gro_flush_timeout on IF already back at 0, left by dead process PID")...)
	if v := napiIn(t, h); v != untuned {
		t.Fatalf("NAPI %s after recovery, want %s", v, untuned)
	}
	if n := journalFiles(t, run); n != 0 {
		t.Fatalf("%d journal files after recovery, want none", n)
	}
}

// TestCrashNamespaceGone: settings in a network namespace that no longer
// exists are dropped with a note.
func TestCrashNamespaceGone(t *testing.T) {
	p := netns.New(t)
	h, run := p.A, t.TempDir()
	k := startCrashChild(t, "tune", h, run)
	k.Kill()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := Recover(run, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("recoveries %v, want 2", got)
	}
	for _, r := range got {
		if r.Action != Dropped || !strings.Contains(r.String(), "its network namespace (inode ") || !strings.Contains(r.String(), "no longer exists") {
			t.Fatalf("%v: want dropped, the namespace gone", r)
		}
	}
	if n := journalFiles(t, run); n != 0 {
		t.Fatalf("%d journal files after recovery, want none", n)
	}
}
