package main

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/netstack"
)

// TestSelfTest runs what `go run ./examples/tcpecho` runs with no -i, once
// and small: netstack on afpacket and on afxdp, and the kernel, each echo a
// megabyte over the veth pair and do request/response for a moment.
func TestSelfTest(t *testing.T) {
	testenv.NeedBPF(t) // afxdp loads an XDP program
	base := options{mode: "echo", bytes: 1 << 20, rr: 200 * time.Millisecond, size: 64, conns: 1, runs: 1, port: 8080}
	for _, mode := range []string{"echo", "sink", "source"} {
		o := base
		o.mode, o.backend = mode, "afpacket,afxdp"
		if err := selfTest(o); err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
	}
	for _, tc := range []struct {
		name string
		set  func(*options)
	}{
		{"afpacket low latency", func(o *options) { o.backend, o.lowLatency = "afpacket", true }},
		{"afpacket without GSO", func(o *options) { o.backend, o.noGSO = "afpacket", true }},
		{"afxdp generic", func(o *options) { o.backend, o.generic = "afxdp", true }},
		{"afxdp software checksums", func(o *options) { o.backend, o.noTxCsum = "afxdp", true }},
	} {
		o := base
		tc.set(&o)
		if err := selfTest(o); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
}

func TestSelfTestRefusesBadCounts(t *testing.T) {
	if err := selfTest(options{backend: "afpacket", runs: 0, conns: 1}); err == nil {
		t.Fatal("-runs 0 accepted")
	}
}

func TestBackendList(t *testing.T) {
	for _, ok := range []string{"afpacket", "afxdp", "afxdp,afpacket"} {
		if _, err := backendList(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "tap", "afxdp,afxdp", "afpacket,"} {
		if _, err := backendList(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// A cgo backend this build lacks is refused with the tag it needs.
	for name, tag := range tags {
		_, err := backendList(name)
		if _, built := tagged[name]; built {
			if err != nil {
				t.Errorf("%s is built in and refused: %v", name, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), "-tags "+tag) {
			t.Errorf("%s not built in: %v, want a refusal naming -tags %s", name, err, tag)
		}
	}
}

func TestParseNeighbors(t *testing.T) {
	m, err := parseNeighbors("192.0.2.1=02:00:00:00:00:01,2001:db8::1=02:00:00:00:00:02")
	if err != nil || len(m) != 2 || m[netip.MustParseAddr("2001:db8::1")].String() != "02:00:00:00:00:02" {
		t.Errorf("got %v, %v", m, err)
	}
	if m, err := parseNeighbors(""); err != nil || m != nil {
		t.Errorf("empty: %v, %v", m, err)
	}
	for _, bad := range []string{"192.0.2.1", "192.0.2.1=zz", "host=02:00:00:00:00:01", "192.0.2.1=02:00:00:00:00:01,192.0.2.1=02:00:00:00:00:02"} {
		if _, err := parseNeighbors(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// With -i the stack on afxdp is steered its port as a server and its
// server's replies as a client.
func TestNeed(t *testing.T) {
	cfg := netstack.Config{Addr: mustPrefix(t, "192.0.2.10/24")}
	n, err := need(options{port: 8080}, cfg)
	if err != nil || len(n.TCPPorts) != 1 || n.TCPPorts[0] != 8080 || len(n.TCPPeers) != 0 {
		t.Errorf("server: %+v, %v", n, err)
	}
	n, err = need(options{port: 8080, client: "192.0.2.1:9000"}, cfg)
	if err != nil || len(n.TCPPorts) != 0 || len(n.TCPPeers) != 1 || n.TCPPeers[0].Port() != 9000 {
		t.Errorf("client: %+v, %v", n, err)
	}
	if _, err := need(options{client: "server.example:80"}, cfg); err == nil {
		t.Error("a host name accepted")
	}
	if _, err := n.Options(); err != nil {
		t.Errorf("client steering: %v", err)
	}
}

func mustPrefix(t *testing.T, s string) netip.Prefix {
	t.Helper()
	p, err := netip.ParsePrefix(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBuffer(t *testing.T) {
	for _, tc := range []struct {
		buf, want int
	}{{0, defaultBuf}, {1, 1}, {4096, 4096}, {maxBuf, maxBuf}} {
		if got := len(options{buf: tc.buf}.buffer()); got != tc.want {
			t.Errorf("options{buf: %d}.buffer() has %d bytes; want %d", tc.buf, got, tc.want)
		}
	}
}
