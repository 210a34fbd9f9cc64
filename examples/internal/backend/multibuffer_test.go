package backend

import (
	"errors"
	"slices"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// TestMultiBuffer: Config.MultiBuffer reaches afpacket and afxdp (their
// Capabilities say so) on a veth with an MTU of 9000, afxdp in native
// mode; without it afxdp's native attach is refused (its XDP program has
// no frags support, and the kernel attaches none such on a veth whose MTU
// is above about 3.5 KiB) and it falls back to generic XDP. A backend
// without multi-buffer refuses it instead of opening.
func TestMultiBuffer(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t, netns.WithMTU(9000))
	for _, tc := range []struct {
		backend string
		c       Config
		mode    string // afxdp's Info().Mode
	}{
		{"afpacket", Config{TxQueues: 1, RxQueues: 1, MultiBuffer: true}, ""},
		{"afxdp", Config{TxQueues: 1, RxQueues: 1, MultiBuffer: true}, "native"},
		{"afxdp", Config{TxQueues: 1, RxQueues: 1}, "generic"},
	} {
		var d packetio.Device
		err := p.A.Do(func() (err error) {
			d, err = Open(tc.backend, p.A.Link, tc.c)
			return err
		})
		if err != nil {
			t.Errorf("%s %+v: %v", tc.backend, tc.c, err)
			continue
		}
		if got := d.Capabilities().MultiBuffer; got != tc.c.MultiBuffer {
			t.Errorf("%s %+v: Capabilities().MultiBuffer %v", tc.backend, tc.c, got)
		}
		if x, ok := d.(*afxdp.Device); ok && x.Info().Mode != tc.mode {
			t.Errorf("%s %+v: %s XDP, want %s (%s)", tc.backend, tc.c, x.Info().Mode, tc.mode, x.Info())
		}
		if err := d.Close(); err != nil {
			t.Errorf("%s close: %v", tc.backend, err)
		}
	}
	for b := range needsTag {
		if !slices.Contains(Names(), b) {
			continue
		}
		if _, err := Open(b, p.A.Link, Config{MultiBuffer: true}); !errors.Is(err, packetio.ErrUnsupported) {
			t.Errorf("%s with MultiBuffer: %v, want ErrUnsupported", b, err)
		}
	}
}

// TestMultiBufferRefused: a backend without multi-buffer is never opened
// with Config.MultiBuffer; Open refuses it with ErrUnsupported.
func TestMultiBufferRefused(t *testing.T) {
	called := false
	Register("test-nomb", func(string, Config) (packetio.Device, error) { called = true; return nil, nil })
	defer delete(openers, "test-nomb")
	if _, err := Open("test-nomb", "x", Config{MultiBuffer: true}); !errors.Is(err, packetio.ErrUnsupported) || called {
		t.Fatalf("Open with MultiBuffer: %v (opener called: %v), want ErrUnsupported", err, called)
	}
}
