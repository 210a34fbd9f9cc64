package host

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/netns"
)

// The tests in this file change real host state: only inside network
// namespaces they make (internal/netns), always restored in t.Cleanup. They
// never write /proc/irq and never touch an interface they did not create.

const (
	testDefer = 2
	testFlush = 20 * time.Microsecond
)

// inSysfs runs fn with the sysfs of host h's namespace.
func inSysfs(t *testing.T, h *netns.Host, fn func(sys string) error) {
	t.Helper()
	if err := h.Do(func() error { return InNetnsSysfs(fn) }); err != nil {
		t.Fatal(err)
	}
}

// mountState is what the host's mount table looks like from outside: this
// process's mountinfo, the mountinfo of another (host) thread, and findmnt
// run as a separate process.
func mountState(t *testing.T) string {
	t.Helper()
	self, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	thread := make(chan []byte, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		b, _ := os.ReadFile("/proc/thread-self/mountinfo")
		thread <- b
	}()
	state := "self:\n" + string(self) + "thread:\n" + string(<-thread)
	if path, err := exec.LookPath("findmnt"); err == nil {
		out, err := exec.Command(path, "-rn").CombinedOutput()
		if err != nil {
			t.Fatalf("findmnt: %v\n%s", err, out)
		}
		state += "findmnt:\n" + string(out)
	} else {
		t.Logf("findmnt is not installed; comparing mountinfo only")
	}
	return state
}

