package xdp

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The AF_XDP socket options that pass structs, which x/sys has no wrapper
// for. Each hands the kernel a pointer to a Go value that lives on this
// stack frame for the whole call.

// registerUMEM is setsockopt(SOL_XDP, XDP_UMEM_REG) for the mapping mem.
func registerUMEM(fd int, mem []byte, chunk, headroom, flags, txMetaLen uint32) error {
	reg := unix.XDPUmemReg{
		Addr:            uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem)))),
		Len:             uint64(len(mem)),
		Size:            chunk,
		Headroom:        headroom,
		Flags:           flags,
		Tx_metadata_len: txMetaLen,
	}
	return setsockopt(fd, unix.SOL_XDP, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg))
}

// mmapOffsets is getsockopt(SOL_XDP, XDP_MMAP_OFFSETS): where each ring's
// producer, consumer, flags and descriptors sit in its mapping.
func mmapOffsets(fd int) (unix.XDPMmapOffsets, error) {
	var off unix.XDPMmapOffsets
	n := uint32(unsafe.Sizeof(off))
	err := getsockopt(fd, unix.SOL_XDP, unix.XDP_MMAP_OFFSETS, unsafe.Pointer(&off), &n)
	return off, err
}

// kernelStatistics is getsockopt(SOL_XDP, XDP_STATISTICS).
func kernelStatistics(fd int) (unix.XDPStatistics, error) {
	var st unix.XDPStatistics
	n := uint32(unsafe.Sizeof(st))
	err := getsockopt(fd, unix.SOL_XDP, unix.XDP_STATISTICS, unsafe.Pointer(&st), &n)
	return st, err
}

func setsockopt(fd, level, opt int, p unsafe.Pointer, n uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt), uintptr(p), n, 0)
	if e != 0 {
		return e
	}
	return nil
}

func getsockopt(fd, level, opt int, p unsafe.Pointer, n *uint32) error {
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt), uintptr(p), uintptr(unsafe.Pointer(n)), 0)
	if e != 0 {
		return e
	}
	return nil
}

// kick is sendto(fd, NULL, 0, MSG_DONTWAIT, NULL, 0): tells the kernel the
// transmit ring has work. Raw, so that it costs no allocation.
func kick(fd int) unix.Errno {
	_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	return e
}

// wakeRx is recvfrom(fd, NULL, 0, MSG_DONTWAIT, NULL, NULL): wakes a driver
// that parked its receive side.
func wakeRx(fd int) unix.Errno {
	_, _, e := unix.Syscall6(unix.SYS_RECVFROM, uintptr(fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	return e
}
