package main

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/google/gopacket/layers"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/testframe"
)

func pair(t *testing.T) *netns.Pair {
	t.Helper()
	testenv.NeedBPF(t)
	return netns.New(t, netns.WithAddrs(netip.MustParsePrefix("10.94.0.1/24"), netip.MustParsePrefix("10.94.0.2/24")))
}

// TestPortsOnOwnPair: the afxdp backend, asked for UDP to 9000 and 9001,
// takes every datagram a kernel client sends to them and nothing else, and
// the kernel's sockets get every datagram to 9002 and none to the asked
// ports.
func TestPortsOnOwnPair(t *testing.T) {
	p := pair(t)
	res, err := demo(context.Background(), p, options{backend: "afxdp", other: 9002, n: 25}, []uint16{9000, 9001}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"udp/9000", "udp/9001"} {
		if res.device[k] != 25 {
			t.Errorf("%s: the device took %d", k, res.device[k])
		}
	}
	if len(res.device) != 2 || res.kernel[9002] != 25 || res.kernel[9000]+res.kernel[9001] != 0 {
		t.Errorf("device %v, kernel %v", res.device, res.kernel)
	}
}

// TestExprOnOwnPair: a tcpdump expression, compiled by pcapfilter into the
// fleet's XDP program, takes what it names (here a destination port, and a
// source port that only the datagrams to -other have) and the rest reaches
// the kernel.
func TestExprOnOwnPair(t *testing.T) {
	p := pair(t)
	o := options{backend: "afxdp", other: 9002, n: 20, expr: "udp dst port 9001 or (udp and src port 40002)"}
	res, err := demo(context.Background(), p, o, []uint16{9000, 9001}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	// The reference interpreter's verdicts are the ones the expression
	// means.
	if res.want[9000] || !res.want[9001] || !res.want[9002] {
		t.Fatalf("reference verdicts %v", res.want)
	}
	if res.device["udp/9001"] != 20 || res.device["udp/9002"] != 20 || res.kernel[9000] != 20 {
		t.Errorf("device %v, kernel %v", res.device, res.kernel)
	}
}

// TestAfpacketRefuses: afpacket refuses a steering filter, and -expr, and
// says it is a tap.
func TestAfpacketRefuses(t *testing.T) {
	for _, o := range []options{{backend: "afpacket"}, {backend: "afpacket", expr: "udp"}} {
		_, err := open(port{name: "lo"}, o, []uint16{9000}, os.Stderr)
		if !errors.Is(err, packetio.ErrUnsupported) || !strings.Contains(err.Error(), "tap") {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// TestClassify names the kinds the counts are kept by.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		spec testframe.Spec
		want string
	}{
		{testframe.Spec{DPort: 9000}, "udp/9000"},
		{testframe.Spec{DPort: 9001, V6: true, VLAN: []uint16{3}}, "udp/9001"},
		{testframe.Spec{Proto: layers.IPProtocolTCP, DPort: 22}, "tcp/22"},
		{testframe.Spec{Proto: layers.IPProtocolICMPv4, ICMPType: 8}, "ip proto 1"},
		{testframe.Spec{DPort: 9000, FragOff: 5}, "ip proto 17"},
		{testframe.Spec{Ether: layers.EthernetTypeARP}, "ethertype 0x0806"},
	} {
		if got := classify(tc.spec.Build(t)); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.spec, got, tc.want)
		}
	}
}

// TestParsePorts: lists, repeats folded, bad ports refused.
func TestParsePorts(t *testing.T) {
	got, err := parsePorts(" 9000,9001,9000, ")
	if err != nil || len(got) != 2 || got[0] != 9000 || got[1] != 9001 {
		t.Fatalf("%v %v", got, err)
	}
	for _, bad := range []string{"", ",", "0", "65536", "x", "9000,-1"} {
		if _, err := parsePorts(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	f := filterFor([]uint16{9000, 9001})
	rules, err := f.Rules()
	if err != nil || len(rules) != 2 {
		t.Fatalf("%v: %v %v", f, rules, err)
	}
}
