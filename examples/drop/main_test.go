package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/packetio/packetio/internal/testenv"
)

func TestDropOnOwnPair(t *testing.T) {
	testenv.NeedRoot(t)
	for _, queues := range []int{1, 2} {
		o := options{backend: "afpacket", queues: queues, batch: 64, duration: time.Second, report: 300 * time.Millisecond}
		res, err := run(context.Background(), o, os.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		if res.packets == 0 || res.batches == 0 || res.batches > res.packets {
			t.Fatalf("%d queues: %d packets in %d batches", queues, res.packets, res.batches)
		}
	}
}
