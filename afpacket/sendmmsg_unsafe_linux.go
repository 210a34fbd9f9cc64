//go:build linux

package afpacket

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// sendmmsg sends msgs on fd in one system call and returns how many the
// kernel took, or the errno when it took none. The message headers and their
// iovec arrays live in the TxQueue (Go heap, never moved, kept alive by the
// queue); the iovecs point into the mmapped region or, for TransmitGather,
// into the caller's slices, which the caller keeps alive across the call. The
// kernel copies every byte into an skb before returning, so nothing is
// referenced afterwards.
func sendmmsg(fd int, msgs []unix.Mmsghdr) (int, unix.Errno) {
	if len(msgs) == 0 {
		return 0, 0
	}
	r, _, e := unix.Syscall6(unix.SYS_SENDMMSG, uintptr(fd), uintptr(unsafe.Pointer(&msgs[0])), uintptr(len(msgs)), unix.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}
