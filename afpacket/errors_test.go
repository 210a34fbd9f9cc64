package afpacket

import (
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/packetiotest"
)

// wantOpError checks that err is an *packetio.OpError of afpacket for op on
// iface and queue, matching sentinel.
func wantOpError(t *testing.T, what string, err error, op, iface string, queue int, sentinel error) {
	t.Helper()
	packetiotest.WantOpError(t, what, err, packetio.OpError{Op: op, Backend: "afpacket", Iface: iface, Queue: queue, Err: sentinel})
}

// TestQueueErrors: every queue method that returns an error returns an
// *OpError naming the interface and queue, matching the sentinel of its
// cause; Open's refusals are TestIntegrationOpenRefusesAndRollsBack's.
func TestQueueErrors(t *testing.T) {
	p := netns.New(t)
	d := openIn(t, p.A)
	iface := p.A.Link
	tx, rx := d.TxQueue(0), d.RxQueue(0)

	_, err := tx.SendFunc(1, func(int, []byte) int { return -1 })
	wantOpError(t, "SendFunc with a negative length", err, "send", iface, 0, packetio.ErrBadLength)
	descs := tx.Alloc(1)
	_, err = tx.(packetio.OffloadTransmitter).TransmitOffload(descs, make([]packetio.Offload, 1))
	wantOpError(t, "TransmitOffload without WithGSO", err, "transmit", iface, 0, packetio.ErrUnsupported)
	_, err = tx.(packetio.OffloadTransmitter).TransmitOffload(descs, nil)
	wantOpError(t, "TransmitOffload with no offloads", err, "transmit", iface, 0, packetio.ErrUnsupported)
	tx.Free(descs)

	done := make(chan error, 1)
	go func() {
		_, err := rx.Poll(10 * time.Second)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-done:
		wantOpError(t, "Poll woken by Close", err, "poll", iface, 0, packetio.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake Poll within 5 s")
	}
	_, err = rx.Poll(0)
	wantOpError(t, "Poll after Close", err, "poll", iface, 0, packetio.ErrClosed)
	wantOpError(t, "rx Err after Close", rx.Err(), "receive", iface, 0, packetio.ErrClosed)
	wantOpError(t, "tx Err after Close", tx.Err(), "transmit", iface, 0, packetio.ErrClosed)
	_, err = tx.SendFunc(1, func(int, []byte) int { return 60 })
	wantOpError(t, "SendFunc after Close", err, "send", iface, 0, packetio.ErrClosed)
	_, err = tx.(packetio.OffloadTransmitter).TransmitOffload(nil, nil)
	wantOpError(t, "TransmitOffload after Close", err, "transmit", iface, 0, packetio.ErrClosed)
}
