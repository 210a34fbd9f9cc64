package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/packetio/packetio/internal/testenv"
)

func timestampsOn(t *testing.T, backend string) {
	t.Helper()
	res, err := run(context.Background(), options{backend: backend, d: time.Second, pps: 500, port: discardPort}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	g := res.gaps
	if len(g) < 100 {
		t.Fatalf("%d gaps from 1s at 500 pps", len(g))
	}
	// The feeder ticks every 2ms; the stamps must say so, to within what a
	// loaded machine does to a ticker (not a timing assertion: stamps that
	// were garbage, equal or in the wrong unit would be far outside).
	if med := g[len(g)/2]; med < 500*time.Microsecond || med > 20*time.Millisecond {
		t.Fatalf("median gap %v at 500 pps", med)
	}
	// The stamps are on a clock the program reads: every packet waited
	// between 0 and the whole run, and not all of them 0 (a clock read
	// wrongly gives 0 for a stamp "from the future").
	if !res.clock.Comparable() || len(res.waits) != len(g)+1 {
		t.Fatalf("%s: %d waits for %d packets", res.clock.Name, len(res.waits), len(g)+1)
	}
	if med := res.waits[len(res.waits)/2]; med <= 0 || med > time.Second {
		t.Fatalf("%s: median wait %v", res.clock.Name, med)
	}
}

func TestTimestampsOnOwnPair(t *testing.T) {
	testenv.NeedRoot(t)
	timestampsOn(t, "afpacket")
}

// TestTimestampsOnAFXDP: CLOCK_MONOTONIC stamps from the XDP hook, only
// the feeder's port taken.
func TestTimestampsOnAFXDP(t *testing.T) {
	testenv.NeedBPF(t)
	timestampsOn(t, "afxdp")
}
