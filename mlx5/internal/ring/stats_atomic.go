package ring

import "sync/atomic"

// Everything another goroutine may read lives in this file: the counters and
// the failure, both atomics. The counters are atomics because Stats may read
// them from any goroutine.
// The driving goroutine adds to each at most once per batch, never per
// packet.

// TxCounters are a send ring's cumulative counters.
type TxCounters struct {
	Packets     atomic.Uint64 // packets posted
	Bytes       atomic.Uint64 // their bytes
	Batches     atomic.Uint64 // doorbells rung
	Completed   atomic.Uint64 // packets released by completions
	Completions atomic.Uint64 // CQEs consumed
	RingFull    atomic.Uint64 // Post calls refused for lack of room
	BadDesc     atomic.Uint64 // batches cut short by a descriptor outside one frame
	Errors      atomic.Uint64 // error CQEs and undecodable ones
	Stale       atomic.Uint64 // completions that named no live entry
	Unexpected  atomic.Uint64 // completions with an opcode a send CQ never carries
}

// Counters returns the ring's counters.
func (t *Tx) Counters() *TxCounters { return &t.stats }

// RxCounters are a receive ring's cumulative counters.
type RxCounters struct {
	Packets     atomic.Uint64 // good packets handed out
	Bytes       atomic.Uint64 // their bytes
	Filled      atomic.Uint64 // buffers posted
	Batches     atomic.Uint64 // receive calls that handed out packets
	Completions atomic.Uint64 // CQEs consumed
	Errors      atomic.Uint64 // error CQEs, oversize and unexpected completions
	Oversize    atomic.Uint64 // completions claiming more bytes than the buffer
	BadDesc     atomic.Uint64 // Fill calls cut short by a frame outside the region
	Unexpected  atomic.Uint64 // completions with no buffer outstanding or a foreign opcode
}

// Counters returns the ring's counters.
func (r *Rx) Counters() *RxCounters { return &r.stats }

// failure is an atomically published *Failure: set once by the driving
// goroutine, read by any.
type failure struct{ p atomic.Pointer[Failure] }

func (f *failure) set(v *Failure) {
	f.p.CompareAndSwap(nil, v)
}

func (f *failure) get() *Failure { return f.p.Load() }
