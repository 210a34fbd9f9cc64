package xdp

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapRing maps one ring of n entries of entry bytes from the socket at its
// fixed page offset, and returns its shared words and its entries. The
// kernel reports where producer, consumer, flags and entries sit in the
// mapping (off); nothing here assumes a layout.
func mapRing[T any](fd int, pgoff int64, off unix.XDPRingOffset, n uint32) (ringShared, []T, []byte, error) {
	var zero T
	length := off.Desc + uint64(n)*uint64(unsafe.Sizeof(zero))
	mem, err := unix.Mmap(fd, pgoff, int(length), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return ringShared{}, nil, nil, fmt.Errorf("mmap ring at %#x (%d bytes): %w", pgoff, length, err)
	}
	for _, o := range []uint64{off.Producer, off.Consumer, off.Flags} {
		if o+4 > uint64(len(mem)) || o%4 != 0 {
			_ = unix.Munmap(mem)
			return ringShared{}, nil, nil, fmt.Errorf("the kernel placed a ring index at %d of a %d-byte mapping", o, len(mem))
		}
	}
	if off.Desc%8 != 0 {
		_ = unix.Munmap(mem)
		return ringShared{}, nil, nil, fmt.Errorf("the kernel placed ring entries at unaligned offset %d", off.Desc)
	}
	word := func(o uint64) *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(&mem[o])) }
	s := ringShared{producer: word(off.Producer), consumer: word(off.Consumer), mask: n - 1, size: n}
	if off.Flags != 0 {
		s.flags = word(off.Flags)
	}
	ents := unsafe.Slice((*T)(unsafe.Pointer(&mem[off.Desc])), n)
	return s, ents, mem, nil
}

// Ring entry layouts the kernel uses, checked at compile time: a fill or
// completion entry is a u64 address, an rx or tx entry a struct xdp_desc.
var (
	_ [8]byte  = [unsafe.Sizeof(uint64(0))]byte{}
	_ [16]byte = [unsafe.Sizeof(unix.XDPDesc{})]byte{}
)

// offsetIn returns where b starts inside mem, when it does.
func offsetIn(mem, b []byte) (uint64, bool) {
	if len(mem) == 0 || cap(b) == 0 {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < base || p >= base+uintptr(len(mem)) {
		return 0, false
	}
	return uint64(p - base), true
}

// remapZero replaces the mapping b in place with fresh private anonymous
// memory of the same size (mmap MAP_FIXED over it): its pages are freed,
// and the range reads as zeros until unmapped. See umem.release.
func remapZero(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	r, _, e := unix.Syscall6(unix.SYS_MMAP, addr, uintptr(len(b)), unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED|unix.MAP_NORESERVE, ^uintptr(0), 0)
	if e != 0 {
		return e
	}
	if r != addr {
		return fmt.Errorf("mmap MAP_FIXED moved the range from %#x to %#x", addr, r)
	}
	return nil
}
