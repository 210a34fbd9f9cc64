package packetiotest

import (
	"errors"
	"testing"

	"github.com/packetio/packetio"
)

// errorsAreOpErrors: an error that crosses the API is one
// *packetio.OpError of the device's backend, naming the queue, and matches
// the sentinel of its cause: a bad build length before Close, ErrClosed
// after it.
func errorsAreOpErrors(t *testing.T, open OpenFunc) {
	d := device(t, open)
	backend := d.Capabilities().Backend
	want := func(what string, err error, sentinel error) {
		t.Helper()
		var oe *packetio.OpError
		switch {
		case err == nil:
			t.Errorf("%s: no error, want one matching %v", what, sentinel)
		case !errors.As(err, &oe):
			t.Errorf("%s: %v (%T) is not a *packetio.OpError", what, err, err)
		case oe.Backend != backend || oe.Queue != 0 || oe.Op == "":
			t.Errorf("%s: OpError{Op %q Backend %q Queue %d}, want an operation of backend %q on queue 0", what, oe.Op, oe.Backend, oe.Queue, backend)
		case !errors.Is(err, sentinel):
			t.Errorf("%s: %v does not match %v", what, err, sentinel)
		}
	}
	tx := d.TxQueue(0)
	_, err := tx.SendFunc(1, func(int, []byte) int { return -1 })
	want("SendFunc with a negative length", err, packetio.ErrBadLength)
	var rx packetio.RxQueue
	if d.NumRxQueues() > 0 {
		rx = d.RxQueue(0)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err = tx.SendFunc(1, pattern)
	want("SendFunc after Close", err, packetio.ErrClosed)
	if _, err := tx.Stats(); err != nil {
		want("tx Stats after Close", err, packetio.ErrClosed)
	}
	if err := tx.Err(); err != nil {
		want("tx Err after Close", err, packetio.ErrClosed)
	}
	if rx == nil {
		return
	}
	_, err = rx.Poll(0)
	want("Poll after Close", err, packetio.ErrClosed)
	if _, err := rx.Stats(); err != nil {
		want("rx Stats after Close", err, packetio.ErrClosed)
	}
	if err := rx.Err(); err != nil {
		want("rx Err after Close", err, packetio.ErrClosed)
	}
}
