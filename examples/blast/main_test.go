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

// TestBlastOnAFXDP: two transmit-only queues on a two-queue veth, workers
// pinned by blast (and not also by the backend).
func TestBlastOnAFXDP(t *testing.T) {
	testenv.NeedBPF(t)
	o := options{backend: "afxdp", size: 60, flows: 4, queues: 2, batch: 64, duration: time.Second, report: 300 * time.Millisecond, cpus: "0,1", dstMAC: "ff:ff:ff:ff:ff:ff"}
	res, err := run(context.Background(), o, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if res.packets == 0 || res.errors != 0 {
		t.Fatalf("sent %d packets, %d errors", res.packets, res.errors)
	}
}

// TestBlastLive: frames from inside the kernel, two generators, at a rate
// and flat out.
func TestBlastLive(t *testing.T) {
	testenv.NeedBPF(t)
	for _, pps := range []float64{0, 50000} {
		o := options{live: true, size: 60, flows: 16, queues: 2, batch: 64, pps: pps, duration: time.Second, report: 300 * time.Millisecond, dstMAC: "ff:ff:ff:ff:ff:ff"}
		res, err := run(context.Background(), o, os.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		if res.packets == 0 || (pps > 0 && res.packets > uint64(pps)+uint64(pps)/10) {
			t.Fatalf("-pps %v: sent %d packets in 1s", pps, res.packets)
		}
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
		func(o *options) { o.live, o.size = true, 4000 },
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
	if _, err := parseCPUs("0,x"); err == nil {
		t.Error("-cpus 0,x accepted")
	}
	if c, err := parseCPUs("1,3"); err != nil || len(c) != 2 || c[1] != 3 {
		t.Errorf("parseCPUs(1,3) = %v, %v", c, err)
	}
}
