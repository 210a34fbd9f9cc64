package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/testenv"
)

// fakeSys writes a sysfs tree: 8 CPUs, 4 cores with 2 threads each (CPUs
// 0-3 first threads, 4-7 their siblings), two cache complexes (cores 0-1 and
// 2-3), complex 2 on NUMA node 1 with the NIC "nic0".
func fakeSys(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	write := func(path, s string) {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for c := 0; c < 8; c++ {
		core := c % 4
		base := fmt.Sprintf("devices/system/cpu/cpu%d/", c)
		write(base+"topology/core_id", fmt.Sprint(core))
		write(base+"topology/physical_package_id", "0")
		llc, node := "0-1,4-5", 0
		if core >= 2 {
			llc, node = "2-3,6-7", 1
		}
		write(base+"cache/index3/shared_cpu_list", llc)
		write(base+fmt.Sprintf("node%d/cpulist", node), "")
	}
	write("class/net/nic0/device/numa_node", "1")
	return root
}

func all(n int) func() (map[int]bool, error) {
	return func() (map[int]bool, error) {
		m := map[int]bool{}
		for c := 0; c < n; c++ {
			m[c] = true
		}
		return m, nil
	}
}

func TestPackedOrder(t *testing.T) {
	sys := fakeSys(t)
	for _, tc := range []struct {
		ifname string
		want   []int
	}{
		{"nic0", []int{2, 3, 0, 1, 6, 7, 4, 5}},
		{"", []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"../../etc", []int{0, 1, 2, 3, 4, 5, 6, 7}},
	} {
		p, err := newAt(sys, tc.ifname, nil, all(8))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p.cpus, tc.want) {
			t.Errorf("%q: order %v, want %v", tc.ifname, p.cpus, tc.want)
		}
	}
}

func TestPackedNeverRevisitsAComplex(t *testing.T) {
	p, err := newAt(fakeSys(t), "nic0", nil, all(8))
	if err != nil {
		t.Fatal(err)
	}
	llc := func(c int) int { return c % 4 / 2 }
	left := map[int]bool{}
	for i, c := range p.cpus[:4] { // the physical cores
		if i > 0 && llc(c) != llc(p.cpus[i-1]) {
			left[llc(p.cpus[i-1])] = true
		}
		if left[llc(c)] {
			t.Fatalf("order %v comes back to complex %d", p.cpus, llc(c))
		}
	}
}

func TestNoTopologyLeavesItToTheScheduler(t *testing.T) {
	p, err := newAt(t.TempDir(), "nic0", nil, all(4))
	if err != nil || p != nil {
		t.Fatalf("newAt = %v, %v; want nil, nil", p, err)
	}
	if got := p.String(); got != "left to the scheduler" {
		t.Fatalf("nil String = %q", got)
	}
	if cpu, err := p.Pin(); cpu != -1 || err != nil {
		t.Fatalf("nil Pin = %d, %v", cpu, err)
	}
}

func TestExplicitList(t *testing.T) {
	// Under taskset a CPU above NumCPU can be valid: only the mask decides.
	mask := func() (map[int]bool, error) { return map[int]bool{3: true, 200: true}, nil }
	for _, tc := range []struct {
		want []int
		ok   bool
	}{
		{[]int{200, 3}, true},
		{[]int{3, 4}, false},
		{[]int{-1}, false},
		{[]int{MaxCPU + 1}, false},
		{[]int{3, 3}, false},
	} {
		p, err := newAt(t.TempDir(), "", tc.want, mask)
		if (err == nil) != tc.ok {
			t.Errorf("%v: err %v", tc.want, err)
		}
		if tc.ok && !reflect.DeepEqual(p.cpus, tc.want) {
			t.Errorf("%v: order %v", tc.want, p.cpus)
		}
	}
}

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   []int
		kernel []int // what kernelCPUList makes of it
		bad    bool
	}{
		{"0-3,8,10-11", []int{0, 1, 2, 3, 8, 10, 11}, []int{0, 1, 2, 3, 8, 10, 11}, false},
		{"", nil, []int{}, false},
		{"3,1,2", []int{3, 1, 2}, []int{1, 2, 3}, false},
		{"5-2,x,7", nil, []int{7}, true},
		{"-3,4-", nil, []int{}, true},
		{"1023,1024", nil, []int{1023}, true},
	} {
		got, err := ParseCPUList(tc.in)
		if (err != nil) != tc.bad || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.bad)
		}
		if k := kernelCPUList(tc.in); !reflect.DeepEqual(k, tc.kernel) {
			t.Errorf("kernelCPUList(%q) = %v, want %v", tc.in, k, tc.kernel)
		}
	}
	if got := kernelCPUList("0-1023,0-1023"); len(got) != MaxCPU+1 {
		t.Errorf("kernelCPUList is not bounded: %d entries", len(got))
	}
}

