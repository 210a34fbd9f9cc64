package packetiotest

import (
	"errors"
	"testing"

	"github.com/packetio/packetio"
)

// WantOpError fails t unless err is a *packetio.OpError with want's Op,
// Backend, Iface and Queue whose cause matches want.Err (a sentinel). A
// backend's error tables use it: what names the call in the failure.
func WantOpError(t testing.TB, what string, err error, want packetio.OpError) {
	t.Helper()
	var oe *packetio.OpError
	switch {
	case err == nil:
		t.Errorf("%s: no error, want %v", what, want.Err)
	case !errors.As(err, &oe):
		t.Errorf("%s: %v (%T) is not a *packetio.OpError", what, err, err)
	case oe.Op != want.Op || oe.Backend != want.Backend || oe.Iface != want.Iface || oe.Queue != want.Queue:
		t.Errorf("%s: OpError{Op %q Backend %q Iface %q Queue %d}, want {%q %q %q %d}",
			what, oe.Op, oe.Backend, oe.Iface, oe.Queue, want.Op, want.Backend, want.Iface, want.Queue)
	case !errors.Is(err, want.Err):
		t.Errorf("%s: %v does not match %v", what, err, want.Err)
	}
}
