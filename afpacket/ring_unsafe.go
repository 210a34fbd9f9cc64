package afpacket

import (
	"sync/atomic"
	"unsafe"
)

// The block status word is the only field of the ring that both sides write.
// The kernel fills a block, issues smp_wmb() and then stores TP_STATUS_USER
// into block_status (prb_close_block in net/packet/af_packet.c); our atomic
// load pairs with that barrier, so every header and packet byte of the block
// is visible once we see USER. Handing the block back is an atomic store of
// TP_STATUS_KERNEL after our last read of the block; the kernel reads the
// status after smp_rmb() before it reuses the block (prb_dispatch_next_block
// and prb_queue_frozen), so it never overwrites bytes we are still reading.

// statusWord is block_status of the block that starts at b[0]. Blocks start
// on page boundaries (or, in tests, on a Go allocation aligned to at least
// 8), so the word is 4-byte aligned.
func statusWord(b []byte) *uint32 {
	return (*uint32)(unsafe.Pointer(&b[bdBlockStatus]))
}

// loadStatus reads block_status with acquire ordering (pairs with the
// kernel's smp_wmb before it publishes TP_STATUS_USER).
func loadStatus(b []byte) uint32 { return atomic.LoadUint32(statusWord(b)) }

// storeStatus writes block_status with release ordering (pairs with the
// kernel's smp_rmb before it reads TP_STATUS_KERNEL and refills the block).
func storeStatus(b []byte, v uint32) { atomic.StoreUint32(statusWord(b), v) }

// A TPACKET_V2 slot's tp_status word is its first field; the kernel stores
// TP_STATUS_USER after smp_wmb() once the slot is written (tpacket_rcv), and
// reads it after smp_rmb() before it writes the slot again, refusing one that
// is not TP_STATUS_KERNEL. Slots start on TPACKET_ALIGNMENT (16) boundaries
// inside page-aligned blocks, so the word is 4-byte aligned.

// loadSlotStatus reads tp_status of the V2 slot that starts at b[0] with
// acquire ordering.
func loadSlotStatus(b []byte) uint32 {
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&b[h2Status])))
}

// storeSlotStatus writes tp_status of the V2 slot that starts at b[0] with
// release ordering, after the last read of the slot.
func storeSlotStatus(b []byte, v uint32) {
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b[h2Status])), v)
}
