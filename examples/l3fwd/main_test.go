package main

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio/examples/internal/forward"
	"github.com/packetio/packetio/internal/testenv"
)

func l3fwdOn(t *testing.T, backend string) {
	t.Helper()
	o := options{backend: backend, batch: 64, duration: time.Second, report: 300 * time.Millisecond}
	res, err := run(context.Background(), o, os.Stderr)
	if err != nil {
		t.Fatal(err) // includes the frame-conservation check
	}
	if res.forwarded == 0 || res.arrived == 0 {
		t.Fatalf("forwarded %d, %d came back", res.forwarded, res.arrived)
	}
	if res.verdicts[forward.BadHeader] != 0 {
		t.Fatalf("%d frames from the source had bad headers", res.verdicts[forward.BadHeader])
	}
}

func TestL3fwdOnOwnPair(t *testing.T) {
	testenv.NeedRoot(t)
	l3fwdOn(t, "afpacket")
}

// TestL3fwdOnAFXDP: steered to what the router routes, forwarded in the
// frame it arrived in, every frame home at the end.
func TestL3fwdOnAFXDP(t *testing.T) {
	testenv.NeedBPF(t)
	l3fwdOn(t, "afxdp")
}

func TestL3fwdRefusesABadRoute(t *testing.T) {
	testenv.NeedRoot(t)
	o := options{backend: "afpacket", batch: 64, duration: time.Second, report: time.Second, routes: routes{"nonsense"}}
	if _, err := run(context.Background(), o, os.Stderr); err == nil {
		t.Fatal("a bad route was accepted")
	}
}

func TestSteering(t *testing.T) {
	self := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	ps := []netip.Prefix{netip.MustParsePrefix("10.99.1.0/24"), netip.MustParsePrefix("192.0.2.0/24")}
	f, err := steering("afxdp", self, ps)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.String(); got != "to 02:00:00:00:00:01 and (to 10.99.1.0/24 or to 192.0.2.0/24)" {
		t.Errorf("filter %q", got)
	}
	if f, err := steering("afpacket", self, ps); err != nil || len(f.Match) != 0 {
		t.Errorf("afpacket, a tap: %v, %v", f, err)
	}
	var many []netip.Prefix
	for i := 0; i < 17; i++ {
		many = append(many, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i), 0, 0}), 16))
	}
	if _, err := steering("afxdp", self, many); err == nil || !strings.Contains(err.Error(), "at most 16") {
		t.Errorf("17 routes: %v", err)
	}
}
