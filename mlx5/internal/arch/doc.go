// Package arch holds the few memory-ordering primitives the mlx5 rings need
// and Go cannot express: publishing a doorbell record and ringing the UAR
// doorbell in the order the card requires, releasing CQ entries, loading a
// CQE's ownership word with acquire semantics, and prefetching a frame.
//
// Every function is an opaque assembly call on amd64 and arm64, so the Go
// compiler cannot move ordinary loads and stores across it, and each one
// carries the fence the hardware contract needs:
//
//	function         amd64                              arm64
//	PublishDoorbell  store dbrec; SFENCE; 8-byte UAR      DMB OSHST; store dbrec; DSB ST;
//	                 store; SFENCE                        8-byte UAR store; DSB ST
//	PublishDbrec     plain store (TSO keeps order)       DMB OSHST; store
//	ReleaseCQ        plain store                         DMB OSH; store
//	LoadCQEHeader    32-bit load; BSWAP; LFENCE           32-bit load; REV; DMB OSHLD
//	LoadCQEHeaderRaw 32-bit load; BSWAP                   32-bit load; REV
//	Prefetch         PREFETCHT0                          PRFM PLDL1KEEP
//
// Why these fences:
//
//   - A send WQE is written with ordinary stores. The device reads it by DMA
//     after it sees the doorbell record move, and the UAR write (to
//     write-combining MMIO) tells it to look. On amd64 stores to write-back
//     memory are already ordered (TSO); the SFENCE before the UAR store
//     keeps the write-combining store from overtaking the record, and the
//     one after flushes the write-combining buffer so the doorbell leaves
//     the core now, not at some later eviction. On arm64 DMB OSHST orders
//     the WQE stores before the record store for an outer-shareable
//     observer (the device), and DSB ST completes the record store before
//     the MMIO store and that store before any later one.
//   - A receive or CQ doorbell record is ordinary memory the device reads;
//     arm64 needs a barrier before it (DMB OSHST for RQ posts, DMB OSH for
//     the CQ consumer index, which must also follow the loads of the CQEs it
//     releases), amd64 needs none.
//   - A CQE is written by the device, owner byte last. Software may read
//     the body only after it saw the owner byte flip: the owner test is a
//     control dependency only, so arm64 needs DMB OSHLD after the load; on
//     amd64 LFENCE is kept as rdma-core does, at no measured cost.
//
// The raw form of the CQE load has no fence: it only counts ready entries
// and never leads to reading a CQE body.
//
// Other architectures get a pure-Go fallback using sync/atomic (sequentially
// consistent in Go, so at least as strong as needed for ordinary memory).
// mlx5 hardware is only supported on amd64 and arm64; the fallback exists so
// the packages and the model tests build and run everywhere.
//
// The UAR pointer is device memory mapped by libmlx5. It is never touched by
// Go atomics or the race detector's instrumentation: only these functions
// write it.
package arch
