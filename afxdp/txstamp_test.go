package afxdp_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// TestTxTimestampsRefusedOnVeth: veth has no AF_XDP transmit timestamps,
// so Open refuses WithTxTimestamps with ErrUnsupported, naming the
// interface and the missing driver feature, and leaves nothing attached:
// the same interface opens without the option afterwards.
func TestTxTimestampsRefusedOnVeth(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t)
	var err error
	_ = p.A.Do(func() error {
		var d *afxdp.Device
		d, err = afxdp.Open(p.A.Link, afxdp.WithTransmitOnly(), afxdp.WithTxTimestamps())
		if d != nil {
			d.Close()
			t.Error("Open returned a device with the refusal")
		}
		return nil
	})
	if !errors.Is(err, packetio.ErrUnsupported) {
		t.Fatalf("Open(WithTxTimestamps) on veth = %v, want ErrUnsupported", err)
	}
	t.Logf("refusal: %v", err)
	var oe *packetio.OpError
	if !errors.As(err, &oe) || oe.Op != "open" {
		t.Fatalf("error %v is not an open *packetio.OpError", err)
	}
	for _, want := range []string{p.A.Link, "WithTxTimestamps", "tx-timestamp"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	d := openOn(t, p.A, afxdp.WithTransmitOnly())
	if d.Capabilities().TxTimestamps {
		t.Error("Capabilities().TxTimestamps is true on afxdp")
	}
}