// threadsInHostMountNS waits until every thread of the process is in the
// process's own mount namespace: the discarded InNetnsSysfs threads exit
// shortly after their goroutine ends.
func threadsInHostMountNS() error {
	want, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return err
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		var odd []string
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		for _, task := range tasks {
			got, err := os.Readlink(filepath.Join("/proc/self/task", task.Name(), "ns/mnt"))
			if err == nil && got != want {
				odd = append(odd, task.Name()+":"+got)
			}
		}
		if len(odd) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("threads still in another mount namespace: %v (process: %s)", odd, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestInNetnsSysfsView: inside the namespace the fresh sysfs lists exactly
// that namespace's interfaces, with their real indexes; the host's mount
// table, seen three ways, is the same afterwards, and no thread of the
// process is left in the private mount namespace.
func TestInNetnsSysfsView(t *testing.T) {
	p := netns.New(t)
	before := mountState(t)
	hostMnt, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}
	inSysfs(t, p.A, func(sys string) error {
		ents, err := os.ReadDir(filepath.Join(sys, "class/net"))
		if err != nil {
			return err
		}
		var inSysfs []string
		for _, e := range ents {
			inSysfs = append(inSysfs, e.Name())
		}
		ifs, err := net.Interfaces()
		if err != nil {
			return err
		}
		var inNetlink []string
		for _, i := range ifs {
			inNetlink = append(inNetlink, i.Name)
		}
		sort.Strings(inSysfs)
		sort.Strings(inNetlink)
		if strings.Join(inSysfs, ",") != strings.Join(inNetlink, ",") {
			return fmt.Errorf("sysfs lists %v, the namespace has %v", inSysfs, inNetlink)
		}
		idx, err := readFile(filepath.Join(sys, "class/net", p.A.Link, "ifindex"))
		if err != nil {
			return err
		}
		if idx != fmt.Sprint(p.A.Index) {
			return fmt.Errorf("%s ifindex %s in sysfs, %d in netlink", p.A.Link, idx, p.A.Index)
		}
		mnt, err := os.Readlink("/proc/thread-self/ns/mnt")
		if err != nil {
			return err
		}
		if mnt == hostMnt {
			return errors.New("fn runs in the host's mount namespace")
		}
		return nil
	})
	if after := mountState(t); after != before {
		t.Fatalf("the host mount table changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if err := threadsInHostMountNS(); err != nil {
		t.Fatal(err)
	}
	// The host's own sysfs does not show the namespace's veth.
	if _, err := os.Stat(filepath.Join("/sys/class/net", p.A.Link)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("host /sys shows %s: %v", p.A.Link, err)
	}
}

// TestInNetnsSysfsAtFD: the namespace can be named by a descriptor instead
// of by being in it, and fn's error comes back.
func TestInNetnsSysfsAtFD(t *testing.T) {
	p := netns.New(t)
	var f *os.File
	if err := p.B.Do(func() (err error) {
		f, err = os.Open("/proc/thread-self/ns/net")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err := InNetnsSysfsAt(int(f.Fd()), func(sys string) error {
		if _, err := os.Stat(filepath.Join(sys, "class/net", p.B.Link)); err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(sys, "class/net", p.A.Link)); !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("B's sysfs shows A's %s: %v", p.A.Link, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sentinel := errors.New("from fn")
	if err := InNetnsSysfsAt(int(f.Fd()), func(string) error { return sentinel }); !errors.Is(err, sentinel) {
		t.Fatalf("fn's error came back as %v", err)
	}
	if err := InNetnsSysfsAt(-1, func(string) error { return nil }); err == nil {
		t.Fatal("a bad descriptor was accepted")
	}
	if err := threadsInHostMountNS(); err != nil {
		t.Fatal(err)
	}
}

// TestNAPIVeth: NAPI on a real veth in a namespace, before, while held,
// and after Restore run from the test goroutine outside the namespace; the
// other end of the pair is never touched.
func TestNAPIVeth(t *testing.T) {
	p := netns.New(t)
	var j Journal
	restoreOnCleanup(t, &j) // runs before the pair is removed
	inSysfs(t, p.A, func(sys string) error {
		if err := checkNAPI(sys, p.A.Link, 0, 0); err != nil {
			return fmt.Errorf("before: %w", err)
		}
		if err := TuneNAPI(&j, sys, p.A.Link, testDefer, testFlush); err != nil {
			return err
		}
		return checkNAPI(sys, p.A.Link, testDefer, testFlush)
	})
	want := fmt.Sprintf("[napi_defer_hard_irqs on %[1]s: 0 -> 2 gro_flush_timeout on %[1]s: 0 -> 20000]", p.A.Link)
	if got := fmt.Sprint(j.Changes()); got != want {
		t.Fatalf("Changes = %s\nwant      %s", got, want)
	}
	inSysfs(t, p.A, func(sys string) error { return checkNAPI(sys, p.A.Link, testDefer, testFlush) })
	inSysfs(t, p.B, func(sys string) error { return checkNAPI(sys, p.B.Link, 0, 0) })
	if err := j.Restore(); err != nil {
		t.Fatal(err)
	}
	inSysfs(t, p.A, func(sys string) error { return checkNAPI(sys, p.A.Link, 0, 0) })
}

// TestNAPIVethNeedsItsSysfs: from inside the namespace but through the
// host's /sys the veth is not found, and that is a reason, not a write to
// whatever the host has under that name.
func TestNAPIVethNeedsItsSysfs(t *testing.T) {
	p := netns.New(t)
	var j Journal
	restoreOnCleanup(t, &j)
	err := p.A.Do(func() error { return TuneNAPI(&j, "/sys", p.A.Link, testDefer, testFlush) })
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "not in /sys/class/net") {
		t.Fatalf("TuneNAPI through the host sysfs = %v; want unavailable, not found", err)
	}
}

// TestNAPIVethSecondWriteFails: a failure on the second file rolls the
// first back on the real device.
func TestNAPIVethSecondWriteFails(t *testing.T) {
	p := netns.New(t)
	var j Journal
	restoreOnCleanup(t, &j)
	failFlushWrites(t)
	inSysfs(t, p.A, func(sys string) error {
		err := TuneNAPI(&j, sys, p.A.Link, testDefer, testFlush)
		if err == nil || !strings.Contains(err.Error(), "injected") {
			return fmt.Errorf("TuneNAPI = %v; want the injected failure", err)
		}
		return checkNAPI(sys, p.A.Link, 0, 0)
	})
	if len(j.Changes()) != 0 {
		t.Fatalf("journal holds %v after a rolled-back apply", j.Changes())
	}
}

// TestOpenFailsHalfway: an Open-like sequence applies NAPI, then fails on
// its next step (a veth has no xdp_tx_mpwqe flag, and the caller treats
// that as fatal here); Restore puts NAPI back.
func TestOpenFailsHalfway(t *testing.T) {
	p := netns.New(t)
	var j Journal
	restoreOnCleanup(t, &j)
	var openErr error
	inSysfs(t, p.A, func(sys string) error {
		if err := TuneNAPI(&j, sys, p.A.Link, testDefer, testFlush); err != nil {
			return err
		}
		if err := checkNAPI(sys, p.A.Link, testDefer, testFlush); err != nil {
			return err
		}
		_, openErr = SetPrivFlag(&j, p.A.Link, "xdp_tx_mpwqe", false)
		return nil
	})
	if openErr == nil {
		t.Fatal("setting a private flag on a veth succeeded")
	}
	if len(j.Changes()) != 2 {
		t.Fatalf("journal holds %v; want the two NAPI settings only", j.Changes())
	}
	if err := j.Restore(); err != nil {
		t.Fatal(err)
	}
	inSysfs(t, p.A, func(sys string) error { return checkNAPI(sys, p.A.Link, 0, 0) })
}

// TestNAPISameNameTwoNamespaces: "lo" in two namespaces is two settings:
// different values are not a conflict, and each is restored.
func TestNAPISameNameTwoNamespaces(t *testing.T) {
	p := netns.New(t)
	var ja, jb Journal
	restoreOnCleanup(t, &ja)
	restoreOnCleanup(t, &jb)
	inSysfs(t, p.A, func(sys string) error { return TuneNAPI(&ja, sys, "lo", 2, 20*time.Microsecond) })
	inSysfs(t, p.B, func(sys string) error { return TuneNAPI(&jb, sys, "lo", 3, 30*time.Microsecond) })
	inSysfs(t, p.A, func(sys string) error { return checkNAPI(sys, "lo", 2, 20*time.Microsecond) })
	inSysfs(t, p.B, func(sys string) error { return checkNAPI(sys, "lo", 3, 30*time.Microsecond) })
	if err := ja.Restore(); err != nil {
		t.Fatal(err)
	}
	inSysfs(t, p.A, func(sys string) error { return checkNAPI(sys, "lo", 0, 0) })
	inSysfs(t, p.B, func(sys string) error { return checkNAPI(sys, "lo", 3, 30*time.Microsecond) })
	if err := jb.Restore(); err != nil {
		t.Fatal(err)
	}
	inSysfs(t, p.B, func(sys string) error { return checkNAPI(sys, "lo", 0, 0) })
}

// TestNAPIReadOnlySysfs: a read-only sysfs is a reason, not a crash, and
// holds nothing.
func TestNAPIReadOnlySysfs(t *testing.T) {
	p := netns.New(t)
	var j Journal
	restoreOnCleanup(t, &j)
	var tuneErr error
	err := p.A.Do(func() error {
		f, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			return err
		}
		defer f.Close()
		return inPrivateSysfs(int(f.Fd()), unix.MS_RDONLY, func(sys string) error {
			tuneErr = TuneNAPI(&j, sys, p.A.Link, testDefer, testFlush)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	var u *UnavailableError
	if !errors.As(tuneErr, &u) || !strings.Contains(u.Reason, "read-only") {
		t.Fatalf("TuneNAPI on a read-only sysfs = %v; want an *UnavailableError saying read-only", tuneErr)
	}
	if len(j.Changes()) != 0 || heldCount() != 0 {
		t.Fatalf("journal holds %v", j.Changes())
	}
	inSysfs(t, p.A, func(sys string) error { return checkNAPI(sys, p.A.Link, 0, 0) })
}

// TestPrivFlagVeth: a veth has no private flags at all; asking for
// xdp_tx_mpwqe is a clean reason, and an interface that does not exist in
// the namespace is one too.
func TestPrivFlagVeth(t *testing.T) {
	p := netns.New(t)
	var j Journal
	restoreOnCleanup(t, &j)
	err := p.A.Do(func() error {
		changed, err := SetPrivFlag(&j, p.A.Link, "xdp_tx_mpwqe", false)
		var u *UnavailableError
		if changed || !errors.As(err, &u) || u.Reason != "interface has no private flag xdp_tx_mpwqe" {
			return fmt.Errorf("SetPrivFlag on a veth = %v, %v; want an *UnavailableError \"interface has no private flag xdp_tx_mpwqe\"", changed, err)
		}
		if _, err := PrivFlag(p.A.Link, "xdp_tx_mpwqe"); !errors.As(err, &u) || u.Reason != "interface has no private flag xdp_tx_mpwqe" {
			return fmt.Errorf("PrivFlag on a veth = %v", err)
		}
		// B's end is not in A's namespace.
		if _, err := SetPrivFlag(&j, p.B.Link, "xdp_tx_mpwqe", false); !errors.As(err, &u) || !strings.Contains(u.Reason, "no such interface") {
			return fmt.Errorf("SetPrivFlag on an interface of another namespace = %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Changes()) != 0 || heldCount() != 0 {
		t.Fatalf("journal holds %v", j.Changes())
	}
}

// TestFindIRQsVirtual: veth and lo have no per-queue interrupts, and say so.
func TestFindIRQsVirtual(t *testing.T) {
	p := netns.New(t)
	inSysfs(t, p.A, func(sys string) error {
		for _, ifname := range []string{p.A.Link, "lo"} {
			irqs, err := FindIRQs(sys, "/proc", ifname)
			var u *UnavailableError
			if !errors.As(err, &u) || !strings.HasPrefix(u.Reason, "no per-queue interrupt found") {
				return fmt.Errorf("FindIRQs(%s) = %v, %v; want \"no per-queue interrupt found\"", ifname, irqs, err)
			}
		}
		return nil
	})
}

// TestTopologyHost reads this machine's topology: every CPU the process may
// use is in it.
func TestTopologyHost(t *testing.T) {
	topo, err := ReadTopology("/sys")
	if err != nil {
		t.Fatal(err)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	for c := 0; c <= MaxCPU; c++ {
		if set.IsSet(c) {
			if _, ok := topo.Siblings[c]; !ok {
				t.Errorf("CPU %d has no thread siblings in the host topology", c)
			}
		}
	}
}
