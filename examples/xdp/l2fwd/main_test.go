package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/packetio/packetio/examples/internal/bed"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// forward runs the forwarder on the near ends and the traffic check from
// the far ends, and fails unless every frame crossed byte for byte and the
// counters agree.
func forward(t *testing.T, near, far []bed.Port, o options) {
	t.Helper()
	o.feed = "fed by the test"
	var out bytes.Buffer
	f, err := start(context.Background(), near, o, &out)
	os.Stderr.Write(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	// One first line per port, read back from its fleet.
	lines := strings.Split(out.String(), "\n")
	want := regexp.MustCompile(`^l2fwd: afxdp/xdp on \S+, \d queues?, native XDP copy mode, up to \d+ frames a kick, need-wakeup on, busy-poll (off|50us budget 64\b.*), stamps off, batch \d+, (workers unpinned|worker CPUs? [0-9,]+); fed by the test$`)
	for i := range near {
		if !want.MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %q", i, lines[i], want)
		}
		if o.busyPoll != strings.Contains(lines[i], "busy-poll 50us") || (o.cpu != "" && !strings.Contains(lines[i], "CPU")) {
			t.Errorf("line %d %q does not say -busy-poll %v -cpu %q", i, lines[i], o.busyPoll, o.cpu)
		}
	}
	res, cerr := check(context.Background(), far, o.n, o.macswap, os.Stderr)
	if err := f.stop(os.Stderr); err != nil {
		t.Fatal(err)
	}
	if cerr != nil {
		t.Fatal(cerr)
	}
	if res.sent != len(far)*o.n || res.arrived != res.sent {
		t.Fatalf("%d of %d frames arrived intact", res.arrived, res.sent)
	}
	var forwarded, dropped uint64
	for i := range near {
		forwarded += f.forwarded[i].Load()
		dropped += f.dropped[i].Load()
	}
	if forwarded < uint64(res.sent) || dropped != 0 {
		t.Fatalf("forwarded %d, dropped %d, for %d sent", forwarded, dropped, res.sent)
	}
}

// TestTwoPorts: frames of 60 to 1514 bytes sent into one veth pair come out
// of the other, and back, byte for byte, copied between the two fleets'
// UMEMs; the first port has two queues, so one worker drives two receive
// queues into the other port's one transmit queue.
func TestTwoPorts(t *testing.T) {
	testenv.NeedBPF(t)
	p1 := netns.New(t, netns.WithQueues(2))
	p2 := netns.New(t)
	forward(t, []bed.Port{bed.Of(p1.A), bed.Of(p2.A)}, []bed.Port{bed.Of(p1.B), bed.Of(p2.B)}, options{batch: 64, n: 300})
}

// TestTwoPortsMACSwap: -macswap rewrites every frame crossing, and only
// that.
func TestTwoPortsMACSwap(t *testing.T) {
	testenv.NeedBPF(t)
	p1, p2 := netns.New(t), netns.New(t)
	forward(t, []bed.Port{bed.Of(p1.A), bed.Of(p2.A)}, []bed.Port{bed.Of(p1.B), bed.Of(p2.B)}, options{batch: 16, n: 100, macswap: true})
}

// TestBounce: with one port, every frame goes back out of it in the frame
// it arrived in, with and without the addresses swapped.
func TestBounce(t *testing.T) {
	testenv.NeedBPF(t)
	for _, swap := range []bool{false, true} {
		p := netns.New(t)
		forward(t, []bed.Port{bed.Of(p.A)}, []bed.Port{bed.Of(p.B)}, options{batch: 64, n: 300, macswap: swap})
	}
	// -busy-poll and -cpu reach the sockets and the worker.
	p := netns.New(t)
	forward(t, []bed.Port{bed.Of(p.A)}, []bed.Port{bed.Of(p.B)}, options{batch: 64, n: 100, busyPoll: true, cpu: "0"})
}
