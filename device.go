package packetio

import "time"

// Device is a set of transmit and receive queues over frame memory. Whether
// every queue draws on one Region is reported by Capabilities().SharedRegion.
//
// Close releases every queue and the memory; it is idempotent, wakes a
// goroutine blocked in Poll, and may run while other goroutines are inside
// queue methods: it waits for them to leave before it releases anything.
type Device interface {
	// Capabilities reports what the opened device really does.
	Capabilities() Capabilities
	// NumTxQueues is the number of transmit queues opened.
	NumTxQueues() int
	// NumRxQueues is the number of receive queues opened.
	NumRxQueues() int
	// TxQueue returns transmit queue i, or nil when i is out of range.
	TxQueue(i int) TxQueue
	// RxQueue returns receive queue i, or nil when i is out of range.
	RxQueue(i int) RxQueue
	// Close closes every queue and releases the frame memory. A second
	// call returns nil and does nothing. It is safe from any goroutine
	// while others are inside queue methods: it wakes a Poll, waits for
	// the other calls in progress to leave, and a call it cut short
	// returns ErrClosed. Called from inside a queue call (a SendFunc
	// build function), which a backend that waits would wait for
	// forever, it either closes or refuses at once with an error matching
	// ErrBusy and changes nothing; close after the call returns.
	Close() error
}

// TxQueue is one transmit queue. It is driven by exactly one goroutine;
// Stats and Err may be called from any goroutine.
//
// The transmit cycle is Complete(NumCompleted()) -> Alloc(n) -> build each
// frame through Region().Writable and set Len -> Transmit. SendFunc is that
// cycle in one call. A forwarder uses Reclaim instead of Complete, so frames
// that came from a receive queue go back to it.
type TxQueue interface {
	// Region is the memory this queue's frames live in.
	Region() Region

	// Alloc takes up to n frames from this queue's pool and returns them
	// with Len 0 and Addr past any headroom. It returns fewer, or none,
	// when the pool or the ring is short: never more than the next
	// Transmit can take. The slice belongs to the queue and is reused by
	// the next Alloc.
	Alloc(n int) []Desc

	// Transmit hands descriptors to the NIC and returns how many it took.
	// They are always a prefix of descs (with chains, a prefix of whole
	// packets). The accepted prefix belongs to the NIC until Complete or
	// Reclaim; the rejected suffix is still the caller's, to transmit later
	// or Free. A descriptor must name at least one byte inside one frame;
	// the first one that does not ends the prefix. A short count is
	// backpressure, not an error: Err says whether the queue is dead.
	Transmit(descs []Desc) int

	// Err is nil while the queue is healthy. A permanent failure wraps
	// ErrQueueFailed; after Close it wraps ErrClosed. Safe from any
	// goroutine.
	Err() error

	// Complete returns finished frames to this queue's pool and reports how
	// many. max bounds the work, not the result: one completion is never
	// split, so the result can exceed max.
	Complete(max int) int

	// Reclaim is Complete that hands the finished descriptors to the
	// caller, appended to out, instead of pooling them. The caller Recycles
	// them to the receive queue they came from or Frees them here. Where
	// Capabilities().HandsBackFrames is false, Reclaim completes into the
	// pool and returns out unchanged.
	Reclaim(max int, out []Desc) []Desc

	// Free returns frames to the pool without sending them: frames Alloc
	// gave that will not be sent, and the suffix Transmit refused. Foreign
	// and surplus frames are refused and counted.
	Free(descs []Desc)

	// NumCompleted is how many frames Complete would return now.
	NumCompleted() int
	// NumInFlight is how many frames the NIC owns now: transmitted and not
	// yet handed back by Complete or Reclaim.
	NumInFlight() int
	// NumFreeSlots is how many more frames Transmit would take now.
	NumFreeSlots() int
	// NumFreeFrames is how many frames the pool holds now.
	NumFreeFrames() int

	// SendFunc is the whole transmit cycle in one call. It reclaims
	// completions, allocates up to count frames, calls build(i, frame) for
	// each with the frame's writable bytes, and transmits. build returns
	// the packet length: 0 ends the batch and sends what was built; below
	// 0 or above len(frame) abandons the whole batch, returns every frame
	// to the pool and reports (0, ErrBadLength). Otherwise SendFunc returns
	// how many packets reached the NIC.
	SendFunc(count int, build func(i int, frame []byte) int) (int, error)

	// Stats returns cumulative counters. Safe from any goroutine.
	Stats() (TxStats, error)

	// Close releases the queue. It is idempotent.
	Close() error
}

