package packetio

// TimestampReceiver is an RxQueue that also reports when each packet arrived,
// as stamped by the device before the program saw it.
//
// Check Capabilities().RxTimestamps before relying on it: a queue may have
// the method on a device with no clock, and then ReceiveTimestamps returns
// nil, nil. A timestamp is never zero and never invented.
//
// Stamps are nanoseconds on the device's own clock with no promised epoch:
// only differences between stamps of one queue mean anything. Arrival order
// is not delivery order, and where the kernel coalesces segments (GRO) one
// stamp covers many.
type TimestampReceiver interface {
	RxQueue
	// ReceiveTimestamps is Receive plus each packet's arrival time. Both
	// slices have the same length and belong to the queue: any later
	// receive call on the queue, a plain Receive included, overwrites them.
	ReceiveTimestamps(max int) ([]Desc, []uint64)
}
