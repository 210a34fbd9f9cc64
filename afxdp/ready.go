package afxdp

import "github.com/packetio/packetio"

var _ packetio.ReadyNotifier = (*RxQueue)(nil)

// ReadyFDs returns the queue's AF_XDP socket, which polls readable when the
// receive ring holds a descriptor, and the eventfd that Close (and a failure
// the socket latched) writes, which stays readable once written. Both belong
// to the Device.
func (q *RxQueue) ReadyFDs() (ready, closed int, err error) {
	ready, closed = q.s.FD(), q.s.WakeFD()
	if q.closed.Load() || ready < 0 || closed < 0 {
		return -1, -1, q.opErr("ready", packetio.ErrClosed)
	}
	return ready, closed, nil
}

// Arm returns how many descriptors wait on the receive ring, and first
// wakes the driver if it parked its receive side (need-wakeup: it takes no
// fill entries until kicked, so a waiter would sleep forever). One atomic
// load when it did not park; a non-blocking recvfrom when it did.
func (q *RxQueue) Arm() int {
	if q.closed.Load() {
		return 0
	}
	if q.s.NeedsWakeupRx() {
		_ = q.s.WakeupRx()
	}
	return q.s.NumReceived()
}
