package host

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/testenv"
)

func cpuSet(cpus ...int) unix.CPUSet {
	var s unix.CPUSet
	for _, c := range cpus {
		s.Set(c)
	}
	return s
}

func TestNarrowed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		set      unix.CPUSet
		off      []int
		want     unix.CPUSet
		narrowed bool
	}{
		{"unpinned, one CPU off", cpuSet(0, 1), []int{1}, cpuSet(0), true},
		{"unpinned, two off", cpuSet(0, 1, 2, 3), []int{1, 3}, cpuSet(0, 2), true},
		{"pinned to the CPU kept off", cpuSet(1), []int{1}, cpuSet(1), false},
		{"pinned elsewhere", cpuSet(0), []int{1}, cpuSet(0), false},
		{"every CPU off", cpuSet(0, 1), []int{0, 1}, cpuSet(0, 1), false},
		{"already off", cpuSet(0, 2), []int{1}, cpuSet(0, 2), false},
		{"nothing off", cpuSet(0, 1), nil, cpuSet(0, 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := narrowed(tc.set, tc.off)
			if ok != tc.narrowed || (ok && got != tc.want) {
				t.Fatalf("narrowed = %v, %v; want %v, %v", cpusIn(got), ok, cpusIn(tc.want), tc.narrowed)
			}
		})
	}
}

func TestKeepSysmonOffRefusesABadCPU(t *testing.T) {
	for _, c := range []int{-1, MaxCPU + 1} {
		if _, _, err := KeepSysmonOff([]int{c}); err == nil || !strings.Contains(err.Error(), fmt.Sprint(c)) {
			t.Errorf("KeepSysmonOff([%d]) = %v; want an error naming the CPU", c, err)
		}
	}
	if _, _, err := keepThreadsOff(filepath.Join(t.TempDir(), "none"), []int{0}, anyThread); err == nil {
		t.Error("a missing task directory gave no error")
	}
}

// TestKeepSysmonOff: with a goroutine in a long system call (sysmon then
// looks every 20 µs), KeepSysmonOff narrows one thread, one that sleeps in
// nanosleep, and undo gives it its mask back.
func TestKeepSysmonOff(t *testing.T) {
	_, kept := keptCPU(t)
	blocked := make(chan struct{})
	go func() {
		defer close(blocked)
		_, _ = unix.Poll(nil, 400) // a long system call, not nanosleep
	}()
	// A goroutine that keeps a processor busy: with every processor idle
	// sysmon sleeps on a futex instead.
	var spin atomic.Bool
	spun := make(chan struct{})
	go func() {
		defer close(spun)
		for !spin.Load() {
		}
	}()
	defer func() { spin.Store(true); <-spun }()
	time.Sleep(50 * time.Millisecond) // past sysmon's 10 ms
	before := masks(t)
	n, undo, err := KeepSysmonOff([]int{kept})
	if err != nil {
		t.Fatal(err)
	}
	var changed []int
	for tid, m := range masks(t) {
		if b, ok := before[tid]; ok && b != m {
			changed = append(changed, tid)
			if !sleepsLikeSysmon("/proc/self/task", tid) {
				t.Errorf("thread %d was narrowed but does not sleep in nanosleep", tid)
			}
		}
	}
	if n != 1 || len(changed) != 1 {
		t.Errorf("KeepSysmonOff narrowed %d threads, %d masks changed (%v); want sysmon's alone", n, len(changed), changed)
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	for tid, m := range masks(t) {
		if b, ok := before[tid]; ok && b != m {
			t.Errorf("after undo thread %d has %v, had %v", tid, cpusIn(m), cpusIn(b))
		}
	}
	<-blocked
}

// TestKeepThreadsOff (KeepThreadsOff): on a machine of 2 CPUs or more, every thread of the
// test process that may run on several CPUs loses the kept one, a thread
// pinned to it keeps it, and undo gives every thread its mask back, and
// widens those started meanwhile.
func TestKeepThreadsOff(t *testing.T) {
	all, kept := keptCPU(t)
	// A worker pinned to the kept CPU, held until the check is done; its
	// thread ends with it.
	worker := make(chan int)
	release := make(chan struct{})
	go func() {
		if err := PinThread(kept); err != nil {
			worker <- -1
			return
		}
		worker <- unix.Gettid()
		<-release
	}()
	wtid := <-worker
	defer close(release)
	if wtid < 0 {
		t.Fatalf("could not pin a worker to CPU %d", kept)
	}
	before := masks(t)
	n, undo, err := KeepThreadsOff([]int{kept})
	if err != nil {
		t.Fatal(err)
	}
	after := masks(t)
	moved := 0
	for tid, m := range after {
		switch {
		case tid == wtid:
			if m != cpuSet(kept) {
				t.Errorf("the worker pinned to CPU %d now has %v", kept, cpusIn(m))
			}
		case m.Count() > 1 && m.IsSet(kept) && before[tid] == m: // one started meanwhile may be missed
			t.Errorf("thread %d may still run on CPU %d: %v", tid, kept, cpusIn(m))
		}
		if b, ok := before[tid]; ok && b != m {
			moved++
		}
	}
	// Go may start a thread between the readings: n counts it, moved not.
	if n == 0 || moved > n {
		t.Errorf("KeepThreadsOff narrowed %d threads; %d masks changed", n, moved)
	}
	// Threads started now inherit a narrowed mask; undo widens them too.
	held := make(chan struct{})
	defer close(held)
	for range 4 {
		started := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			close(started)
			<-held
		}()
		<-started
	}
	if err := undo(); err != nil {
		t.Fatal(err)
	}
	narrow, _ := narrowed(all, []int{kept})
	for tid, m := range masks(t) {
		b, ok := before[tid]
		if ok && b != m {
			t.Errorf("after undo thread %d has %v, had %v", tid, cpusIn(m), cpusIn(b))
		}
		if !ok && m == narrow { // started since: it inherited the narrowed mask
			t.Errorf("after undo thread %d, started meanwhile, still has the narrowed mask %v", tid, cpusIn(m))
		}
	}
}

// keptCPU returns the test thread's CPUs and the last of them, the one
// the tests keep free; it needs 2.
func keptCPU(t *testing.T) (unix.CPUSet, int) {
	t.Helper()
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	if all.Count() < 2 {
		testenv.CannotRun(t, "this test's thread may run on %d CPU; keeping one free needs 2", all.Count())
	}
	l := cpusIn(all)
	return all, l[len(l)-1]
}

// masks reads the CPU mask of every thread of the test process.
func masks(t *testing.T) map[int]unix.CPUSet {
	t.Helper()
	tids, err := threadIDs("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]unix.CPUSet{}
	for _, tid := range tids {
		var s unix.CPUSet
		if unix.SchedGetaffinity(tid, &s) == nil {
			out[tid] = s
		}
	}
	if len(out) == 0 {
		t.Fatalf("no threads read (pid %d)", os.Getpid())
	}
	return out
}
