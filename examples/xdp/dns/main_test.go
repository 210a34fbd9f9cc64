package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/packetio/packetio/examples/internal/bed"
	"github.com/packetio/packetio/examples/internal/inplace"
	"github.com/packetio/packetio/examples/xdp/dns/dnsmsg"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

var (
	serverAddr = netip.MustParsePrefix("10.95.0.1/24")
	clientAddr = netip.MustParsePrefix("10.95.0.2/24")
)

// serveOnPair starts the server with the demonstration zone on a new pair's
// end A, stopped when the test ends.
func serveOnPair(t *testing.T) (*netns.Pair, *server) {
	t.Helper()
	testenv.NeedBPF(t)
	p := netns.New(t, netns.WithAddrs(serverAddr, clientAddr))
	var out bytes.Buffer
	srv, err := start(context.Background(), bed.Of(p.A), demo(t), 53, inplace.Tuning{Program: "dns", Batch: 64, Feed: "asked by the test"}, &out)
	os.Stderr.Write(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	const want = `^dns: afxdp/xdp on \S+, 1 queue, native XDP copy mode, up to \d+ frames a kick, need-wakeup on, busy-poll off, stamps off, batch 64, workers unpinned; asked by the test$`
	if first, _, _ := strings.Cut(out.String(), "\n"); !regexp.MustCompile(want).MatchString(first) {
		t.Errorf("first line %q does not match %q", first, want)
	}
	t.Cleanup(func() {
		if err := srv.stop(os.Stderr); err != nil {
			t.Error(err)
		}
	})
	return p, srv
}

// TestGoResolver: Go's own resolver (PreferGo, dialling from the other
// namespace) gets every A and AAAA answer of the zone right, "no such
// host" for names the zone lacks and for a family a name has no records
// of, and the same addresses whatever the case of the name it asks for.
func TestGoResolver(t *testing.T) {
	p, srv := serveOnPair(t)
	server := serverAddr.Addr().String() + ":53"
	if bad := askAll(context.Background(), bed.Of(p.B), server, demo(t), os.Stderr); bad != 0 {
		t.Fatalf("%d answers wrong", bad)
	}
	r := resolver(bed.Of(p.B), server)
	got, err := lookup(context.Background(), r, "ip", "WWW.Example.TEST.")
	want := []netip.Addr{netip.MustParseAddr("192.0.2.10"), netip.MustParseAddr("192.0.2.11"), netip.MustParseAddr("2001:db8::10")}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("mixed case: %v, %v", got, err)
	}
	_, err = lookup(context.Background(), r, "ip", "nonexistent.example.test.")
	var de *net.DNSError
	if !errors.As(err, &de) || !de.IsNotFound {
		t.Fatalf("nonexistent: %v", err)
	}
	if srv.verdicts[Answered].Load() == 0 || srv.verdicts[NXDomain].Load() == 0 || srv.verdicts[NoData].Load() == 0 {
		t.Fatalf("verdict counters did not move: answered %d nxdomain %d nodata %d",
			srv.verdicts[Answered].Load(), srv.verdicts[NXDomain].Load(), srv.verdicts[NoData].Load())
	}
}

// exchange sends msg from a kernel UDP socket in h's namespace to the
// server and returns the reply, or nil if none came within wait.
func exchange(t *testing.T, h *netns.Host, msg []byte, wait time.Duration) []byte {
	t.Helper()
	var c *net.UDPConn
	if err := h.Do(func() (err error) {
		c, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(serverAddr.Addr(), 53)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, 2048)
	for try := 0; try < 3; try++ {
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(wait))
		n, err := c.Read(buf)
		if err == nil {
			return buf[:n]
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatal(err)
		}
	}
	return nil
}

