// Package packetio moves Ethernet frames between a NIC and a Go program at
// line rate, through one API over several backends: afpacket (AF_PACKET,
// pure Go), afxdp (AF_XDP, pure Go), dpdk (cgo, -tags dpdk) and mlx5 (Direct
// Verbs, cgo, -tags mlx5). A program is written once; changing backend is
// changing the import line and the Open call.
//
// The package owns queues and frame memory and nothing above them. It
// allocates nothing per packet and copies nothing wherever the mechanism
// allows (only AF_PACKET copies, because a packet socket is a copy).
//
// # Ownership
//
// A Region is one block of frame memory, allocated and registered once at
// Open. A Desc names bytes of one frame in it by offset and length; it is a
// value, and it is the unit of ownership. At every moment a frame belongs to
// exactly one of three owners: the pool (free), the application (between
// Alloc and Transmit, or between Receive and Recycle) or the NIC (between
// Transmit and Complete or Reclaim, and between Fill and Receive). Every
// method hands frames from one owner to another, and a frame with two owners
// is the corruption the design exists to prevent.
//
// # The three cycles
//
// Transmit:   Alloc -> fill the frame -> Transmit -> Complete
// Receive:    Fill -> Poll -> Receive -> use the frame -> Recycle
// Forwarding: Receive -> rewrite in place -> Transmit -> Reclaim -> Recycle
//
// A forwarder must use Reclaim, not Complete: Complete would park the receive
// queue's frames in the transmit pool and starve the receiver. Reclaim names
// the frames only where Capabilities().HandsBackFrames is true, and a frame
// moves between queues without a copy only where SharedRegion is true.
//
// There is no kick, flush or wakeup method: each backend does what its
// mechanism needs inside Transmit, Fill and Poll.
//
// # Concurrency
//
// One goroutine drives one queue; nothing on the packet path takes a lock. A
// TxQueue and an RxQueue may run on two goroutines at once, but two
// goroutines may never drive the same queue, and a receive queue must share
// its goroutine with every transmit queue that carries its frames, because
// their pools are not synchronised. Stats and Err are safe from any
// goroutine. Close may not race Transmit or Receive, but it wakes a goroutine
// blocked in Poll.
//
// # A receive loop
//
//	rx := dev.RxQueue(0)
//	rx.Fill(rx.NumFreeFillSlots())
//	for {
//		if _, err := rx.Poll(time.Second); err != nil {
//			return err // closed or failed
//		}
//		descs := rx.Receive(256)
//		for _, d := range descs {
//			handle(rx.Region().Frame(d))
//		}
//		rx.Recycle(descs)
//		rx.Fill(rx.NumFreeFillSlots())
//	}
//
// And a transmit loop, where one SendFunc call is the whole cycle:
//
//	tx := dev.TxQueue(0)
//	for {
//		if _, err := tx.SendFunc(256, func(i int, frame []byte) int {
//			return copy(frame, pkt)
//		}); err != nil {
//			return err
//		}
//	}
//
// # Errors and honesty
//
// Every error wraps one of ErrClosed, ErrQueueFailed, ErrBadLength or
// ErrUnsupported, with the backend, interface and queue in its text. No
// method panics on an I/O path. Capabilities reports what the device took,
// not what was asked; a backend refuses what it cannot honour (a steering
// match, an offload, a timestamp) rather than approximating it.
//
// BACKENDS.md in the repository is the contract a backend honours, and
// packetiotest is that contract as a test every backend runs.
package packetio
