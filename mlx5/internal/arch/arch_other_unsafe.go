//go:build !amd64 && !arm64

package arch

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// PublishDoorbell makes a batch of send WQEs visible to the device. This is
// the portable fallback: Go atomics are sequentially consistent, which is
// enough for ordinary memory; mlx5 hardware is not supported here.
func PublishDoorbell(dbrec *uint32, dbval uint32, uar *uint64, ctrl uint64) {
	atomic.StoreUint32(dbrec, dbval)
	// A plain store: the register need not be 8-byte aligned for a Go
	// atomic on 32-bit machines, and nothing here is real hardware.
	*uar = ctrl
}

// PublishDbrec stores v (big-endian bytes) into a receive doorbell record.
func PublishDbrec(dbrec *uint32, v uint32) { atomic.StoreUint32(dbrec, v) }

// ReleaseCQ stores v (big-endian bytes) into a CQ doorbell record.
func ReleaseCQ(dbrec *uint32, v uint32) { atomic.StoreUint32(dbrec, v) }

// LoadCQEHeader loads the last four bytes of a CQE as a big-endian word.
func LoadCQEHeader(p *byte) uint32 { return LoadCQEHeaderRaw(p) }

// LoadCQEHeaderRaw is LoadCQEHeader without a fence.
func LoadCQEHeaderRaw(p *byte) uint32 {
	// The CQE header is 4-byte aligned (CQEs are 64-byte aligned).
	v := atomic.LoadUint32((*uint32)(unsafe.Pointer(p)))
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], v)
	return binary.BigEndian.Uint32(b[:])
}

// Prefetch does nothing here.
func Prefetch(p *byte) {}
