// Package mocknic is a strict software model of the part of a ConnectX NIC
// that an mlx5 send or receive ring talks to. It works over the very memory
// the ring writes: the work queue, the CQ, the doorbell records and the
// frame region, so a ring cannot tell it from the card.
//
// Strict means that whatever the hardware could treat as undefined is
// recorded as a violation, not tolerated: a doorbell record that is not a
// 16-bit big-endian index, a producer index past the free space, a wrong QP
// number or memory key, an address outside the registered region, a
// zero-length data segment (which takes the real queue down with a local
// length error, and does here too), a malformed entry, a CQ overrun. Tests
// fail on any violation.
//
// The model is driven by the test: TxNIC.Poll is "the doorbell arrived, do
// the work", RxNIC.Deliver is "these packets came in from the wire". It never
// runs on its own goroutine, so it needs no locks and the race detector sees
// only the ring's own concurrency.
//
// Failure injection: TxNIC.FailAfter makes the nth packet fail with a chosen
// syndrome, after which every remaining entry is flushed; RxNIC.FailEvery
// makes every nth receive an error completion. A model clock stamps receive
// completions.
//
// What the model does not know: timing, write-combining and the real
// memory-ordering behaviour of the device, firmware limits such as the
// minimum inline mode, and anything about steering or RSS. Those only a
// ConnectX can check.
package mocknic
