package forward

import (
	"net"
	"net/netip"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/packetio/packetio/examples/internal/frame"
	"github.com/packetio/packetio/internal/csum"
)

func hop(b byte) Hop { return Hop{Dst: [6]byte{2, 0, 0, 0, 0, b}, Src: [6]byte{2, 0, 0, 0, 0, 0xee}} }

func TestLongestPrefixWins(t *testing.T) {
	var f FIB
	for _, r := range []struct {
		p string
		h byte
	}{{"0.0.0.0/0", 1}, {"10.0.0.0/8", 2}, {"10.1.0.0/16", 3}, {"10.1.2.0/24", 4}, {"10.1.2.3/32", 5}, {"192.168.0.0/16", 6}} {
		if err := f.Add(netip.MustParsePrefix(r.p), hop(r.h)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		dst  string
		want byte
	}{{"10.1.2.3", 5}, {"10.1.2.4", 4}, {"10.1.3.1", 3}, {"10.2.0.1", 2}, {"11.0.0.1", 1}, {"192.168.9.9", 6}} {
		h, ok := f.Lookup(addr32(netip.MustParseAddr(tc.dst)))
		if !ok || h.Dst[5] != tc.want {
			t.Errorf("%s -> %v, %v; want hop %d", tc.dst, h, ok, tc.want)
		}
	}
	var empty FIB
	if _, ok := empty.Lookup(1); ok {
		t.Fatal("an empty table routed")
	}
	if err := f.Add(netip.MustParsePrefix("2001:db8::/32"), hop(1)); err == nil {
		t.Fatal("an IPv6 route was accepted")
	}
}

func udp(t *testing.T, dst string, ttl byte) []byte {
	b := make([]byte, 128)
	n := frame.Build(b, frame.Spec{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 0xee},
		SrcIP: netip.MustParseAddr("10.9.9.9"), DstIP: netip.MustParseAddr(dst), SrcPort: 1, DstPort: 2, Size: 80})
	b = b[:n]
	b[14+8] = ttl
	b[14+10], b[14+11] = 0, 0
	c := csum.Checksum(b[14:34], 0)
	b[14+10], b[14+11] = byte(c>>8), byte(c)
	return b
}

func TestForwardRewritesAndKeepsTheChecksumRight(t *testing.T) {
	var f FIB
	f.Add(netip.MustParsePrefix("10.1.0.0/16"), hop(7))
	for _, ttl := range []byte{64, 2, 255} {
		b := udp(t, "10.1.2.3", ttl)
		if v := f.Forward(b, false); v != Forwarded {
			t.Fatalf("TTL %d: %v", ttl, v)
		}
		p := gopacket.NewPacket(b, layers.LayerTypeEthernet, gopacket.Default)
		ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
		if ip.TTL != ttl-1 || net.HardwareAddr(b[0:6]).String() != "02:00:00:00:00:07" {
			t.Fatalf("TTL %d: rewritten to TTL %d, dst %v", ttl, ip.TTL, net.HardwareAddr(b[0:6]))
		}
		if sum16(b[14:34]) != 0xffff {
			t.Fatalf("TTL %d: header checksum wrong after the rewrite", ttl)
		}
	}
	for _, tc := range []struct {
		b    []byte
		want Verdict
	}{
		{udp(t, "10.1.2.3", 1), TTLExpired},
		{udp(t, "10.2.0.1", 64), NoRoute},
		{make([]byte, 20), NotIPv4},
		{func() []byte { b := udp(t, "10.1.2.3", 64); b[14+11] ^= 1; return b }(), BadHeader},
		{func() []byte { b := udp(t, "10.1.2.3", 64); b[14] = 0x44; return b }(), BadHeader},
	} {
		if v := f.Forward(tc.b, false); v != tc.want {
			t.Errorf("got %v, want %v", v, tc.want)
		}
	}
}

func TestForwardDoesNotAllocate(t *testing.T) {
	var f FIB
	f.Add(netip.MustParsePrefix("10.1.0.0/16"), hop(7))
	b := udp(t, "10.1.2.3", 255)
	if a := testing.AllocsPerRun(100, func() { b[14+8] = 64; f.Forward(b, true) }); a != 0 {
		t.Fatalf("Forward allocates %.0f times", a)
	}
}

func TestParseRoute(t *testing.T) {
	p, h, err := ParseRoute("10.0.0.0/8,02:00:00:00:00:09", net.HardwareAddr{2, 0, 0, 0, 0, 1})
	if err != nil || p.String() != "10.0.0.0/8" || h.Dst[5] != 9 || h.Src[5] != 1 {
		t.Fatalf("ParseRoute = %v %v %v", p, h, err)
	}
	for _, bad := range []string{"10.0.0.0/8", "x,02:00:00:00:00:09", "10.0.0.0/8,zz"} {
		if _, _, err := ParseRoute(bad, nil); err == nil {
			t.Errorf("ParseRoute(%q) accepted", bad)
		}
	}
}

func FuzzForward(f *testing.F) {
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var fib FIB
		fib.Add(netip.MustParsePrefix("0.0.0.0/0"), hop(1))
		if fib.Forward(b, false) == Forwarded && sum16(b[14:14+int(b[14]&0xf)*4]) != 0xffff {
			t.Fatalf("forwarded a frame whose header checksum is now wrong: % x", b)
		}
	})
}
