//go:build linux

package afpacket

import "github.com/packetio/packetio"

var _ packetio.ReadyNotifier = (*RxQueue)(nil)

// ReadyFDs returns the queue's packet socket, which polls readable when the
// ring holds a packet (TPACKET_V3: a retired block, so the wake-up comes
// when the kernel retires one, after at most the block timeout; WithLowLatency
// has no such delay), and the eventfd Close writes, which stays readable
// once written. Both belong to the Device.
func (q *RxQueue) ReadyFDs() (ready, closed int, err error) {
	if q.closed.Load() {
		return -1, -1, q.errorf("ready", packetio.ErrClosed, "queue closed")
	}
	return q.fd, q.efd, nil
}

// Arm returns how many packets the ring holds now (a lower bound, as
// NumReceived). The kernel needs no wake-up here, so it is one ring read and
// no system call.
func (q *RxQueue) Arm() int {
	if q.failed.Load() || !q.calls.Enter(&q.closed) {
		return 0
	}
	defer q.calls.Exit()
	return q.ready()
}
