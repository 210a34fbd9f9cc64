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

// TxStamp is the departure stamp of one transmitted packet.
type TxStamp struct {
	// Seq numbers the packet: the Seq-th packet (from 0) its queue handed
	// to the device through Transmit, TransmitOffload, TransmitGather or
	// SendFunc since the device was opened, in the order they were
	// accepted. A chain of OptContinued frames is one packet. A backend
	// documents what takes no number (afpacket: a packet the kernel
	// refused outright, counted in TxStats.Errors).
	Seq uint64
	// Time is when the packet left, in nanoseconds on the clock the
	// backend documents. Never zero.
	Time uint64
}

// TimestampTransmitter is a TxQueue that also reports when each packet left,
// as stamped by the device (or the kernel's driver layer) after the program
// handed it over.
//
// Check Capabilities().TxTimestamps before relying on it: a queue may have
// the method on a device that does not stamp departures, and then
// TxTimestamps returns out unchanged. A stamp is never zero and never
// invented: a packet the device dropped, or whose stamp was lost (the
// backend counts it), has none, so match stamps to packets by Seq, not by
// position. Stamps arrive after the packet left, usually in Seq order but
// not promised; Complete and Reclaim do not wait for them.
//
// Stamps are nanoseconds on the clock the backend names (for the kernel
// backends CLOCK_REALTIME, which can step); compare them with receive stamps
// only where both come from the same clock.
type TimestampTransmitter interface {
	TxQueue
	// TxTimestamps appends to out the departure stamps that arrived since
	// the last call and returns it. It does not allocate when out has
	// room, and costs nothing on a queue whose device does not stamp.
	TxTimestamps(out []TxStamp) []TxStamp
}
