package xdp

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/host"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// tuneCrashEnv makes the test binary the child of TestTuningCrashRecovered:
// "NSPATH IFNAME".
const tuneCrashEnv = "PACKETIO_TUNE_CRASH_CHILD"

// crashTuning is what the child asks for; the values differ from any
// kernel default so a leftover is unmistakable.
var crashTuning = Tuning{NAPIDefer: 7, NAPIFlush: 50 * time.Microsecond, NAPIAllDrivers: true}

// TestTuningCrashChild is the child: it opens a tuned fleet in the
// namespace it is given, says ready and waits to be killed. It runs only
// when TestTuningCrashRecovered starts it.
func TestTuningCrashChild(t *testing.T) {
	arg, ok := os.LookupEnv(tuneCrashEnv)
	if !ok {
		return
	}
	nsPath, ifname, _ := strings.Cut(arg, " ")
	runtime.LockOSThread() // never unlocked: the thread stays in the namespace
	err := func() error {
		fd, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			return err
		}
		f, err := Open(ifname, WithFilter(filter.MatchEtherType(testEtherType)), WithDriverMode(), WithHostTuning(crashTuning))
		if err != nil {
			return err
		}
		runtime.KeepAlive(f)
		return nil
	}()
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	for {
		time.Sleep(time.Hour)
	}
}

// napiNow reads h's NAPI values as "defer/flush-ns".
func napiNow(t *testing.T, h *netns.Host) string {
	t.Helper()
	var d int
	var f time.Duration
	err := h.Do(func() error {
		return host.InNetnsSysfs(func(root string) (err error) {
			d, f, err = host.ReadNAPI(root, h.Link)
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d/%d", d, f.Nanoseconds())
}

// TestTuningCrashRecovered: a process killed with -9 while its fleet holds
// NAPI tuned leaves the values tuned; the next tuned Open puts the
// originals back before it records any (saying so in Info.Decisions), so
// its own Close restores the true originals, and the dead process's
// journal file is gone.
func TestTuningCrashRecovered(t *testing.T) {
	p := vethPair(t)
	h := p.B
	orig := napiNow(t, h)
	if orig == "7/50000" {
		t.Fatal("the veth starts tuned")
	}

	child := testenv.StartChild(t, "^TestTuningCrashChild$",
		[]string{fmt.Sprintf("%s=/proc/%d/fd/%d %s", tuneCrashEnv, os.Getpid(), h.NamespaceFD(), h.Link)}, 30*time.Second, "open", "")
	pid := child.Pid
	if v := napiNow(t, h); v != "7/50000" {
		t.Fatalf("NAPI %s while the child's fleet is open, want 7/50000", v)
	}
	files, _ := filepath.Glob(filepath.Join(host.DefaultRunDir, "journal", strconv.Itoa(pid)+"-*.json"))
	if len(files) != 1 {
		t.Fatalf("journal files of the child: %v, want one", files)
	}
	child.Kill()
	if v := napiNow(t, h); v != "7/50000" {
		t.Fatalf("NAPI %s after kill -9, want it still tuned", v)
	}

	// The next tuned Open, asking for other values.
	start := time.Now()
	f := openIn(t, h, WithFilter(filter.MatchEtherType(testEtherType)), WithDriverMode(), WithHostTuning(Tuning{NAPIDefer: 3, NAPIFlush: 20 * time.Microsecond, NAPIAllDrivers: true}))
	t.Logf("Open with the recovery took %v", time.Since(start))
	info, _ := f.Info()
	dead := fmt.Sprintf(", left by dead process %d", pid)
	for _, want := range []string{
		"restored napi_defer_hard_irqs on " + h.Link + " to " + strings.Split(orig, "/")[0] + dead,
		"restored gro_flush_timeout on " + h.Link + " to " + strings.Split(orig, "/")[1] + dead,
	} {
		found := false
		for _, d := range info.Decisions {
			found = found || d == want
		}
		if !found {
			t.Errorf("Info.Decisions %q lack %q", info.Decisions, want)
		}
	}
	if v := napiNow(t, h); v != "3/20000" {
		t.Fatalf("NAPI %s while the second fleet is open, want 3/20000", v)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if v := napiNow(t, h); v != orig {
		t.Fatalf("NAPI %s after the second fleet's Close, want the original %s", v, orig)
	}
	if files, _ := filepath.Glob(filepath.Join(host.DefaultRunDir, "journal", strconv.Itoa(pid)+"-*.json")); len(files) != 0 {
		t.Fatalf("the dead child's journal is still there: %v", files)
	}
}
