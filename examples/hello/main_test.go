package main

import (
	"testing"
	"time"

	"github.com/packetio/packetio/internal/testenv"
)

// TestHello runs what `go run ./examples/hello` runs: its own veth pair,
// frames both ways, everything removed.
func TestHello(t *testing.T) {
	testenv.NeedRoot(t)
	if err := runAll(backends, "", 16, 2*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestHelloRefusesBadCounts(t *testing.T) {
	for _, n := range []int{0, -1, 1025} {
		if err := run("afpacket", "", n, time.Second); err == nil {
			t.Errorf("-n %d accepted", n)
		}
	}
}
