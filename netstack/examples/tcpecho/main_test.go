package main

import (
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio/internal/netns"
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
	// The table in one invocation: every mode in every run, and
	// the kernel sending MTU-sized packets beside the others.
	o := base
	o.mode, o.backend, o.runs, o.kernelMTUPackets = "all", "afpacket,afxdp", 2, true
	if err := selfTest(o); err != nil {
		t.Fatalf("-mode all -kernel-mtu-packets: %v", err)
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

func TestModes(t *testing.T) {
	if got := (options{mode: "all"}).modes(); !slices.Equal(got, []string{"sink", "source", "echo"}) {
		t.Errorf("-mode all: %v", got)
	}
	if got := (options{mode: "echo"}).modes(); !slices.Equal(got, []string{"echo"}) {
		t.Errorf("-mode echo: %v", got)
	}
	// Every transfer has its own first byte, and none is request/response's.
	seen := map[byte]string{'r': "request/response"}
	for m, tag := range modeTags {
		if other, dup := seen[tag]; dup {
			t.Errorf("%s and %s share the tag %q", m, other, tag)
		}
		seen[tag] = m
	}
}

// summary prints the median (the upper one of an even count) and the
// range of every figure, or of the per-run ratios to a reference series.
func TestSummary(t *testing.T) {
	modes := []string{"sink", "echo"}
	rs := []result{
		{gbps: []float64{4, 1}, rps: 30000},
		{gbps: []float64{2, 3}, rps: 20000},
		{gbps: []float64{3, 2}, rps: 40000},
	}
	refs := []result{
		{gbps: []float64{8, 4}, rps: 60000},
		{gbps: []float64{8, 4}, rps: 40000},
		{gbps: []float64{4, 4}, rps: 50000},
	}
	for _, tc := range []struct {
		name     string
		rs, refs []result
		modes    []string
		want     string
	}{
		{"figures", rs, nil, modes, "sink 3.00 (2.00-4.00), echo 2.00 (1.00-3.00), request/response 30000 (20000-40000) (Gbit/s, req/s)"},
		{"ratios", rs, refs, modes, "sink 0.50 (0.25-0.75), echo 0.50 (0.25-0.75), request/response 0.50 (0.50-0.80)"},
		{"no round trips", []result{{gbps: []float64{1.5}}, {gbps: []float64{2.5}}}, nil, []string{"source"}, "source 2.50 (1.50-2.50) (Gbit/s)"},
		{"a rate above 100", []result{{gbps: []float64{150.5}, rps: 99.5}}, nil, []string{"sink"}, "sink 150.50 (150.50-150.50), request/response 100 (100-100) (Gbit/s, req/s)"},
	} {
		if got := summary(tc.modes, tc.rs, tc.refs); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
	if got, want := rs[0].line(modes), "sink 4.00 Gbit/s, echo 1.00 Gbit/s, 30000 req/s"; got != want {
		t.Errorf("line: %q, want %q", got, want)
	}
}

// offloads.set turns the pair's offloads off for a series and back on,
// and the kernel then shows what it showed before.
func TestOffloadsSet(t *testing.T) {
	testenv.NeedRoot(t)
	pair := netns.New(t)
	features := func(h *netns.Host) string {
		t.Helper()
		var out []byte
		if err := h.Do(func() (err error) {
			out, err = exec.Command("ethtool", "-k", h.Link).Output()
			return err
		}); err != nil {
			t.Fatalf("ethtool -k %s: %v", h.Link, err)
		}
		var on []string
		for _, l := range strings.Split(string(out), "\n") {
			// tx-tcp-segmentation, not the summary line
			// tcp-segmentation-offload, which says "on" while
			// its parts are off because checksums are.
			for _, f := range []string{"tx-checksumming", "tx-tcp-segmentation", "generic-segmentation-offload"} {
				if strings.HasPrefix(strings.TrimSpace(l), f+": ") {
					on = append(on, f+"="+strings.Fields(l)[1])
				}
			}
		}
		return strings.Join(on, " ")
	}
	beforeA, beforeB := features(pair.A), features(pair.B)
	if beforeA != "tx-checksumming=on tx-tcp-segmentation=on generic-segmentation-offload=on" {
		t.Fatalf("a new veth's offloads: %s", beforeA)
	}
	var now offloads
	if err := now.set(pair, offloads{bTxOff: true, aOff: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := features(pair.A), "tx-checksumming=off tx-tcp-segmentation=off generic-segmentation-offload=off"; got != want {
		t.Errorf("A with aOff: %s, want %s", got, want)
	}
	if got := features(pair.B); !strings.HasPrefix(got, "tx-checksumming=off tx-tcp-segmentation=off") {
		t.Errorf("B with bTxOff: %s", got)
	}
	if err := now.set(pair, offloads{}); err != nil {
		t.Fatal(err)
	}
	if a, b := features(pair.A), features(pair.B); a != beforeA || b != beforeB {
		t.Errorf("after: A %s, B %s; want %s and %s as before", a, b, beforeA, beforeB)
	}
}
