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

// recvErrqueue reads up to len(msgs) messages from fd's error queue in one
// recvmmsg(2), without waiting, and returns how many it read, or the errno
// when it read none (EAGAIN: the queue is empty). The headers and the
// control buffers they point to live in the TxQueue's stamper (Go heap,
// kept alive by it); the kernel writes only into them.
func recvErrqueue(fd int, msgs []unix.Mmsghdr) (int, unix.Errno) {
	if len(msgs) == 0 {
		return 0, 0
	}
	r, _, e := unix.Syscall6(unix.SYS_RECVMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}