func TestSafeName(t *testing.T) {
	for _, tc := range []struct {
		s  string
		ok bool
	}{{"eth0", true}, {"", false}, {"..", false}, {"a/b", false}, {"averyveryverylongname", false}} {
		if safeName(tc.s) != tc.ok {
			t.Errorf("safeName(%q) = %v", tc.s, !tc.ok)
		}
	}
}

// The real machine: two workers on two goroutines get two different CPUs, a
// worker pinning twice keeps its CPU, and running out is an error.
func TestPinOnThisMachine(t *testing.T) {
	m, err := allowed()
	if err != nil {
		t.Fatal(err)
	}
	var cpus []int
	for c := range m {
		cpus = append(cpus, c)
	}
	if len(cpus) < 2 {
		testenv.CannotRun(t, "this process may run on %d CPU; the check needs 2", len(cpus))
	}
	p, err := New("", cpus[:2])
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		cpu int
		err error
	}
	results := make(chan result)
	release := make(chan struct{})
	for i := 0; i < 3; i++ {
		go func() {
			cpu, err := p.Pin()
			if err == nil {
				if again, err2 := p.Pin(); again != cpu || err2 != nil {
					err = fmt.Errorf("second Pin = %d, %v; want %d", again, err2, cpu)
				}
				// Hold the thread until all have pinned, so thread ids differ.
				defer runtime.UnlockOSThread()
			}
			results <- result{cpu, err}
			<-release
		}()
	}
	got := make([]int, 3)
	errs := make([]error, 3)
	for i := range got {
		r := <-results
		got[i], errs[i] = r.cpu, r.err
	}
	close(release)
	placed, noCPU := map[int]bool{}, 0
	for i := range got {
		switch {
		case errors.Is(errs[i], ErrNoCPU):
			noCPU++
		case errs[i] != nil:
			t.Fatal(errs[i])
		default:
			placed[got[i]] = true
		}
	}
	if len(placed) != 2 || noCPU != 1 {
		t.Fatalf("placed on %v, %d refused; want 2 CPUs and 1 refusal", placed, noCPU)
	}
	if !strings.Contains(p.String(), "as asked") {
		t.Fatalf("String = %q", p.String())
	}
}

// TestThreadPinned: false on a test goroutine's thread, true once
// PinThread narrows the thread to one CPU, false again on a thread
// narrowed to all the process started with.
func TestThreadPinned(t *testing.T) {
	if runtime.NumCPU() < 2 {
		testenv.CannotRun(t, "a pinned thread needs a machine of 2 CPUs or more (this one has %d)", runtime.NumCPU())
	}
	if ThreadPinned() {
		t.Fatal("ThreadPinned() = true on an unpinned thread")
	}
	got := make(chan [2]bool)
	go func() {
		var all unix.CPUSet
		if unix.SchedGetaffinity(0, &all) != nil || PinThread(runtime.NumCPU()-1) != nil {
			got <- [2]bool{false, true}
			return
		}
		pinned := ThreadPinned()
		_ = unix.SchedSetaffinity(0, &all)
		got <- [2]bool{pinned, ThreadPinned()}
	}()
	if r := <-got; !r[0] || r[1] {
		t.Fatalf("ThreadPinned() on one CPU = %v, back on all = %v; want true, false", r[0], r[1])
	}
}
