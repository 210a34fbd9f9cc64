package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"testing"

	"github.com/packetio/packetio/examples/internal/bed"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// TestDemoOnOwnPair runs the demonstration of every match on a veth pair
// of its own: the fleet on one end takes exactly the frames the match must
// take, byte for byte, of a set sent from the other end with raw sockets,
// and none of the near misses.
func TestDemoOnOwnPair(t *testing.T) {
	testenv.NeedBPF(t)
	for _, tc := range []options{
		{match: "vlan", vlan: 100},
		{match: "vlan", vlan: 0x102},
		{match: "dstmac"},
		{match: "dstmac", mac: "aa:bb:cc:dd:ee:ff"},
		{match: "tcpsyn"},
		{match: "tcpsyn", ports: "22,443"},
		{match: "vxlan", vni: "0xabcdef"},
		{match: "gre", proto: "0x6558"},
		{match: "gre", proto: "0x0800"},
	} {
		t.Run(tc.match, func(t *testing.T) {
			p := netns.New(t)
			var out bytes.Buffer
			res, err := runDemo(context.Background(), tc, bed.Of(p.A), bed.Of(p.B), bed.AfterFirstLine(&out, "made\n"))
			os.Stderr.Write(out.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			const want = `^customfilter: afxdp/xdp on \S+, 1 queue, native XDP copy mode, up to \d+ frames a kick, need-wakeup on, busy-poll off, stamps off, batch 64, workers unpinned; taking what the custom match takes, the rest left to the kernel\nmade\n`
			if !regexp.MustCompile(want).MatchString(out.String()) {
				t.Errorf("output does not begin with the first line (%q): %.300q", want, out.String())
			}
			if res.hits == 0 || res.misses == 0 {
				t.Fatalf("a demonstration of %d hits and %d misses shows nothing", res.hits, res.misses)
			}
			if res.taken != res.hits || res.wrong+res.unknown+res.absent != 0 {
				t.Fatalf("%+v", res)
			}
		})
	}
}

// TestBadFlags: arguments a match cannot take are refused before anything
// is opened.
func TestBadFlags(t *testing.T) {
	for _, o := range []options{
		{match: "nosuch"},
		{match: "vlan", vlan: 4096},
		{match: "dstmac", mac: "not-a-mac"},
		{match: "tcpsyn", ports: "80,x"},
		{match: "tcpsyn", ports: "0"},
		{match: "vxlan", vni: "0x1000000"},
		{match: "gre", proto: "0x10000"},
	} {
		if _, err := matchFor(o, nil); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if _, err := matchFor(options{match: "vxlan", vni: "11259375"}, nil); err != nil {
		t.Errorf("a decimal VNI: %v", err)
	}
}
