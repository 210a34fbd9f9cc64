package queue

import "encoding/binary"

// The frame layout. Every frame of the region is one mempool object:
//
//	[ 64 B mempool object header | 128 B struct rte_mbuf | 128 B headroom | packet ... ]
//
// so a frame offset maps to its mbuf and back with an add and a mask, never a
// lookup. The sizes are checked against the DPDK headers by the eal package
// (a tagged test) and against the built mempool at Open.
const (
	ObjHeader   = 64  // struct rte_mempool_objhdr, cache-line aligned on amd64
	MbufSize    = 128 // sizeof(struct rte_mbuf)
	Headroom    = 128 // RTE_PKTMBUF_HEADROOM
	BufferStart = ObjHeader + MbufSize
	DataStart   = BufferStart + Headroom
)

// Field offsets inside struct rte_mbuf (DPDK 22.11 and 23.11 agree).
const (
	offBufAddr   = 0
	offBufIOVA   = 8
	offDataOff   = 16 // rearm_data: data_off, refcnt, nb_segs, port
	offOlFlags   = 24
	offPktLen    = 36
	offDataLen   = 40
	offBufLen    = 54
	offPool      = 56
	offNext      = 64
	offTxOffload = 72
)

// Offsets exports the field offsets so the eal package can compare them
// with offsetof in the headers.
var Offsets = map[string]int{
	"buf_addr": offBufAddr, "buf_iova": offBufIOVA, "data_off": offDataOff,
	"ol_flags": offOlFlags, "pkt_len": offPktLen, "data_len": offDataLen,
	"buf_len": offBufLen, "pool": offPool, "next": offNext, "tx_offload": offTxOffload,
}

// ol_flags bits (RTE_MBUF_F_*), the same in 22.11 and 23.11.
const (
	RxIPCksumGood uint64 = 1 << 7
	RxL4CksumGood uint64 = 1 << 8
	TxIPv4        uint64 = 1 << 55
	TxIPv6        uint64 = 1 << 56
	TxIPCksum     uint64 = 1 << 54
	TxTCPCksum    uint64 = 1 << 52
	TxUDPCksum    uint64 = 3 << 52
	TxTCPSeg      uint64 = 1 << 50
)

// PortInvalid is RTE_MBUF_PORT_INVALID.
const PortInvalid = 0xffff

// rearm is the rearm_data word of a fresh single-segment mbuf: data_off
// Headroom, refcnt 1, nb_segs 1, port invalid.
const rearm = uint64(Headroom) | 1<<16 | 1<<32 | PortInvalid<<48

// txRearm is the rearm_data word of a packet to send but its data_off:
// refcnt 1, nb_segs 1, port invalid. Tx keeps a copy in a field, read at run
// time, so the compiler writes the word with one store, not the four it
// makes of a word that is mostly a constant (1.3 ns of a 22-ns packet in
// BenchmarkTransmitNull).
const txRearm = uint64(1<<16 | 1<<32 | PortInvalid<<48)

var ne = binary.NativeEndian

// mbufs reads and writes struct rte_mbuf fields inside the region with
// ordinary slice indexing: no unsafe, and a bad offset panics in a test
// rather than scribbling.
type mbufs []byte

// initBuffer does what rte_pktmbuf_init does for the frame at off: the
// buffer address, its IOVA and length, and the owning pool. The fake driver
// and tests use it; DPDK does it for real mempools.
func (r mbufs) initBuffer(off, regionVA, pool uint64, frameSize int) {
	m := off + ObjHeader
	ne.PutUint64(r[m+offBufAddr:], regionVA+off+BufferStart)
	ne.PutUint64(r[m+offBufIOVA:], regionVA+off+BufferStart)
	ne.PutUint16(r[m+offBufLen:], uint16(frameSize-BufferStart))
	r.resetRx(m, pool)
}

// resetRx prepares the mbuf at m to be handed to a driver for receive.
func (r mbufs) resetRx(m, pool uint64) {
	ne.PutUint64(r[m+offDataOff:], rearm)
	ne.PutUint64(r[m+offOlFlags:], 0)
	ne.PutUint64(r[m+offNext:], 0)
	ne.PutUint64(r[m+offPool:], pool)
}

// prepareTx writes a single-segment packet of n bytes into the buffer,
// owned by pool, with the given offload flags and lengths; rearm is the
// rearm_data word, txRearm with the packet's data_off. The mbuf is taken as
// an array, so the stores need one bounds check, not one each (the
// transmit loop runs this per packet).
func (r mbufs) prepareTx(m, pool, rearm uint64, n uint32, flags, txOffload uint64) {
	b := (*[MbufSize]byte)(r[m : m+MbufSize])
	ne.PutUint64(b[offDataOff:], rearm)
	ne.PutUint64(b[offOlFlags:], flags)
	ne.PutUint32(b[offPktLen:], n)
	ne.PutUint16(b[offDataLen:], uint16(n))
	ne.PutUint64(b[offNext:], 0)
	ne.PutUint64(b[offPool:], pool)
	ne.PutUint64(b[offTxOffload:], txOffload)
}

// rxRead returns what a receive needs from the mbuf at m.
func (r mbufs) rxRead(m uint64) (dataOff uint16, segs uint16, dataLen uint16, flags uint64) {
	w := ne.Uint64(r[m+offDataOff:])
	return uint16(w), uint16(w >> 32), ne.Uint16(r[m+offDataLen:]), ne.Uint64(r[m+offOlFlags:])
}

// next is the address of the mbuf's next segment, 0 for the last.
func (r mbufs) next(m uint64) uint64 { return ne.Uint64(r[m+offNext:]) }

// txOffload packs l2_len (7 bits), l3_len (9), l4_len (8) and tso_segsz (16)
// as the tx_offload bitfield does.
func txOffload(l2, l3, l4, segsz uint64) uint64 {
	return l2&0x7f | (l3&0x1ff)<<7 | (l4&0xff)<<16 | (segsz&0xffff)<<24
}
