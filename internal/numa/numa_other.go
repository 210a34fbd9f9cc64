//go:build !linux

package numa

import "fmt"

// Bind is refused off Linux.
func Bind(mem []byte, node int) error {
	return fmt.Errorf("mbind: %w", ErrNoNUMA)
}

// PolicyOf is refused off Linux.
func PolicyOf(b []byte) (Policy, error) {
	return Policy{}, fmt.Errorf("get_mempolicy: %w", ErrNoNUMA)
}

// Populate does nothing off Linux.
func Populate(mem []byte) error { return nil }

// Alloc is refused off Linux.
func Alloc(size, node int) ([]byte, error) {
	return nil, fmt.Errorf("map bound memory: %w", ErrNoNUMA)
}

// Release does nothing off Linux.
func Release(mem []byte) {}

// Choose follows nothing off Linux and refuses a node.
func Choose(sysRoot, ifname string, ifindex, want int) (int, error) {
	if want == Unset {
		return Unset, nil
	}
	return Unset, fmt.Errorf("NUMA node %d: %w", want, ErrNoNUMA)
}
