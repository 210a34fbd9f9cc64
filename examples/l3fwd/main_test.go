package main

import (
	"context"
	"net"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio/examples/internal/exittest"
	"github.com/packetio/packetio/examples/internal/forward"
	"github.com/packetio/packetio/examples/internal/live"
	"github.com/packetio/packetio/internal/testenv"
)

// TestMain runs main itself when asked, for the exit-status tests.
func TestMain(m *testing.M) {
	exittest.Main("l3fwd", main)
	os.Exit(m.Run())
}

func l3fwdOn(t *testing.T, o options, want string) result {
	t.Helper()
	o.batch, o.duration, o.report, o.feedPPS = 64, time.Second, 300*time.Millisecond, 200000
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
	if !regexp.MustCompile(want).MatchString(res.first) {
		t.Errorf("first line %q does not match %q", res.first, want)
	}
	return res
}

// fed is what the first line says of the feeder and the sink.
var fed = `; ` + live.FedPattern() + `(, GRO on at \S+ so its veth takes XDP frames)?, 60-byte UDP to 10.99.1.1 port 9, 64 flows; routed back to \S+ \(\S+\), whose kernel drops it at its routing look; `

func TestL3fwdOnOwnPair(t *testing.T) {
	testenv.NeedRoot(t)
	testenv.NeedBPF(t)
	l3fwdOn(t, options{backend: "afpacket"}, `^l3fwd: afpacket on \S+, 1 rx queue \+ 1 tx queue, kernel copy \(TPACKET_V3 receive rings\), need-wakeup n/a, busy-poll n/a, stamps on \(the kernel's, always\), batch 64, worker CPU 1`+fed+`a tap`)
}

// TestL3fwdOnAFXDP: steered to what the router routes, forwarded in the
// frame it arrived in, every frame home at the end; -busy-poll, -cpu and
// -frames reach the device and the worker.
func TestL3fwdOnAFXDP(t *testing.T) {
	testenv.NeedBPF(t)
	l3fwdOn(t, options{backend: "afxdp"}, `^l3fwd: afxdp on \S+, 1 rx queue \+ 1 tx queue, native XDP copy mode, frames in 32 cache colours, up to \d+ frames a kick, need-wakeup on, busy-poll off, stamps off, batch 64, worker CPU 1`+fed+`taking `)
	l3fwdOn(t, options{backend: "afxdp", busyPoll: true, cpu: "0"}, `, busy-poll 50us budget 64\b.* worker CPU 0;`)
	if res := l3fwdOn(t, options{backend: "afxdp", frames: 1024}, `^l3fwd: afxdp `); res.frames != 1024 {
		t.Errorf("-frames 1024: the device has %d frames", res.frames)
	}
}

func TestL3fwdRefusesFlagsByName(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"-backend afpacket -busy-poll", "-busy-poll: afpacket has no busy-poll mode"},
		{"-cpu 999", "no CPU 999"},
		{"-frames -1", "-frames 0 or more"},
	} {
		exittest.Refused(t, "l3fwd", tc.args, tc.want)
	}
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
