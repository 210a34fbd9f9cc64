package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/packetio/packetio/examples/internal/forward"
	"github.com/packetio/packetio/internal/testenv"
)

func TestL3fwdOnOwnPair(t *testing.T) {
	testenv.NeedRoot(t)
	o := options{backend: "afpacket", batch: 64, duration: time.Second, report: 300 * time.Millisecond}
	res, err := run(context.Background(), o, os.Stderr)
	if err != nil {
		t.Fatal(err) // includes the frame-conservation check
	}
	if res.forwarded == 0 || res.arrived == 0 {
		t.Fatalf("forwarded %d, %d came back", res.forwarded, res.arrived)
	}
	if res.verdicts[forward.BadHeader] != 0 {
		t.Fatalf("%d frames from the source had bad headers", res.verdicts[forward.BadHeader])
	}
}

func TestL3fwdRefusesABadRoute(t *testing.T) {
	testenv.NeedRoot(t)
	o := options{backend: "afpacket", batch: 64, duration: time.Second, report: time.Second, routes: routes{"nonsense"}}
	if _, err := run(context.Background(), o, os.Stderr); err == nil {
		t.Fatal("a bad route was accepted")
	}
}
