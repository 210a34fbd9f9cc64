//go:build linux

package afpacket

import "golang.org/x/sys/unix"

// allocRegion allocates the frame region as Go memory, touched page by page
// up front so the first packets do not fault. Nothing in it is shared with
// the kernel, so it need not be a mapping of its own; being Go memory, it
// stays valid as long as anything refers to it: a Region slice a caller kept
// past Close reads and writes stale frames instead of faulting, and the
// memory goes back to the runtime once the last such slice is dropped.
// (Unmapping at Close made such a slice a SIGSEGV; keeping a retired mapping
// for ever would leak address space with every Open.)
func allocRegion(size int) []byte {
	mem := make([]byte, size)
	for i := 0; i < len(mem); i += pageSize {
		mem[i] = 0
	}
	return mem
}

// mapRing maps the receive ring the kernel set up on fd (PACKET_RX_RING),
// shared with the kernel. It asks for locked pages first and falls back to
// unlocked ones when RLIMIT_MEMLOCK says no.
func mapRing(fd, size int) ([]byte, error) {
	mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_LOCKED)
	if err != nil {
		mem, err = unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	}
	return mem, err
}

// unmap releases a mapping made by mapRing; nil is a no-op.
func unmap(mem []byte) {
	if mem != nil {
		_ = unix.Munmap(mem)
	}
}
