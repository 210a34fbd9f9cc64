//go:build dpdk && linux && amd64 && cgo

package eal

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"sync/atomic"
	"unsafe"

	"github.com/packetio/packetio/dpdk/internal/queue"
)

// Region is a memzone seen from Go: the frame memory of one device.
type Region struct {
	name  string
	Bytes []byte
	VA    uint64
}

// ReserveRegion reserves size bytes aligned to align on socket.
func ReserveRegion(name string, size, align, socket int) (*Region, error) {
	cn := C.CString(name)
	defer cfree(cn)
	var eb errBuf
	p := C.pio_region_reserve(cn, C.size_t(size), C.size_t(align), C.int(socket), eb.ptr())
	if p == nil {
		return nil, &Error{Op: "memzone", Errno: 12, Msg: C.GoString(eb.ptr())}
	}
	// The memzone is never moved and lives until Free.
	return &Region{name: name, Bytes: unsafe.Slice((*byte)(p), size), VA: uint64(uintptr(p))}, nil
}

// Free releases the memzone. The Bytes slice must not be used afterwards.
func (r *Region) Free() {
	cn := C.CString(r.name)
	defer cfree(cn)
	C.pio_region_free(cn)
	r.Bytes = nil
}

// Mempool is one queue's "packetio" mempool over a slice of the region,
// with its two rings seen from Go.
type Mempool struct {
	mp       unsafe.Pointer // struct rte_mempool *
	pool     *C.pio_pool
	VA       uint64 // the rte_mempool address mbufs carry in their pool field
	Supply   *queue.Ring
	Returned *queue.Ring
}

// NewMempool builds a mempool of n frames of frameSize bytes at region
// offset off, with rings of ringSize entries (a power of two, at least n).
func NewMempool(name string, r *Region, off, n, frameSize, ringSize, socket int) (*Mempool, error) {
	cn := C.CString(name)
	defer cfree(cn)
	var mp unsafe.Pointer
	var pool *C.pio_pool
	var eb errBuf
	addr := unsafe.Pointer(&r.Bytes[off])
	rc := C.pio_mempool_new(cn, addr, C.uint32_t(n), C.uint32_t(frameSize), C.uint32_t(ringSize), C.int(socket), &mp, &pool, eb.ptr())
	if err := eb.err("mempool", rc); err != nil {
		return nil, err
	}
	m := &Mempool{mp: mp, pool: pool, VA: uint64(uintptr(mp))}
	m.Supply = ringOver(&pool.supply)
	m.Returned = ringOver(&pool.returned)
	return m, nil
}

func ringOver(r *C.pio_ring) *queue.Ring {
	buf := unsafe.Slice((*uint64)(unsafe.Pointer(r.buf)), int(r.mask)+1)
	return queue.NewRingOver(buf, (*uint32)(unsafe.Pointer(&r.head)), (*uint32)(unsafe.Pointer(&r.tail)))
}

// Drops counts frees the returned ring refused: frames lost to Go.
func (m *Mempool) Drops() uint64 { return atomic.LoadUint64((*uint64)(unsafe.Pointer(&m.pool.drops))) }

// Empty counts allocations the supply could not satisfy.
func (m *Mempool) Empty() uint64 { return atomic.LoadUint64((*uint64)(unsafe.Pointer(&m.pool.empty))) }

// Free releases the mempool and its rings.
func (m *Mempool) Free() {
	C.pio_mempool_free(m.mp, m.pool)
	m.mp, m.pool = nil, nil
}

// Queue is one port queue as the queue package's PMD: each method is one
// cgo call. Calls counts them, so a test can prove one crossing per burst.
type Queue struct {
	Port, Index uint16
	Calls       uint64
}

var _ queue.PMD = (*Queue)(nil)

// TxBurst is rte_eth_tx_burst.
func (q *Queue) TxBurst(mbufs []uint64) int {
	if len(mbufs) == 0 {
		return 0
	}
	q.Calls++
	return int(C.pio_tx_burst(C.uint16_t(q.Port), C.uint16_t(q.Index), (*C.uint64_t)(unsafe.Pointer(unsafe.SliceData(mbufs))), C.uint16_t(len(mbufs))))
}

// RxBurst is rte_eth_rx_burst.
func (q *Queue) RxBurst(out []uint64) int {
	if len(out) == 0 {
		return 0
	}
	q.Calls++
	return int(C.pio_rx_burst(C.uint16_t(q.Port), C.uint16_t(q.Index), (*C.uint64_t)(unsafe.Pointer(unsafe.SliceData(out))), C.uint16_t(len(out))))
}

// Poke runs the driver's transmit completion.
func (q *Queue) Poke() {
	q.Calls++
	C.pio_tx_poke(C.uint16_t(q.Port), C.uint16_t(q.Index))
}
