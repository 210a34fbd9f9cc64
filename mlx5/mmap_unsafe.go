//go:build linux && cgo && mlx5 && (amd64 || arm64)

package mlx5

import (
	"syscall"
	"unsafe"

	"github.com/packetio/packetio/internal/numa"
)

// mapFrames maps the frame region: n bytes, anonymous, populated up front
// so the card never faults on it, with transparent huge pages asked for
// (advice only). Unless node is numa.Unset, the mapping is bound to node
// before any page is touched, then populated.
func mapFrames(n, node int) ([]byte, error) {
	if node == numa.Unset {
		mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE,
			syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_POPULATE)
		if err != nil {
			return nil, err
		}
		_ = syscall.Madvise(mem, 14) // MADV_HUGEPAGE
		return mem, nil
	}
	mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		return nil, err
	}
	_ = syscall.Madvise(mem, 14) // MADV_HUGEPAGE, before the pages exist
	if err = numa.Bind(mem, node); err == nil {
		err = numa.Populate(mem)
	}
	if err != nil {
		_ = syscall.Munmap(mem)
		return nil, err
	}
	return mem, nil
}

// unmapFrames releases what mapFrames mapped.
func unmapFrames(mem []byte) { _ = syscall.Munmap(mem) }

// uintptrOf is the address of the first byte of mem: the device address of
// region offset 0 (mem is an mmap, never moved by the Go runtime).
func uintptrOf(mem []byte) uintptr { return uintptr(unsafe.Pointer(&mem[0])) }
