//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/packetiotest"
)

// wantOpError checks that err is an *packetio.OpError of dpdk for op on
// iface and queue, matching sentinel.
func wantOpError(t *testing.T, what string, err error, op, iface string, queue int, sentinel error) {
	t.Helper()
	packetiotest.WantOpError(t, what, err, packetio.OpError{Op: op, Backend: "dpdk", Iface: iface, Queue: queue, Err: sentinel})
}

// TestOpenErrors: Open's refusals are open OpErrors naming the device and
// matching the sentinel of their cause.
func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct {
		name, dev string
		opts      []Option
		sentinel  error
	}{
		{"empty name", "", nil, packetio.ErrInvalid},
		{"neither PCI nor vdev", "eth9", nil, packetio.ErrInvalid},
		{"frame size", "net_null0", []Option{WithFrameSize(3000)}, packetio.ErrInvalid},
		{"no transmit queue", "net_null0", []Option{WithTxQueues(0)}, packetio.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Open(tc.dev, append(append([]Option(nil), ealOpts...), tc.opts...)...)
			if err == nil {
				d.Close()
			}
			wantOpError(t, "Open", err, "open", tc.dev, packetio.NoQueue, tc.sentinel)
		})
	}
}

// TestQueueErrors: the queues' failures are OpErrors naming the queue.
func TestQueueErrors(t *testing.T) {
	d := openT(t, "net_null0", small()...)
	name := d.info.Name
	tx, rx := d.TxQueue(0), d.RxQueue(0)
	_, err := tx.SendFunc(1, func(int, []byte) int { return -1 })
	wantOpError(t, "SendFunc with a negative length", err, "send", name, 0, packetio.ErrBadLength)
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err = tx.SendFunc(1, func(int, []byte) int { return 60 })
	wantOpError(t, "SendFunc after Close", err, "send", name, 0, packetio.ErrClosed)
	_, err = rx.Poll(0)
	wantOpError(t, "Poll after Close", err, "poll", name, 0, packetio.ErrClosed)
	wantOpError(t, "tx Err after Close", tx.Err(), "transmit", name, 0, packetio.ErrClosed)
	wantOpError(t, "rx Err after Close", rx.Err(), "receive", name, 0, packetio.ErrClosed)
	_, err = d.PortStats()
	wantOpError(t, "PortStats after Close", err, "port stats", name, packetio.NoQueue, packetio.ErrClosed)
}
