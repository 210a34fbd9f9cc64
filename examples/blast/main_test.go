package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/packetio/packetio/internal/testenv"
)

func TestBlastOnOwnPair(t *testing.T) {
	testenv.NeedRoot(t)
	o := options{backend: "afpacket", size: 60, flows: 4, queues: 2, batch: 64, duration: time.Second, report: 300 * time.Millisecond, dstMAC: "ff:ff:ff:ff:ff:ff"}
	res, err := run(context.Background(), o, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if res.packets == 0 || res.errors != 0 {
		t.Fatalf("sent %d packets, %d errors", res.packets, res.errors)
	}
}

func TestBlastHonoursTheRate(t *testing.T) {
	testenv.NeedRoot(t)
	o := options{backend: "afpacket", size: 60, flows: 1, queues: 1, batch: 16, pps: 2000, duration: time.Second, report: time.Second, dstMAC: "ff:ff:ff:ff:ff:ff"}
	res, err := run(context.Background(), o, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	// A rate limit is a ceiling: at most one batch over the rate.
	if res.packets > 2000+16 {
		t.Fatalf("sent %d packets in 1s at -pps 2000", res.packets)
	}
}

func TestBlastRefusesBadFlags(t *testing.T) {
	good := options{size: 60, flows: 1, queues: 1, batch: 1, duration: time.Second, report: time.Second, dstMAC: "ff:ff:ff:ff:ff:ff"}
	for _, mut := range []func(*options){
		func(o *options) { o.queues = 0 },
		func(o *options) { o.flows = 0 },
		func(o *options) { o.batch = 0 },
		func(o *options) { o.pps = -1 },
		func(o *options) { o.duration = 0 },
		func(o *options) { o.dstMAC = "x" },
	} {
		o := good
		mut(&o)
		if o.check() == nil {
			t.Errorf("accepted %+v", o)
		}
	}
	if err := good.check(); err != nil {
		t.Fatal(err)
	}
}
