package packetio

// ReadyNotifier is implemented by queues that can be waited on with poll(2)
// or epoll(7) alongside other descriptors, so one goroutine can serve many
// queues (package waitset does exactly that). Capabilities().ReadyFD says
// whether the queues of a device implement it. Today afpacket and afxdp
// receive queues do; transmit queues and the other backends do not.
//
// The protocol is level-triggered and allows spurious wake-ups:
//
//  1. Call Arm. When it returns more than 0, work is waiting: do not sleep.
//  2. Otherwise sleep until ready or closed polls readable (EPOLLIN).
//  3. After a wake-up, call Err when closed fired (the queue is closed or
//     failed: stop waiting on it), else Arm again to learn how much work
//     waits (0 after a spurious wake-up: go back to 1), and drain the queue
//     with its ordinary methods (Receive until it returns nothing, Recycle,
//     Fill). ready stays readable while unread work remains, so a waiter
//     that stops before the queue is empty is woken again at once.
//  4. When ready reports EPOLLERR or EPOLLHUP (the link went down, the
//     interface went away), call the queue's Poll with a short positive
//     timeout: the backend reads and clears the socket error there, and
//     returns an error wrapping ErrDeviceGone when the queue is dead.
//
// Skipping Arm before a sleep can lose wake-ups: on afxdp a driver parked
// by need-wakeup takes no fill entries until it is kicked, and Arm kicks it.
type ReadyNotifier interface {
	// ReadyFDs returns two descriptors to poll for EPOLLIN, never to
	// read, write or close: ready polls readable while the queue may have
	// work (a receive queue: packets in its ring; afpacket TPACKET_V3: a
	// retired block, so with blocks the wake-up comes when the kernel
	// retires one, after at most the block timeout), closed polls readable
	// from the moment Close begins or the queue fails, and stays so. Both
	// belong to the device and are closed by its Close: a caller that
	// registers them with epoll must stop using them then (package waitset
	// duplicates closed and never touches ready again once closed fired).
	// After Close it returns an error wrapping ErrClosed.
	ReadyFDs() (ready, closed int, err error)

	// Arm prepares the queue for a sleep on ready and returns a lower bound
	// of the work waiting now (received packets): when it is above 0 the
	// caller must not sleep. It never blocks; it makes a system call only
	// when the backend must be woken (afxdp need-wakeup). 0 after Close.
	Arm() int
}
