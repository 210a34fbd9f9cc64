package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/packetio/packetio/examples/internal/exittest"
	"github.com/packetio/packetio/examples/internal/live"
	"github.com/packetio/packetio/internal/testenv"
)

// TestMain runs main itself when asked, for the exit-status tests.
func TestMain(m *testing.M) {
	exittest.Main("drop", main)
	os.Exit(m.Run())
}

func dropOn(t *testing.T, o options, wantLine ...string) result {
	t.Helper()
	o.port, o.duration, o.report = discardPort, time.Second, 300*time.Millisecond
	// Fed at a rate any receiver takes, so that a loaded machine (the
	// race detector, other tests) does not starve one into seeing nothing.
	o.feedPPS = 300000
	if o.batch == 0 {
		o.batch = 64
	}
	var out bytes.Buffer
	res, err := run(context.Background(), o, &out)
	os.Stderr.Write(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(out.String(), "\n"); first != res.first {
		t.Errorf("the output begins %q, not with the first line", first)
	}
	if res.packets == 0 || res.batches == 0 || res.batches > res.packets {
		t.Fatalf("%+v: %d packets in %d batches", o, res.packets, res.batches)
	}
	for q, n := range res.perQueue {
		if n == 0 {
			t.Errorf("%+v: queue %d received nothing (%v)", o, q, res.perQueue)
		}
	}
	for _, want := range wantLine {
		if !regexp.MustCompile(want).MatchString(res.first) {
			t.Errorf("%+v: first line %q does not match %q", o, res.first, want)
		}
	}
	return res
}

// fed is what the first line says of the feeder on the own pair.
var fed = `; ` + live.FedPattern()

func TestDropOnOwnPair(t *testing.T) {
	testenv.NeedRoot(t)
	testenv.NeedBPF(t)
	for _, tc := range []struct {
		queues int
		want   []string
	}{
		{1, []string{`^drop: afpacket on \S+, 1 rx queue, kernel copy \(TPACKET_V3 receive rings\), need-wakeup n/a, busy-poll n/a, stamps on \(the kernel's, always\), batch 64, worker CPU 1` + fed, `GRO on at \S+ so its veth takes XDP frames`, `taking a copy of every packet`}},
		{2, []string{`^drop: afpacket on \S+, 2 rx queues, .*workers unpinned` + fed}},
	} {
		dropOn(t, options{backend: "afpacket", queues: tc.queues}, tc.want...)
	}
}

// TestDropOnAFXDP: the feeder's UDP port steered to one or two queues of
// a veth with as many, the mode read back, no GRO needed (native XDP).
func TestDropOnAFXDP(t *testing.T) {
	testenv.NeedBPF(t)
	for _, tc := range []struct {
		o    options
		want []string
	}{
		{options{queues: 1}, []string{`^drop: afxdp on \S+, 1 rx queue, native XDP copy mode, need-wakeup on, busy-poll off, stamps off, batch 64, worker CPU 1` + fed, `taking proto udp and udp port 9`}},
		{options{queues: 2, cpu: "1,0", batch: 32}, []string{`, 2 rx queues, .*batch 32, worker CPUs 1,0` + fed}},
		// The flags reach the device and are read back from it.
		{options{queues: 1, busyPoll: true, stamps: true}, []string{`, busy-poll 50us budget 64\b.*, stamps on, `}},
	} {
		tc.o.backend = "afxdp"
		res := dropOn(t, tc.o, tc.want...)
		if strings.Contains(res.first, "GRO on") {
			t.Errorf("afxdp in native mode got GRO turned on: %q", res.first)
		}
	}
}

// TestDropRefusesFlags: a flag the backend has not got, or a CPU the
// machine has not got, is refused by name with exit status 2.
func TestDropRefusesFlags(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"-backend afpacket -busy-poll", "-busy-poll: afpacket has no busy-poll mode"},
		{"-backend afxdp -cpu 999", "no CPU 999"},
		{"-queues 0", "-queues 1-64"},
	} {
		exittest.Refused(t, "drop", tc.args, tc.want)
	}
}

func TestSteering(t *testing.T) {
	if f := (options{backend: "afxdp", port: 9}).steering(); f.String() != "proto udp and udp port 9" {
		t.Errorf("afxdp: %s", f)
	}
	if f := (options{backend: "afxdp", port: 0}).steering(); len(f.Match) != 0 {
		t.Errorf("afxdp, port 0: %s", f)
	}
	if f := (options{backend: "afpacket", port: 9}).steering(); len(f.Match) != 0 {
		t.Errorf("afpacket, a tap, asked to steer: %s", f)
	}
}

// lineWriter hands the address of the "metrics: " line to a channel.
type lineWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	addr chan string
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for _, line := range strings.Split(string(p), "\n") {
		if u, ok := strings.CutPrefix(line, "metrics: "); ok {
			l.addr <- u
		}
	}
	return len(p), nil
}

// TestDropServesMetrics: -metrics serves the receive queue's counters while
// drop runs (the names are the metrics module's; its tests hold the two
// equal).
func TestDropServesMetrics(t *testing.T) {
	testenv.NeedRoot(t)
	testenv.NeedBPF(t)
	o := options{backend: "afpacket", queues: 1, batch: 64, port: discardPort, duration: 2 * time.Second, report: time.Second, feedPPS: 300000, metricsAddr: "127.0.0.1:0"}
	w := &lineWriter{addr: make(chan string, 1)}
	errc := make(chan error, 1)
	go func() { _, err := run(context.Background(), o, w); errc <- err }()
	var body []byte
	select {
	case u := <-w.addr:
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	case err := <-errc:
		t.Fatalf("run ended before serving metrics: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`# TYPE packetio_packets_total counter`, `packetio_queue_up{backend="afpacket",interface="`, `",queue="0",direction="rx"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the scrape lacks %q:\n%s", want, body)
		}
	}
}
