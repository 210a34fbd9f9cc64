package numa

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maskWords is the node mask passed to the kernel: MaxNode+1 bits.
const maskWords = (MaxNode + 1) / 64

// Bind sets the policy of mem, a whole mapping of this process not yet
// touched, to MPOL_BIND|MPOL_F_STATIC_NODES on node. Pages already
// faulted in stay where they are (no MPOL_MF_MOVE): call it between mmap
// (without MAP_POPULATE) and Populate.
func Bind(mem []byte, node int) error {
	if len(mem) == 0 {
		return nil
	}
	if node < 0 || node > MaxNode {
		return fmt.Errorf("mbind: NUMA node %d: %w", node, ErrBadNode)
	}
	var mask [maskWords]uint64
	mask[node/64] = 1 << (node % 64)
	// maxnode counts one more bit than the mask holds: the kernel drops the
	// last one (mm/mempolicy.c get_nodes).
	_, _, e := unix.Syscall6(unix.SYS_MBIND, uintptr(unsafe.Pointer(unsafe.SliceData(mem))), uintptr(len(mem)),
		ModeBind|FlagStaticNodes, uintptr(unsafe.Pointer(&mask[0])), maskWords*64+1, 0)
	switch {
	case e == 0:
		return nil
	case e == unix.ENOSYS:
		return fmt.Errorf("mbind %d bytes to NUMA node %d: %w", len(mem), node, ErrNoNUMA)
	case e == unix.EINVAL:
		// The node has no memory, or the cpuset does not allow it.
		return fmt.Errorf("mbind %d bytes to NUMA node %d: %w (no memory on it, or not in this process's cpuset)", len(mem), node, e)
	}
	return fmt.Errorf("mbind %d bytes to NUMA node %d: %w", len(mem), node, e)
}

// PolicyOf reads the memory policy of the page holding b[0].
func PolicyOf(b []byte) (Policy, error) {
	if len(b) == 0 {
		return Policy{}, errors.New("get_mempolicy: empty range")
	}
	var mode int32
	var mask [maskWords]uint64
	_, _, e := unix.Syscall6(unix.SYS_GET_MEMPOLICY, uintptr(unsafe.Pointer(&mode)), uintptr(unsafe.Pointer(&mask[0])),
		maskWords*64+1, uintptr(unsafe.Pointer(unsafe.SliceData(b))), unix.MPOL_F_ADDR, 0)
	if e != 0 {
		return Policy{}, fmt.Errorf("get_mempolicy(MPOL_F_ADDR): %w", e)
	}
	p := Policy{Mode: int(mode) &^ modeFlags, Flags: int(mode) & modeFlags}
	for n := 0; n <= MaxNode; n++ {
		if mask[n/64]&(1<<(n%64)) != 0 {
			p.Nodes = append(p.Nodes, n)
		}
	}
	return p, nil
}

// modeFlags are the flag bits the kernel ORs into the mode it reports
// (MPOL_F_STATIC_NODES, MPOL_F_RELATIVE_NODES, MPOL_F_NUMA_BALANCING).
const modeFlags = 1<<15 | 1<<14 | 1<<13

// Populate faults in every page of mem for writing (MADV_POPULATE_WRITE),
// so a bound region gets all of its memory, on its node, at open: a node
// without room fails here rather than on the fast path. A kernel older
// than 5.14 refuses the advice; the pages are then touched one by one.
func Populate(mem []byte) error {
	if len(mem) == 0 {
		return nil
	}
	err := unix.Madvise(mem, unix.MADV_POPULATE_WRITE)
	if errors.Is(err, unix.EINVAL) {
		for i := 0; i < len(mem); i += unix.Getpagesize() {
			mem[i] = 0
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("populate %d bytes of bound memory: %w (the node has no room for them)", len(mem), err)
	}
	return nil
}

// Alloc maps size bytes of private anonymous memory bound to node and
// faults them all in. Release gives them back.
func Alloc(size, node int) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("map %d bytes: not a size", size)
	}
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("map %d bytes of frame memory: %w", size, err)
	}
	if err := Bind(mem, node); err != nil {
		_ = unix.Munmap(mem)
		return nil, err
	}
	if err := Populate(mem); err != nil {
		_ = unix.Munmap(mem)
		return nil, err
	}
	return mem, nil
}

// Release gives the pages of a mapping from Alloc back to the system but
// keeps its address range: a frame slice taken before Close may still
// point into it, and touching an unmapped page is a SIGSEGV no recover
// catches. The range then reads as zeros (MADV_DONTNEED on private
// anonymous memory); only the address space stays taken.
func Release(mem []byte) {
	if len(mem) > 0 {
		_ = unix.Madvise(mem, unix.MADV_DONTNEED)
	}
}
