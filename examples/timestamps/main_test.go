package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/packetio/packetio/internal/testenv"
)

func TestTimestampsOnOwnPair(t *testing.T) {
	testenv.NeedRoot(t)
	g, err := run(context.Background(), "afpacket", "", time.Second, 500, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	if len(g) < 100 {
		t.Fatalf("%d gaps from 1s at 500 pps", len(g))
	}
	// The feeder ticks every 2ms; the stamps must say so, to within what a
	// loaded machine does to a ticker (not a timing assertion: stamps that
	// were garbage, equal or in the wrong unit would be far outside).
	if med := g[len(g)/2]; med < 500*time.Microsecond || med > 20*time.Millisecond {
		t.Fatalf("median gap %v at 500 pps", med)
	}
}
