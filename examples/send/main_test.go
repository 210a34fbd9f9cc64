package main

import (
	"testing"

	"github.com/packetio/packetio/internal/testenv"
)

func sendCases(b string) []options {
	return []options{
		{backend: b, count: 5, size: 60, dstMAC: "ff:ff:ff:ff:ff:ff", srcMAC: "02:00:00:00:00:01", srcIP: "10.99.0.1", dstIP: "10.99.0.2", srcPort: 1, dstPort: 9},
		{backend: b, count: 300, size: 1514, vlan: 7, dstMAC: "ff:ff:ff:ff:ff:ff", srcMAC: "02:00:00:00:00:01", srcIP: "2001:db8::1", dstIP: "2001:db8::2", srcPort: 1, dstPort: 9},
	}
}

func TestSendOnOwnPair(t *testing.T) {
	testenv.NeedRoot(t)
	for _, o := range sendCases("afpacket") {
		spec, err := o.spec()
		if err != nil {
			t.Fatal(err)
		}
		if err := run(o, spec); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSendOnAFXDP: transmit only (no receive queue, nothing taken from the
// kernel), every frame completed and arrived at the far end.
func TestSendOnAFXDP(t *testing.T) {
	testenv.NeedBPF(t)
	for _, o := range sendCases("afxdp") {
		spec, err := o.spec()
		if err != nil {
			t.Fatal(err)
		}
		if err := run(o, spec); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSendRefusesBadFlags(t *testing.T) {
	good := options{count: 1, size: 60, dstMAC: "ff:ff:ff:ff:ff:ff", srcMAC: "02:00:00:00:00:01", srcIP: "10.0.0.1", dstIP: "10.0.0.2"}
	for _, mut := range []func(*options){
		func(o *options) { o.count = 0 },
		func(o *options) { o.dstMAC = "nope" },
		func(o *options) { o.dstIP = "::1" },
		func(o *options) { o.vlan = 5000 },
		func(o *options) { o.dstPort = 70000 },
	} {
		o := good
		mut(&o)
		if _, err := o.spec(); err == nil {
			t.Errorf("accepted %+v", o)
		}
	}
	o := good
	o.backend = "nosuch"
	spec, _ := o.spec()
	if err := run(o, spec); err == nil {
		t.Fatal("unknown backend accepted")
	}
}
