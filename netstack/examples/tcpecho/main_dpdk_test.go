//go:build dpdk && linux && amd64 && cgo

package main

import (
	"testing"
	"time"

	"github.com/packetio/packetio/internal/testenv"
)

// With -tags dpdk the self-test also runs the stack over DPDK's AF_PACKET
// driver, once and small, beside afpacket.
func TestSelfTestDPDK(t *testing.T) {
	testenv.NeedRoot(t)
	o := options{backend: "dpdk,afpacket", mode: "echo", bytes: 1 << 20, rr: 200 * time.Millisecond, size: 64, conns: 1, runs: 1, port: 8080}
	if err := selfTest(o); err != nil {
		t.Fatal(err)
	}
}
