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
