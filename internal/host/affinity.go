// Worker placement.
//
// A Placement is an ordered list of CPUs; each worker that calls Pin takes
// the next one and is locked to it (the goroutine to its OS thread, the
// thread to the CPU). Without an explicit list the order is packed: one CPU
// per physical core first, cores grouped by shared last-level cache so one
// cache complex fills before the next, complexes on the NIC's NUMA node
// first; the remaining SMT siblings come last, so a machine with few cores
// still places every worker. Where the topology says nothing, New returns a
// nil Placement, which leaves placement to the scheduler and says so.

package host

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrNoCPU is returned by Pin when every CPU of the placement is taken.
var ErrNoCPU = errors.New("host: no CPU left for another worker")

// Placement hands CPUs to workers in order. Its methods are safe from any
// goroutine. The nil Placement leaves every worker to the scheduler.
type Placement struct {
	cpus []int
	note string

	mu    sync.Mutex
	next  int
	byTID map[int]int
}

// New plans a placement for workers serving ifname. With want it uses those
// CPUs in that order, each of which must be in the process's affinity mask.
// Otherwise it packs by topology read from sysfs.
func New(ifname string, want []int) (*Placement, error) {
	return newAt("/sys", ifname, want, allowed)
}

// allowed returns the process's CPU affinity mask.
func allowed() (map[int]bool, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("host: read the CPU mask: %w", err)
	}
	m := map[int]bool{}
	for c := 0; c <= MaxCPU; c++ {
		if set.IsSet(c) {
			m[c] = true
		}
	}
	return m, nil
}

func newAt(sys, ifname string, want []int, mask func() (map[int]bool, error)) (*Placement, error) {
	ok, err := mask()
	if err != nil {
		return nil, err
	}
	if len(want) > 0 {
		seen := map[int]bool{}
		for _, c := range want {
			if c < 0 || c > MaxCPU {
				return nil, fmt.Errorf("host: CPU %d is outside 0-%d", c, MaxCPU)
			}
			if !ok[c] {
				return nil, fmt.Errorf("host: CPU %d is not in this process's affinity mask", c)
			}
			if seen[c] {
				return nil, fmt.Errorf("host: CPU %d named twice", c)
			}
			seen[c] = true
		}
		return &Placement{cpus: append([]int(nil), want...), note: "as asked", byTID: map[int]int{}}, nil
	}
	cpus := packed(sys, ifname, ok)
	if len(cpus) == 0 {
		return nil, nil
	}
	return &Placement{cpus: cpus, note: "packed by core and cache", byTID: map[int]int{}}, nil
}

type cpuInfo struct {
	id, core, llc, node int
	sibling             bool // not the first SMT thread of its core
}

// packed orders the allowed CPUs: first threads of cores, by cache complex,
// the NIC's NUMA node first and then the largest complex; SMT siblings last.
func packed(sys, ifname string, ok map[int]bool) []int {
	nicNode := -1
	if safeName(ifname) {
		if n, err := readInt(filepath.Join(sys, "class/net", ifname, "device/numa_node")); err == nil {
			nicNode = n
		}
	}
	var infos []cpuInfo
	firstOfCore := map[string]bool{}
	for c := 0; c <= MaxCPU; c++ {
		if !ok[c] {
			continue
		}
		base := filepath.Join(sys, "devices/system/cpu", "cpu"+strconv.Itoa(c))
		core, err := readInt(filepath.Join(base, "topology/core_id"))
		if err != nil {
			continue
		}
		pkg, _ := readInt(filepath.Join(base, "topology/physical_package_id"))
		llc := -1
		if l := readList(filepath.Join(base, "cache/index3/shared_cpu_list")); len(l) > 0 {
			llc = l[0]
		}
		node := nodeOf(sys, c)
		key := fmt.Sprint(pkg, "/", core)
		infos = append(infos, cpuInfo{id: c, core: core, llc: llc, node: node, sibling: firstOfCore[key]})
		firstOfCore[key] = true
	}
	size := map[int]int{}
	for _, in := range infos {
		if !in.sibling {
			size[in.llc]++
		}
	}
	sort.SliceStable(infos, func(i, j int) bool {
		a, b := infos[i], infos[j]
		if a.sibling != b.sibling {
			return !a.sibling
		}
		if (a.node == nicNode) != (b.node == nicNode) {
			return a.node == nicNode
		}
		if size[a.llc] != size[b.llc] {
			return size[a.llc] > size[b.llc]
		}
		if a.llc != b.llc {
			return a.llc < b.llc
		}
		return a.id < b.id
	})
	out := make([]int, len(infos))
	for i, in := range infos {
		out[i] = in.id
	}
	return out
}

