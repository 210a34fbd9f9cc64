//go:build linux && cgo && mlx5 && (amd64 || arm64)

package mlx5

import (
	"syscall"
	"unsafe"
)

// setAffinity pins the calling thread to cpu with sched_setaffinity. A
// failure leaves the thread where it was.
func setAffinity(cpu int) {
	var set [1024 / 64]uint64
	set[cpu/64] |= 1 << (cpu % 64)
	// sched_setaffinity(0 = this thread, size, mask)
	syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(set), uintptr(unsafe.Pointer(&set)))
}

// uintptrOf is the address of the first byte of mem: the device address of
// region offset 0 (mem is an mmap, never moved by the Go runtime).
func uintptrOf(mem []byte) uintptr { return uintptr(unsafe.Pointer(&mem[0])) }
