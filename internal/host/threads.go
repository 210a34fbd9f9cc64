// Keeping the Go runtime's monitor thread off the workers' CPUs.

package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// KeepSysmonOff narrows the Go runtime's system monitor thread (sysmon) to
// its CPUs less cpus, so that workers pinned to cpus are not preempted by
// it. sysmon runs without a processor on a thread of its own that the
// kernel puts where it likes, and wakes every 20 µs for as long as any
// goroutine sits in a long system call (an in-kernel traffic generator's
// BPF_PROG_RUN, say); on a worker's CPU it preempts the worker each time.
// The rest of the runtime's threads are left where they are: a pinned
// worker that yields or blocks hands its processor to one of them and back
// (runtime.LockOSThread), and on a busy CPU that round trip stalls it.
//
// sysmon is found by how it sleeps: it is the one runtime thread that
// sleeps in nanosleep(2) (its usleep), where idle threads wait in futex(2)
// and the poller in epoll_wait(2); a thread that may run on more than one
// CPU and is seen in nanosleep in most of a few looks is taken for it. A
// program whose own unpinned threads sleep in nanosleep (packetio's
// spinwait naps do, in a Poll on an unpinned goroutine) may have those
// narrowed too.
//
// It returns how many threads it narrowed (0 where none was found) and
// undo (never nil), which gives each of them back the mask it had, and widens a thread
// started since with a mask it made (sysmon starts threads) to the mask
// that came from, so that a child process forked later does not inherit a
// narrowed mask. A thread that exits meanwhile is not an error; one that
// starts while it runs may be missed.
func KeepSysmonOff(cpus []int) (narrowed int, undo func() error, err error) {
	return keepThreadsOff("/proc/self/task", cpus, sleepsLikeSysmon)
}

// KeepThreadsOff narrows every thread of this process that may run on
// more than one CPU, one of them in cpus, to its CPUs less cpus, as
// KeepSysmonOff narrows sysmon alone; a thread started later inherits the
// mask of the thread that starts it, so called early it keeps the whole
// process off cpus. It is for a process that does nothing but load the
// machine for workers elsewhere (a traffic feeder), where no thread of its
// own needs those CPUs; a process with pinned workers of its own wants
// KeepSysmonOff instead (see there). Its results are KeepSysmonOff's.
func KeepThreadsOff(cpus []int) (narrowed int, undo func() error, err error) {
	return keepThreadsOff("/proc/self/task", cpus, anyThread)
}

// anyThread is keepThreadsOff's pick of every thread.
func anyThread(string, int) bool { return true }

// sysmonLooks is how many times sleepsLikeSysmon looks at a thread, and
// sysmonGap the time between looks.
const (
	sysmonLooks = 5
	sysmonGap   = 100 * time.Microsecond
)

// sleepsLikeSysmon says whether thread tid (under taskDir) is in
// nanosleep(2) in most of sysmonLooks looks at its system call.
func sleepsLikeSysmon(taskDir string, tid int) bool {
	nanosleep := strconv.Itoa(unix.SYS_NANOSLEEP) + " "
	path := filepath.Join(taskDir, strconv.Itoa(tid), "syscall")
	seen := 0
	for i := range sysmonLooks {
		if i > 0 {
			time.Sleep(sysmonGap)
		}
		if b, err := os.ReadFile(path); err == nil && strings.HasPrefix(string(b), nanosleep) {
			seen++
		}
	}
	return 2*seen > sysmonLooks
}

// keptThread is a thread keepThreadsOff narrowed, and its mask before.
type keptThread struct {
	tid    int
	before unix.CPUSet
}

// keepThreadsOff narrows the threads under taskDir that may run on more
// than one CPU, one of them in cpus, and that pick takes.
func keepThreadsOff(taskDir string, cpus []int, pick func(taskDir string, tid int) bool) (int, func() error, error) {
	none := func() error { return nil }
	for _, c := range cpus {
		if c < 0 || c > MaxCPU {
			return 0, none, fmt.Errorf("host: keep threads off CPU %d: outside 0-%d", c, MaxCPU)
		}
	}
	tids, err := threadIDs(taskDir)
	if err != nil {
		return 0, none, err
	}
	var kept []keptThread
	var errs []error
	for _, tid := range tids {
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &set); err != nil {
			if !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("host: read thread %d's CPUs: %w", tid, err))
			}
			continue
		}
		narrow, ok := narrowed(set, cpus)
		if !ok || !pick(taskDir, tid) {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &narrow); err != nil {
			if !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("host: keep thread %d off CPUs %v: %w", tid, cpus, err))
			}
			continue
		}
		kept = append(kept, keptThread{tid, set})
	}
	seen := make(map[int]bool, len(tids))
	for _, tid := range tids {
		seen[tid] = true
	}
	undo := func() error {
		var errs []error
		for _, k := range kept {
			if err := unix.SchedSetaffinity(k.tid, &k.before); err != nil && !errors.Is(err, unix.ESRCH) {
				errs = append(errs, fmt.Errorf("host: give thread %d its CPUs back: %w", k.tid, err))
			}
		}
		if err := widenNewThreads(taskDir, seen, kept, cpus); err != nil {
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}
	return len(kept), undo, errors.Join(errs...)
}

// widenNewThreads gives each thread not in seen whose mask is one that
// keepThreadsOff made the mask that was made from.
func widenNewThreads(taskDir string, seen map[int]bool, kept []keptThread, cpus []int) error {
	if len(kept) == 0 {
		return nil
	}
	tids, err := threadIDs(taskDir)
	if err != nil {
		return err
	}
	var errs []error
	for _, tid := range tids {
		var set unix.CPUSet
		if seen[tid] || unix.SchedGetaffinity(tid, &set) != nil {
			continue
		}
		for _, k := range kept {
			if n, _ := narrowed(k.before, cpus); n == set {
				if err := unix.SchedSetaffinity(tid, &k.before); err != nil && !errors.Is(err, unix.ESRCH) {
					errs = append(errs, fmt.Errorf("host: give thread %d its CPUs back: %w", tid, err))
				}
				break
			}
		}
	}
	return errors.Join(errs...)
}

// narrowed is set less off, and whether a thread with set should get it: it
// may run on more than one CPU, on one of off, and on one that is not.
func narrowed(set unix.CPUSet, off []int) (unix.CPUSet, bool) {
	if set.Count() < 2 {
		return set, false
	}
	out := set
	for _, c := range off {
		out.Clear(c)
	}
	return out, out.Count() > 0 && out != set
}

// cpusIn lists the CPUs of set, in order.
func cpusIn(set unix.CPUSet) []int {
	var cpus []int
	for c := 0; c <= MaxCPU; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// threadIDs lists the thread ids in a /proc/PID/task directory.
func threadIDs(taskDir string) ([]int, error) {
	ents, err := os.ReadDir(taskDir)
	if err != nil {
		return nil, fmt.Errorf("host: list this process's threads: %w", err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
