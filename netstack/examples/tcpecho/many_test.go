//go:build linux

package main

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// TestMany1000 is issue 20's connection count: 1,000 connections from the
// kernel on B to one stack over afpacket, open at once, each sinking 1 MiB
// (64 KiB under the race detector).
// Every one must complete, and the memory per connection is reported.
//
// The clients use CUBIC, Linux's default, whatever the host's default is:
// on a host defaulting to BBR, the fifth of the traffic the receive ring
// drops under this crowd has BBR hold flows to a few kilobytes a round trip
// for seconds to minutes (clientcc.go), which is what BBR does, not what
// the test measures.
func TestMany1000(t *testing.T) {
	testenv.NeedRoot(t)
	pair := netns.New(t, netns.WithAddrs(netip.MustParsePrefix("10.9.0.1/24"), netip.MustParsePrefix("10.9.0.2/24")))
	o := options{backend: "afpacket", mode: "sink", bytes: manyTestBytes, many: 1000, port: 8080, runs: 1, conns: 1, stats: -1, clientCC: "cubic"}
	r, err := measureNetstack(o, "afpacket", pair, netip.MustParsePrefix("10.9.0.3/24"), true)
	if r.stats != nil {
		st := r.stats
		t.Logf("stack: received %d packets, the device dropped %d before the stack saw them; %d TCP retransmits", st.RxPackets, st.RxDeviceDropped, st.TCPRetransmits)
	}
	if err != nil {
		t.Fatal(err)
	}
	m := r.many
	if m == nil {
		t.Fatal("no -many result")
	}
	if m.n != 1000 || m.completed != 1000 || len(m.failures) != 0 {
		t.Fatalf("%d of %d completed: %s", m.completed, m.n, m.failed())
	}
	heap, _ := m.perConn()
	if m.before.heapInuse == 0 || m.peak.heapInuse < m.open.heapInuse || heap <= 0 {
		t.Errorf("memory not measured: before %+v, open %+v, peak %+v", m.before, m.open, m.peak)
	}
	rep := m.report(o.mode, o.bytes, stackBuffers())
	for _, want := range []string{"1000 completed", "per connection", "KiB heap in use", "send 4096 KiB, receive 4096 KiB"} {
		if !strings.Contains(rep, want) {
			t.Errorf("report lacks %q:\n%s", want, rep)
		}
	}
	t.Log(rep)
}

// The self-test's -many dispatch, small, in every mode over both backends
// and the kernel.
func TestSelfTestMany(t *testing.T) {
	testenv.NeedBPF(t)
	for _, mode := range []string{"echo", "sink", "source"} {
		o := options{backend: "afpacket,afxdp", mode: mode, bytes: 64 << 10, many: 20, port: 8080, runs: 1, conns: 1, size: 64}
		if err := selfTest(o); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
	}
}

func TestManyFailed(t *testing.T) {
	reset := fmt.Errorf("receive: %w", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)})
	timeout := fmt.Errorf("dial: %w", &net.OpError{Op: "dial", Net: "tcp4", Err: os.ErrDeadlineExceeded})
	for _, tc := range []struct {
		name string
		errs []error
		want string
	}{
		{"all", nil, ""},
		{"grouped", []error{reset, timeout, reset}, "3 of 5 connections did not complete: 2: receive: read: read: connection reset by peer; 1: dial: i/o timeout"},
		{"plain", []error{errors.New("echo: received 3 bytes, want 4")}, "1 of 5 connections did not complete: 1: echo: received 3 bytes, want 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := manyResult{n: 5, completed: 5 - len(tc.errs), failures: map[string]int{}}
			for _, err := range tc.errs {
				r.failures[reason(err)]++
			}
			if got := r.failed(); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestManyDefaults(t *testing.T) {
	o := options{many: 10, bytes: 64 << 20}
	if err := manyDefaults(&o); err != nil || o.bytes != 1<<20 {
		t.Errorf("-many 10: bytes %d, %v; want 1 MiB", o.bytes, err)
	}
	for _, bad := range []options{{many: -1}, {many: 5, iface: "veth0"}} {
		if err := manyDefaults(&bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
