package main

import (
	"testing"
	"time"

	"github.com/packetio/packetio/internal/testenv"
)

// TestSelfTest runs what `go run ./examples/tcpecho` runs with no -i, once
// and small: netstack and the kernel each echo a megabyte over the veth pair
// and do request/response for a moment.
func TestSelfTest(t *testing.T) {
	testenv.NeedRoot(t)
	for _, mode := range []string{"echo", "sink", "source"} {
		o := options{backend: "afpacket", mode: mode, bytes: 1 << 20, rr: 200 * time.Millisecond, size: 64, conns: 1, runs: 1, port: 8080}
		if err := selfTest(o); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
	}
	o := options{backend: "afpacket", mode: "echo", bytes: 1 << 20, rr: 200 * time.Millisecond, size: 64, conns: 1, runs: 1, port: 8080, lowLatency: true}
	if err := selfTest(o); err != nil {
		t.Fatalf("low latency: %v", err)
	}
}

func TestSelfTestRefusesBadCounts(t *testing.T) {
	if err := selfTest(options{runs: 0, conns: 1}); err == nil {
		t.Fatal("-runs 0 accepted")
	}
}