// TestWhatItDoesNotHandle: over the wire, from a kernel socket, every
// golden query gets its golden answer byte for byte (REFUSED for CHAOS and
// AXFR, NOTIMP for STATUS, BADVERS, FORMERR for two questions and for a cut
// name, NXDOMAIN, empty NOERROR), a response and a runt get nothing, and a
// datagram to another port and a TCP connection to port 53 reach the
// kernel, not the server.
func TestWhatItDoesNotHandle(t *testing.T) {
	p, srv := serveOnPair(t)
	for _, g := range goldens {
		msg, err := os.ReadFile("testdata/" + g.file + ".query")
		if err != nil {
			t.Fatal(err)
		}
		wait := time.Second
		if g.drop {
			wait = 300 * time.Millisecond
		}
		got := exchange(t, p.B, msg, wait)
		if g.drop {
			if got != nil {
				t.Errorf("%s: answered %x", g.file, got)
			}
			continue
		}
		want, err := os.ReadFile("testdata/" + g.file + ".response")
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s: got %x, want %x", g.file, got, want)
		}
	}
	if got := exchange(t, p.B, []byte{1, 2, 3, 4, 5}, 300*time.Millisecond); got != nil {
		t.Errorf("a 5-byte datagram was answered: %x", got)
	}

	// Everything else is the kernel's: a UDP socket on another port and
	// a TCP listener on 53 in the server's namespace.
	var udp *net.UDPConn
	var tcp net.Listener
	if err := p.A.Do(func() (err error) {
		if udp, err = net.ListenUDP("udp", &net.UDPAddr{IP: serverAddr.Addr().AsSlice(), Port: 5353}); err != nil {
			return err
		}
		tcp, err = net.Listen("tcp", netip.AddrPortFrom(serverAddr.Addr(), 53).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	defer tcp.Close()
	before := srv.notDNS.Load()
	if err := p.B.Do(func() error {
		c, err := net.Dial("udp", netip.AddrPortFrom(serverAddr.Addr(), 5353).String())
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write(dnsmsg.AppendQuery(nil, 1, must(dnsmsg.ParseName("www.example.test")), dnsmsg.TypeA, 0))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	udp.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, _, err := udp.ReadFrom(make([]byte, 512)); err != nil {
		t.Fatalf("the kernel socket on port 5353 got nothing: %v", err)
	}
	var conn net.Conn
	if err := p.B.Do(func() (err error) {
		conn, err = net.DialTimeout("tcp", netip.AddrPortFrom(serverAddr.Addr(), 53).String(), 2*time.Second)
		return err
	}); err != nil {
		t.Fatalf("TCP to port 53 did not reach the kernel: %v", err)
	}
	conn.Close()
	if srv.notDNS.Load() != before {
		t.Fatalf("the program took %d frames that were not UDP to 53", srv.notDNS.Load()-before)
	}
}

// TestTruncatedOverTheWire: a name with more addresses than 512 bytes hold
// is answered, to a client without EDNS, with TC and no answers; with EDNS
// 1232, in full.
func TestTruncatedOverTheWire(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t, netns.WithAddrs(serverAddr, clientAddr))
	spec := ""
	for i := range 30 {
		spec += fmt.Sprintf("many.example.test=2001:db8::%x,", i+1)
	}
	z, err := ParseZone(spec, 60)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := start(context.Background(), bed.Of(p.A), z, 53, inplace.Tuning{Program: "dns", Batch: 64}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop(os.Stderr)
	name := must(dnsmsg.ParseName("many.example.test"))
	for _, tc := range []struct {
		edns    uint16
		tc      bool
		answers int
	}{{0, true, 0}, {1232, false, 30}} {
		resp := exchange(t, p.B, dnsmsg.AppendQuery(nil, 9, name, dnsmsg.TypeAAAA, tc.edns), time.Second)
		var pr dnsmessage.Parser
		h, err := pr.Start(resp)
		if err != nil {
			t.Fatal(err)
		}
		_ = pr.SkipAllQuestions()
		an, err := pr.AllAnswers()
		if err != nil || h.Truncated != tc.tc || len(an) != tc.answers {
			t.Errorf("EDNS %d: TC %v, %d answers, %v", tc.edns, h.Truncated, len(an), err)
		}
	}
}
