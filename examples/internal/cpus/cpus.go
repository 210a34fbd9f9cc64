//go:build linux

// Package cpus is the examples' -cpu flag: a list of CPUs to pin workers
// to, checked against the CPUs this process may run on, and the pinning of
// a worker goroutine's thread.
package cpus

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/host"
)

// Parse reads a -cpu list ("1", "1,2", "0-3"); "" is none. A CPU the
// process cannot run on (one the machine has not got, or one outside its
// affinity mask) is refused, by number.
func Parse(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	list, err := host.ParseCPUList(s)
	if err != nil {
		return nil, fmt.Errorf("-cpu %q: %w", s, err)
	}
	ok, err := Allowed()
	if err != nil {
		return nil, err
	}
	for _, c := range list {
		if !contains(ok, c) {
			return nil, fmt.Errorf("-cpu: there is no CPU %d here (this program may run on CPUs %s)", c, join(ok))
		}
	}
	return list, nil
}

// Allowed lists the CPUs this process may run on, in order.
func Allowed() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("the process's CPUs: %w", err)
	}
	var out []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// Measured is the CPU a single measured worker runs on by default: CPU 1
// when the process may use CPUs 0 and 1 (the feeder, if any, takes CPU 0),
// and none (the scheduler decides) otherwise.
func Measured() []int {
	ok, err := Allowed()
	if err != nil || !contains(ok, 0) || !contains(ok, 1) {
		return nil
	}
	return []int{1}
}

// For is the CPU of worker i: the list in turn, or -1 (unpinned) for none.
func For(list []int, i int) int {
	if len(list) == 0 {
		return -1
	}
	return list[i%len(list)]
}

// Pin locks the calling goroutine to its thread and the thread to cpu, for
// the rest of the goroutine; cpu < 0 does nothing. The thread is not
// unlocked: it leaves with the goroutine.
func Pin(cpu int) error {
	if cpu < 0 {
		return nil
	}
	return host.PinThread(cpu)
}

func contains(l []int, c int) bool {
	for _, x := range l {
		if x == c {
			return true
		}
	}
	return false
}

func join(l []int) string {
	s := make([]string, len(l))
	for i, c := range l {
		s[i] = fmt.Sprint(c)
	}
	return strings.Join(s, ",")
}
