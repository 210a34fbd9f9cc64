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
		res, err := measure(context.Background(), "afpacket", "", 200, low, os.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		checkTrips(t, res)
	}
}

func checkTrips(t *testing.T, res trips) {
	t.Helper()
	if len(res.rtt) != 200 || len(res.rxPath) != 200 {
		t.Fatalf("%d round trips, %d receive-path samples", len(res.rtt), len(res.rxPath))
	}
	// report sorted rtt; its last entry is the longest trip, and no
	// trip's receive path can be longer.
	for _, d := range res.rxPath {
		if d < 0 || d > res.rtt[len(res.rtt)-1] {
			t.Fatalf("receive path %v outside every round trip", d)
		}
	}
}

func TestSwapTurnsOnlyPingpongFramesAround(t *testing.T) {
	f := []byte{1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2}
	if swap(f) {
		t.Fatal("a runt was swapped")
	}
}
