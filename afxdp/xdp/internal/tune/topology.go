package tune

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
// way internal/affinity reads it. A CPU missing from a map is taken to be
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
		return t, fmt.Errorf("tune: read CPU topology: %w", err)
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
			if l := parseCPUList(s); len(l) > 0 {
				t.Siblings[c] = l
			}
		}
		if s, err := readFile(filepath.Join(dir, "cache/index3/shared_cpu_list")); err == nil {
			if l := parseCPUList(s); len(l) > 0 {
				t.Complex[c] = l
			}
		}
	}
	if seen == 0 {
		return t, errors.New("tune: read CPU topology: no CPUs under " + base)
	}
	return t, nil
}

// parseCPUList parses a kernel CPU list ("0-3,8,10-11") into sorted,
// distinct CPUs. Malformed or backwards parts and CPUs above MaxCPU are
// skipped.
func parseCPUList(s string) []int {
	set := map[int]bool{}
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a > MaxCPU {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b > MaxCPU {
				continue
			}
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
