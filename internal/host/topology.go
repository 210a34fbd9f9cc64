package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// MaxCPU is the highest CPU number this package reads or writes.
const MaxCPU = 1023

// Topology is what placement needs to know about the host's CPUs, read the
// way Placement reads it. A CPU missing from a map is taken to be
// alone on its core, or in the one complex of every CPU without cache
// information.
type Topology struct {
	// Siblings maps a CPU to the logical CPUs of its physical core, itself
	// included (topology/thread_siblings_list).
	Siblings map[int][]int
	// Complex maps a CPU to the CPUs sharing its last-level cache, itself
	// included (cache/index3/shared_cpu_list): a CCX on EPYC, a socket on
	// most Intel parts.
	Complex map[int][]int
}

// ReadTopology reads the topology of every CPU under
// <sysRoot>/devices/system/cpu. Files that are missing leave the CPU out of
// that map; a machine that shows no CPU at all is an error.
func ReadTopology(sysRoot string) (Topology, error) {
	t := Topology{Siblings: map[int][]int{}, Complex: map[int][]int{}}
	base := filepath.Join(sysRoot, "devices/system/cpu")
	ents, err := os.ReadDir(base)
	if err != nil {
		return t, fmt.Errorf("host: read CPU topology: %w", err)
	}
	seen := 0
	for _, e := range ents {
		num, ok := strings.CutPrefix(e.Name(), "cpu")
		if !ok {
			continue
		}
		c, err := strconv.Atoi(num)
		if err != nil || c < 0 || c > MaxCPU {
			continue
		}
		seen++
		dir := filepath.Join(base, e.Name())
		if s, err := readFile(filepath.Join(dir, "topology/thread_siblings_list")); err == nil {
			if l := kernelCPUList(s); len(l) > 0 {
				t.Siblings[c] = l
			}
		}
		if s, err := readFile(filepath.Join(dir, "cache/index3/shared_cpu_list")); err == nil {
			if l := kernelCPUList(s); len(l) > 0 {
				t.Complex[c] = l
			}
		}
	}
	if seen == 0 {
		return t, errors.New("host: read CPU topology: no CPUs under " + base)
	}
	return t, nil
}

// ParseCPUList parses a CPU list as sysfs and taskset write them
// ("0-3,8,10-11") and as users type them, in its order, and refuses a
// malformed or backwards part or a CPU above MaxCPU with an error naming
// it.
func ParseCPUList(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		a, b, err := cpuRange(part)
		if err != nil {
			return nil, fmt.Errorf("CPU list %q: %w", s, err)
		}
		for c := a; c <= b && b >= 0; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}

// kernelCPUList is ParseCPUList for what the kernel wrote: sorted and
// distinct, a bad part skipped rather than refused.
func kernelCPUList(s string) []int {
	set := map[int]bool{}
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		a, b, err := cpuRange(part)
		if err != nil {
			continue
		}
		for c := a; c <= b; c++ {
			set[c] = true
		}
	}
	out := make([]int, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Ints(out)
	return out
}

// cpuRange parses one part of a CPU list, "3" or "0-3"; an empty part is
// the empty range (-1, -2).
func cpuRange(part string) (lo, hi int, err error) {
	part = strings.TrimSpace(part)
	if part == "" {
		return -1, -2, nil
	}
	l, h, isRange := strings.Cut(part, "-")
	a, err := strconv.Atoi(l)
	if err != nil || a < 0 || a > MaxCPU {
		return 0, 0, fmt.Errorf("%q is not a CPU number from 0 to %d", part, MaxCPU)
	}
	b := a
	if isRange {
		if b, err = strconv.Atoi(h); err != nil || b < a || b > MaxCPU {
			return 0, 0, fmt.Errorf("%q is not a range of CPUs from 0 to %d", part, MaxCPU)
		}
	}
	return a, b, nil
}

// formatCPUList writes CPUs as a kernel CPU list, ranges folded.
func formatCPUList(cpus []int) string {
	l := append([]int(nil), cpus...)
	sort.Ints(l)
	var parts []string
	for i := 0; i < len(l); {
		j := i
		for j+1 < len(l) && l[j+1] <= l[j]+1 {
			j++
		}
		if l[j] == l[i] {
			parts = append(parts, strconv.Itoa(l[i]))
		} else {
			parts = append(parts, strconv.Itoa(l[i])+"-"+strconv.Itoa(l[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
