package main

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/packetio/packetio/internal/testenv"
)

func TestPingpongOnOwnPair(t *testing.T) {
	testenv.NeedRoot(t)
	for _, low := range []bool{false, true} {
		res, err := measure(context.Background(), config{backend: "afpacket", n: 200, lowLatency: low}, os.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		checkTrips(t, res)
		checkLine(t, res, `^pingpong: afpacket on \S+, 1 rx queue \+ 1 tx queue, kernel copy \(TPACKET_V[23] receive rings.*\), need-wakeup n/a, busy-poll n/a, stamps on \(the kernel's, always\), batch 1, workers unpinned; sending one frame per trip to a reflector on \S+: afpacket \(kernel copy`)
		checkLine(t, res, `; one-way: departure stamps at this end \(CLOCK_REALTIME.*\) to the reflector's arrival stamps \(CLOCK_REALTIME\)$`)
		// One-way: a departure stamp here and an arrival stamp there for
		// every trip, on one clock, so never below 0 nor above the trip.
		if len(res.oneWay) != 200 {
			t.Fatalf("%d one-way samples for 200 trips", len(res.oneWay))
		}
		for _, d := range res.oneWay {
			if d < 0 || d > res.rtt[len(res.rtt)-1] {
				t.Fatalf("one-way %v outside every round trip", d)
			}
		}
	}
}

func checkLine(t *testing.T, res trips, want string) {
	t.Helper()
	if !regexp.MustCompile(want).MatchString(res.first) {
		t.Errorf("first line %q does not match %q", res.first, want)
	}
}

// TestPingpongFlags: -busy-poll and -cpu reach both afxdp ends and the
// worker; -busy-poll on afpacket is refused by name.
func TestPingpongFlags(t *testing.T) {
	if err := (config{backend: "afpacket", busyPoll: true}).check(); err == nil || !strings.Contains(err.Error(), "-busy-poll: afpacket") {
		t.Errorf("-busy-poll on afpacket: %v", err)
	}
	if err := (config{backend: "afxdp", cpu: "999"}).check(); err == nil || !strings.Contains(err.Error(), "no CPU 999") {
		t.Errorf("-cpu 999: %v", err)
	}
	testenv.NeedBPF(t)
	res, err := measure(context.Background(), config{backend: "afxdp", n: 200, busyPoll: true, cpu: "1"}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	checkTrips(t, res)
	checkLine(t, res, `^pingpong: afxdp on \S+, .*native XDP copy mode, up to \d+ frames a kick, need-wakeup on, busy-poll 50us budget 64\b.*, stamps on, batch 1, worker CPU 1; .*: afxdp \(native XDP copy mode, busy-poll 50us`)
}

// TestPingpongOnAFXDP: both ends on afxdp, and the reflector on afpacket,
// with the receive path from CLOCK_MONOTONIC stamps at the XDP hook.
func TestPingpongOnAFXDP(t *testing.T) {
	testenv.NeedBPF(t)
	for _, reflector := range []string{"", "afpacket"} {
		res, err := measure(context.Background(), config{backend: "afxdp", reflector: reflector, n: 200}, os.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		checkTrips(t, res)
		checkLine(t, res, `^pingpong: afxdp on \S+, 1 rx queue \+ 1 tx queue, native XDP copy mode, up to \d+ frames a kick, need-wakeup on, busy-poll off, stamps on, batch 1, workers unpinned; `)
		checkLine(t, res, `; one-way: not measured \(no departure stamps on this backend\)$`)
		if len(res.oneWay) != 0 {
			t.Errorf("%d one-way samples without departure stamps", len(res.oneWay))
		}
	}
}

func checkTrips(t *testing.T, res trips) {
	t.Helper()
	if len(res.rtt) != 200 || len(res.rxPath) != 200 {
		t.Fatalf("%d round trips, %d receive-path samples (%s)", len(res.rtt), len(res.rxPath), res.clock.Name)
	}
	// report sorted rtt; its last entry is the longest trip, and no
	// trip's receive path can be longer. A path of 0 is a stamp read on
	// the wrong clock (from the future); all of them 0 would be that.
	zero := 0
	for _, d := range res.rxPath {
		if d < 0 || d > res.rtt[len(res.rtt)-1] {
			t.Fatalf("receive path %v outside every round trip", d)
		}
		if d == 0 {
			zero++
		}
	}
	if zero == len(res.rxPath) {
		t.Fatalf("every receive path is 0: the stamps are not on %s", res.clock.Name)
	}
}

func TestSwapTurnsOnlyPingpongFramesAround(t *testing.T) {
	f := []byte{1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2}
	if swap(f) {
		t.Fatal("a runt was swapped")
	}
}