func nodeOf(sys string, cpu int) int {
	matches, _ := filepath.Glob(filepath.Join(sys, "devices/system/cpu", "cpu"+strconv.Itoa(cpu), "node*"))
	for _, m := range matches {
		if n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(m), "node")); err == nil {
			return n
		}
	}
	return 0
}

// Pin locks the calling goroutine to its OS thread and the thread to the
// next CPU, and returns the CPU. A thread that already has a CPU keeps it, so
// one worker driving several queues stays put. On the nil Placement it does
// nothing and returns -1. On failure the thread is unlocked again.
func (p *Placement) Pin() (int, error) {
	if p == nil {
		return -1, nil
	}
	runtime.LockOSThread()
	tid := unix.Gettid()
	p.mu.Lock()
	cpu, had := p.byTID[tid]
	if !had {
		if p.next >= len(p.cpus) {
			p.mu.Unlock()
			runtime.UnlockOSThread()
			return -1, fmt.Errorf("%w (%d placed: %s)", ErrNoCPU, len(p.cpus), p)
		}
		cpu = p.cpus[p.next]
		p.next++
		p.byTID[tid] = cpu
	}
	p.mu.Unlock()
	// Every time, not only the first: thread ids are reused.
	if err := setThreadCPU(cpu); err != nil {
		p.mu.Lock()
		if !had {
			delete(p.byTID, tid)
			p.next--
		}
		p.mu.Unlock()
		runtime.UnlockOSThread()
		return -1, err
	}
	return cpu, nil
}

// PinThread locks the calling goroutine to its thread and the thread to
// cpu, for the rest of the goroutine: the thread is not unlocked, it
// leaves with the goroutine. For workers placed by hand (Placement.Pin
// places them from a list).
func PinThread(cpu int) error {
	runtime.LockOSThread()
	return setThreadCPU(cpu)
}

// setThreadCPU narrows the calling thread to cpu.
func setThreadCPU(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("host: pin to CPU %d: %w", cpu, err)
	}
	return nil
}

// ThreadPinned reports whether the calling thread may run on fewer CPUs
// than the process could when it started (runtime.NumCPU): a worker pinned
// with sched_setaffinity, as Pin and the backends' own pinning do, whose
// goroutine is locked to it (Go never narrows a thread's CPUs itself).
// internal/fdwait uses it to keep such a goroutine sleeping in its thread:
// parking a locked goroutine on the runtime's poller hands its processor
// to another thread and back. One system call, about 140 ns here; a
// failing one says false.
func ThreadPinned() bool {
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) != nil {
		return false
	}
	return set.Count() < runtime.NumCPU()
}

// String says how workers are placed, for Info lines.
func (p *Placement) String() string {
	if p == nil {
		return "left to the scheduler"
	}
	list := p.cpus
	more := ""
	if len(list) > 8 {
		list, more = list[:8], fmt.Sprintf(" and %d more", len(p.cpus)-8)
	}
	parts := make([]string, len(list))
	for i, c := range list {
		parts[i] = strconv.Itoa(c)
	}
	return fmt.Sprintf("%s: CPUs %s%s", p.note, strings.Join(parts, ","), more)
}

func readInt(path string) (int, error) {
	s, err := readFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(s)
}

func readList(path string) []int {
	s, err := readFile(path)
	if err != nil {
		return nil
	}
	return kernelCPUList(s)
}
