package main

import (
	"context"
	"os"
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
	}
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
