package afxdp_test

import (
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/packetiotest"
)

// wantOpError checks that err is an *packetio.OpError of afxdp for op on
// iface and queue, matching sentinel.
func wantOpError(t *testing.T, what string, err error, op, iface string, queue int, sentinel error) {
	t.Helper()
	packetiotest.WantOpError(t, what, err, packetio.OpError{Op: op, Backend: "afxdp", Iface: iface, Queue: queue, Err: sentinel})
}

// TestOpenErrors: every way Open fails is one error type, naming the
// operation and the interface, and matching the sentinel of its cause.
func TestOpenErrors(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t)
	steer := afxdp.WithSteering(testFilter)
	for _, tc := range []struct {
		name     string
		iface    string
		opts     []afxdp.Option
		sentinel error
	}{
		{"missing interface", "nosuch0", []afxdp.Option{steer}, packetio.ErrNoDevice},
		{"no steering", p.B.Link, nil, packetio.ErrUnsupported},
		{"contradictory steering", p.B.Link, []afxdp.Option{afxdp.WithSteering(packetio.SteeringFilter{Match: []packetio.Match{
			packetio.MatchEtherType(0x0806), packetio.MatchIPProto(17)}})}, packetio.ErrUnsupported},
		{"frame size not a power of two", p.B.Link, []afxdp.Option{steer, afxdp.WithFrameSize(3000)}, packetio.ErrInvalid},
		{"more queues than the link has", p.B.Link, []afxdp.Option{steer, afxdp.WithQueues(4)}, packetio.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.B.Do(func() error {
				d, err := afxdp.Open(tc.iface, tc.opts...)
				if err == nil {
					d.Close()
				}
				return err
			})
			wantOpError(t, "Open", err, "open", tc.iface, packetio.NoQueue, tc.sentinel)
		})
	}
}

// TestQueueErrors: every queue method that returns an error returns an
// *OpError naming the queue and matching the sentinel of its cause.
func TestQueueErrors(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t)
	d := openOn(t, p.B, afxdp.WithSteering(testFilter))
	iface := p.B.Link
	tx, rx := d.TxQueue(0), d.RxQueue(0)

	_, err := tx.SendFunc(1, func(int, []byte) int { return 1 << 20 })
	wantOpError(t, "SendFunc with a bad length", err, "send", iface, 0, packetio.ErrBadLength)
	if ot, ok := tx.(packetio.OffloadTransmitter); ok {
		descs := tx.Alloc(1)
		_, err = ot.TransmitOffload(descs, nil)
		wantOpError(t, "TransmitOffload without the option", err, "transmit", iface, 0, packetio.ErrUnsupported)
		tx.Free(descs)
	}

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
	_, err = tx.Stats()
	wantOpError(t, "tx Stats after Close", err, "tx stats", iface, 0, packetio.ErrClosed)
	_, err = rx.Stats()
	wantOpError(t, "rx Stats after Close", err, "rx stats", iface, 0, packetio.ErrClosed)
	if ot, ok := tx.(packetio.OffloadTransmitter); ok {
		_, err = ot.TransmitOffload(nil, nil)
		wantOpError(t, "TransmitOffload after Close", err, "transmit", iface, 0, packetio.ErrClosed)
	}
}
