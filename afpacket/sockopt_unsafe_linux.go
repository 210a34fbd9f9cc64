//go:build linux

package afpacket

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// getsockoptBytes reads a socket option into buf without allocating (the
// x/sys helpers return a fresh struct per call). The kernel writes at most
// len(buf) bytes.
func getsockoptBytes(fd, level, opt int, buf []byte) error {
	l := uint32(len(buf))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt), uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return e
	}
	return nil
}
