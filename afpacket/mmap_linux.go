//go:build linux

package afpacket

import "golang.org/x/sys/unix"

// mapRegion maps the frame region: private anonymous memory, populated up
// front so the first packets do not fault. Transparent huge pages are asked
// for and not required.
func mapRegion(size int) ([]byte, error) {
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, err
	}
	_ = unix.Madvise(mem, unix.MADV_HUGEPAGE)
	return mem, nil
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

// unmap releases a mapping made by mapRegion or mapRing; nil is a no-op.
func unmap(mem []byte) {
	if mem != nil {
		_ = unix.Munmap(mem)
	}
}