// RxQueue is one receive queue. It is driven by exactly one goroutine; Stats
// and Err may be called from any goroutine.
//
// The receive cycle is Fill(NumFreeFillSlots()) -> Poll(timeout) ->
// Receive(n) -> use the frames -> Recycle -> Fill again.
type RxQueue interface {
	// Region is the memory this queue's frames live in.
	Region() Region

	// Fill posts up to n frames from the pool to the NIC and returns how
	// many it posted. It never touches a frame on loan to the caller.
	Fill(n int) int

	// Poll waits until at least one packet is ready or timeout passes and
	// returns the ready count. A zero timeout does not block; a negative
	// one waits until a packet arrives or the queue is closed, which is
	// only sensible where Capabilities().BlockingPoll is true. It returns
	// an error wrapping ErrClosed when the queue is closed while it waits,
	// and a non-nil error on every call after Close.
	Poll(timeout time.Duration) (int, error)

	// Receive returns up to max received packets. From Receive until
	// Recycle the frames belong to the caller alone. The slice belongs to
	// the queue and is reused by the next receive call. With chains a
	// packet is delivered whole or not at all.
	Receive(max int) []Desc

	// Err is nil while the queue is healthy. A permanent failure wraps
	// ErrQueueFailed; after Close it wraps ErrClosed. A dead receive queue
	// looks exactly like a quiet link, so a receiver that sees nothing for
	// a while should ask. Safe from any goroutine.
	Err() error

	// Recycle returns received frames to the pool.
	Recycle(descs []Desc)

	// NumFreeFillSlots is how many more frames Fill can post now.
	NumFreeFillSlots() int
	// NumReceived is how many packets Receive could return now.
	NumReceived() int
	// NumFreeFrames is how many frames the pool holds now.
	NumFreeFrames() int

	// Stats returns cumulative counters. Safe from any goroutine.
	Stats() (RxStats, error)

	// Close releases the queue. It is idempotent.
	Close() error
}

// Capabilities says what an opened device really does. Every field describes
// what the device accepted, not what was asked for, and false or zero means
// "not available here", never "unknown".
type Capabilities struct {
	// Backend names the backend: "afpacket", "afxdp", "dpdk", "mlx5" or
	// "pipe".
	Backend string
	// ZeroCopy is true when the NIC moves frames to and from the Region
	// with no copy in between.
	ZeroCopy bool
	// KernelCoexistence is true when the kernel keeps its interface while
	// the device is open, so traffic the device does not take still reaches
	// Linux. Never open a management interface unless it is true.
	KernelCoexistence bool
	// MultiBuffer is true when a packet may span several frames chained
	// with OptContinued, in both directions.
	MultiBuffer bool
	// RSS is true when receive is spread over the queues by a per-flow
	// hash, keeping one flow on one queue. It implies two or more receive
	// queues.
	RSS bool
	// TxChecksumOffload is true when the device computes L3 and L4
	// checksums on transmit.
	TxChecksumOffload bool
	// Offload is true when the queues implement both OffloadReceiver and
	// OffloadTransmitter and the device honours them.
	Offload bool
	// RxChecksumFlags is true when received descriptors carry
	// OptChecksumOK.
	RxChecksumFlags bool
	// GatherTx is true when transmit queues implement GatherTransmitter:
	// only where the device has finished reading the bytes when the call
	// returns.
	GatherTx bool
	// RxTimestamps is true when receive queues implement TimestampReceiver
	// and the device really stamps arrivals.
	RxTimestamps bool
	// BlockingPoll is true when Poll sleeps rather than spins, and Close
	// wakes it.
	BlockingPoll bool
	// SharedRegion is true when every queue draws on one Region, so a frame
	// moves between queues without a copy.
	SharedRegion bool
	// HandsBackFrames is true when Reclaim names the frames it returns.
	HandsBackFrames bool
	// MaxFrameSize is the largest packet one frame carries: the frame less
	// its headroom.
	MaxFrameSize int
	// MaxTxLen is the longest packet Transmit accepts: what the link
	// carries (its MTU plus the Ethernet header) when Open ran, or what a
	// Desc can name where no link bounds it (pipe). Transmit refuses a
	// longer descriptor up front, the prefix ends there and the frame
	// stays the caller's, and TxStats.Refused counts it. 0 means the
	// backend does not bound it.
	MaxTxLen int
	// MaxQueues is the most queues either direction can have: the backend's
	// limit, lowered to the device's where visible. It is a ceiling, not
	// the number open.
	MaxQueues int
	// SteeringBy says whose program picks the frames that reach the
	// receive queues, where a program does: "packetio" (the backend's own,
	// compiled from the steering filter), "user" (the caller's, as with
	// afxdp's WithProgram) or "shared" (packetio's, in one slot of
	// libxdp's multi-program dispatcher beside other programs). It is ""
	// where the backend runs no program of its own choosing.
	SteeringBy string
	// SteeringCopies is true when the device's steering filter picks the
	// frames that reach its receive queues without taking them from the
	// kernel: the kernel's stack still gets its own copy of every frame
	// (afpacket: a packet socket is a tap). It is false where steering
	// takes matching frames away from the kernel (afxdp) and where the
	// device was opened without steering.
	SteeringCopies bool
	// TxTimestamps is true when transmit queues implement
	// TimestampTransmitter and the device really stamps departures.
	TxTimestamps bool
	// ReadyFD is true when the receive queues implement ReadyNotifier: a
	// file descriptor that polls readable when the queue has work, so one
	// goroutine can wait on many queues with epoll (package waitset).
	ReadyFD bool
	// NUMABound is true when the frame memory was bound to one NUMA node,
	// NUMANode, with a memory policy; false when the kernel placed it.
	NUMABound bool
	// NUMANode is the node the frame memory is bound to. It means something
	// only when NUMABound is true.
	NUMANode int
}
