package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio/examples/internal/exittest"
	"github.com/packetio/packetio/internal/testenv"
)

// TestMain runs main itself when asked, for the exit-status tests.
func TestMain(m *testing.M) {
	exittest.Main("blast", main)
	os.Exit(m.Run())
}

// nobody is what the first line says of the default sink on the own pair.
const nobody = `; sending 60-byte UDP frames \(64 on the wire with FCS\), \d+ flow\(s\), to 02:70:69:6f:00:99, a MAC nobody owns: \S+'s kernel drops each frame at its first look$`

// TestBlastOnOwnPair: afpacket and afxdp, one queue (on CPU 1 by default)
// and two (pinned by blast, not also by the backend), to the MAC nobody
// owns; the first line read back from the device.
func TestBlastOnOwnPair(t *testing.T) {
	testenv.NeedRoot(t)
	testenv.NeedBPF(t)
	for _, tc := range []struct {
		o    options
		want string
	}{
		{options{backend: "afpacket", queues: 1}, `^blast: afpacket on \S+, 1 tx queue, kernel copy \(AF_PACKET transmit, qdisc bypass\), need-wakeup n/a, busy-poll n/a, stamps n/a, batch 64, worker CPU 1` + nobody},
		{options{backend: "afpacket", queues: 2}, `^blast: afpacket on \S+, 2 tx queues, .*, batch 64, workers unpinned` + nobody},
		{options{backend: "afxdp", queues: 1}, `^blast: afxdp on \S+, 1 tx queue, native XDP copy mode, up to \d+ frames a kick, need-wakeup on, busy-poll off, stamps n/a, batch 64, worker CPU 1` + nobody},
		{options{backend: "afxdp", queues: 2, cpu: "0,1"}, `^blast: afxdp on \S+, 2 tx queues, .*, worker CPUs 0,1` + nobody},
		{options{backend: "afxdp", queues: 1, busyPoll: true}, `, busy-poll 50us budget 64\b`},
		{options{backend: "afpacket", queues: 1, dstMAC: "ff:ff:ff:ff:ff:ff"}, `, to ff:ff:ff:ff:ff:ff \(-dst-mac\)$`},
	} {
		o := tc.o
		o.size, o.flows, o.batch, o.duration, o.report = 60, 4, 64, time.Second, 300*time.Millisecond
		var out bytes.Buffer
		res, err := run(context.Background(), o, &out)
		os.Stderr.Write(out.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(out.String(), "\n"); first != res.first {
			t.Errorf("the output begins %q, not with the first line", first)
		}
		if res.packets == 0 || res.errors != 0 {
			t.Fatalf("%+v: sent %d packets, %d errors", o, res.packets, res.errors)
		}
		if !regexp.MustCompile(tc.want).MatchString(res.first) {
			t.Errorf("%+v: first line %q does not match %q", o, res.first, tc.want)
		}
	}
}

// TestBlastRefusesFlagsByName: exit status 2, the flag and the backend named.
func TestBlastRefusesFlagsByName(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"-backend afpacket -busy-poll", "-busy-poll: afpacket has no busy-poll mode"},
		{"-live -busy-poll", "-busy-poll: -live"},
		{"-cpu 999", "no CPU 999"},
		{"-cpus 1", "flag provided but not defined: -cpus"},
	} {
		exittest.Refused(t, "blast", tc.args, tc.want)
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
		func(o *options) { o.live, o.metricsAddr = true, ":0" },
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
	for _, cpu := range []string{"0,x", "999"} {
		o := good
		o.cpu = cpu
		if o.check() == nil {
			t.Errorf("-cpu %s accepted", cpu)
		}
	}
}
