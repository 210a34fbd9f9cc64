package packetio

// TxStats are a transmit queue's counters. They are cumulative from Open,
// updated once per batch (never per packet) and safe to read from any
// goroutine. They may lag by one batch.
type TxStats struct {
	// Packets counts frames Transmit accepted.
	Packets uint64
	// Bytes is the sum of their Len.
	Bytes uint64
	// Completed counts frames handed back by Complete or Reclaim;
	// Packets-Completed are still owned by the NIC.
	Completed uint64
	// Batches counts batches published to the NIC (a doorbell, a kick, a
	// sendmmsg call); Packets/Batches is the effective batch size.
	Batches uint64
	// Completions counts completion events consumed; it is far below
	// Completed where the NIC signals once per batch.
	Completions uint64
	// RingFull counts calls that queued nothing because the ring was full.
	RingFull uint64
	// PoolEmpty counts calls that allocated nothing because every frame
	// was in flight.
	PoolEmpty uint64
	// Errors counts kernel or hardware errors and frames they lost.
	Errors uint64
	// Refused counts descriptors Transmit or Free turned away and left
	// with the caller: outside a frame, longer than the link carries,
	// foreign, or (packetio_checked builds) not the caller's to give.
	Refused uint64
	// Backend holds backend-only counters under stable lowercase keys.
	Backend map[string]uint64
}

// RxStats are a receive queue's counters, with the same rules as TxStats.
type RxStats struct {
	// Packets counts packets Receive handed to the caller.
	Packets uint64
	// Bytes is the sum of their lengths.
	Bytes uint64
	// Filled counts frames posted to the NIC.
	Filled uint64
	// Batches counts receive calls that returned packets; Packets/Batches
	// is the effective receive batch size.
	Batches uint64
	// Polls counts Poll calls.
	Polls uint64
	// Completions counts completion events consumed.
	Completions uint64
	// PoolEmpty counts refills that posted nothing because the caller held
	// every frame.
	PoolEmpty uint64
	// Errors counts error completions and malformed descriptors.
	Errors uint64
	// Dropped counts packets the NIC or kernel discarded before the caller
	// saw them, where they can be attributed to this queue.
	Dropped uint64
	// Backend holds backend-only counters under stable lowercase keys.
	Backend map[string]uint64
}
