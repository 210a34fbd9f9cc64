package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/packetio/packetio/internal/testenv"
)

func dropOn(t *testing.T, backend string) {
	t.Helper()
	for _, queues := range []int{1, 2} {
		o := options{backend: backend, queues: queues, batch: 64, port: discardPort, duration: time.Second, report: 300 * time.Millisecond}
		res, err := run(context.Background(), o, os.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		if res.packets == 0 || res.batches == 0 || res.batches > res.packets {
			t.Fatalf("%s, %d queues: %d packets in %d batches", backend, queues, res.packets, res.batches)
		}
		for q, n := range res.perQueue {
			if n == 0 {
				t.Errorf("%s, %d queues: queue %d received nothing (%v)", backend, queues, q, res.perQueue)
			}
		}
	}
}

func TestDropOnOwnPair(t *testing.T) {
	testenv.NeedRoot(t)
	dropOn(t, "afpacket")
}

// TestDropOnAFXDP: the feeder's UDP port steered to one or two queues of
// a veth with as many.
func TestDropOnAFXDP(t *testing.T) {
	testenv.NeedBPF(t)
	dropOn(t, "afxdp")
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
