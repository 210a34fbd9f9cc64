package forward

import (
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/packetio/packetio"
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

func udp(_ testing.TB, dst string, ttl byte) []byte {
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
		if csum.Fold(csum.Sum(b[14:34], 0)) != 0xffff {
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
		if fib.Forward(b, false) == Forwarded && csum.Fold(csum.Sum(b[14:14+int(b[14]&0xf)*4], 0)) != 0xffff {
			t.Fatalf("forwarded a frame whose header checksum is now wrong: % x", b)
		}
	})
}

// BenchmarkForward is one frame through Forward: the lookup, the TTL and
// checksum update and the new MACs, against one route (the sweep's table)
// and against a table of every prefix length, for a frame whose route is
// the /7 (the slowest lookup of a table searched one prefix length at a
// time) and one whose route is the /32 (the deepest in the trie).
func BenchmarkForward(b *testing.B) {
	for _, bc := range []struct {
		name   string
		routes []string
		dst    string
	}{
		{"one-route", []string{"10.1.0.0/16"}, "10.1.2.3"},
		{"every-length/shortest", everyLength(), "11.0.0.1"},
		{"every-length/longest", everyLength(), "10.255.255.255"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var f FIB
			for _, r := range bc.routes {
				if err := f.Add(netip.MustParsePrefix(r), hop(1)); err != nil {
					b.Fatal(err)
				}
			}
			pkt := udp(b, bc.dst, 255)
			ttl, sum := pkt[14+8], [2]byte(pkt[14+10:])
			for b.Loop() {
				pkt[14+8], pkt[14+10], pkt[14+11] = ttl, sum[0], sum[1] // the TTL must not run out
				if v := f.Forward(pkt, false); v != Forwarded {
					b.Fatal(v)
				}
			}
		})
	}
}

// everyLength is a route of every length from /0 to /32 down one path of
// 10.0.0.0/8.
func everyLength() []string {
	var rs []string
	for n := 0; n <= 32; n++ {
		p, _ := netip.MustParseAddr("10.255.255.255").Prefix(n)
		rs = append(rs, p.String())
	}
	return rs
}

// linear is the longest-prefix match done the slow way, the reference the
// trie is held to: the longest prefix holding dst, the last added among
// equals. It returns the index of the route in rs, or -1.
func linear(rs []netip.Prefix, dst uint32) int {
	best := -1
	for i, p := range rs {
		if dst&mask(p.Bits()) == addr32(p.Masked().Addr()) && (best < 0 || p.Bits() >= rs[best].Bits()) {
			best = i
		}
	}
	return best
}

func mask(n int) uint32 {
	if n == 0 {
		return 0
	}
	return ^uint32(0) << (32 - n)
}

// lookupMatches builds a FIB of rs, each route's hop naming its index, and
// checks the lookup of dst against linear.
func lookupMatches(t *testing.T, rs []netip.Prefix, dsts ...uint32) {
	t.Helper()
	var f FIB
	for i, p := range rs {
		if err := f.Add(p, Hop{Dst: [6]byte{byte(i >> 8), byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if f.Routes() != len(rs) {
		t.Fatalf("Routes() = %d after %d adds", f.Routes(), len(rs))
	}
	for _, dst := range dsts {
		want := linear(rs, dst)
		h, ok := f.Lookup(dst)
		got := -1
		if ok {
			got = int(h.Dst[0])<<8 | int(h.Dst[1])
		}
		if got != want {
			t.Fatalf("routes %v: Lookup(%s) took route %d, want %d", rs, netip.AddrFrom4([4]byte{byte(dst >> 24), byte(dst >> 16), byte(dst >> 8), byte(dst)}), got, want)
		}
	}
}

// TestLookupMatchesLinearScan holds the trie to the linear scan over random
// tables, added in random order (shorter after longer, replacements, /0
// and /32), at addresses inside, beside and between their routes.
func TestLookupMatchesLinearScan(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		var rs []netip.Prefix
		var dsts []uint32
		base := rnd.Uint32() & 0xff000000 // routes near each other, so they nest
		for range 1 + rnd.IntN(40) {
			a := base | rnd.Uint32()&0x00ffffff
			if rnd.IntN(4) == 0 {
				a = rnd.Uint32()
			}
			p := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}), rnd.IntN(33))
			rs = append(rs, p)
			if rnd.IntN(5) == 0 { // the same prefix again: the later one wins
				rs = append(rs, p)
			}
			dsts = append(dsts, a, a^1, a^0x100, a^0x10000, a^0x1000000, a+1, a-1)
		}
		dsts = append(dsts, 0, ^uint32(0), base, rnd.Uint32())
		lookupMatches(t, rs, dsts...)
	}
}

// FuzzLookup holds the trie to the linear scan on tables the fuzzer makes:
// every 5 bytes a route (an address and a length), the last 4 the address
// looked up.
func FuzzLookup(f *testing.F) {
	f.Add([]byte{10, 0, 0, 0, 8, 10, 1, 0, 0, 16, 10, 1, 2, 3})
	f.Add([]byte{0, 0, 0, 0, 0, 10, 1, 2, 3, 32, 10, 1, 2, 0, 24, 10, 1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 4 || len(b) > 4+5*64 {
			return
		}
		var rs []netip.Prefix
		for r := b[:len(b)-4]; len(r) >= 5; r = r[5:] {
			rs = append(rs, netip.PrefixFrom(netip.AddrFrom4([4]byte(r)), int(r[4])%33))
		}
		d := b[len(b)-4:]
		lookupMatches(t, rs, uint32(d[0])<<24|uint32(d[1])<<16|uint32(d[2])<<8|uint32(d[3]))
	})
}

// memRegion is a Region over a byte slice of frames of size bytes.
type memRegion struct {
	mem  []byte
	size int
}

func (r *memRegion) Bytes() []byte  { return r.mem }
func (r *memRegion) FrameSize() int { return r.size }
func (r *memRegion) NumFrames() int { return len(r.mem) / r.size }
func (r *memRegion) Frame(d packetio.Desc) []byte {
	if d.Addr+uint64(d.Len) > uint64(len(r.mem)) {
		return nil
	}
	return r.mem[d.Addr : d.Addr+uint64(d.Len)]
}
func (r *memRegion) Writable(d packetio.Desc) []byte {
	if d.Addr >= uint64(len(r.mem)) {
		return nil
	}
	return r.mem[d.Addr : (d.Addr/uint64(r.size)+1)*uint64(r.size)]
}

// TestWarmHeads: the XOR of every packet's first byte, descriptors outside
// the region or empty skipped, no allocation.
func TestWarmHeads(t *testing.T) {
	r := &memRegion{mem: make([]byte, 8*256), size: 256}
	for i := range 8 {
		r.mem[i*256+64] = byte(1 << i)
	}
	d := func(frame, off, n int) packetio.Desc {
		return packetio.Desc{Addr: uint64(frame*256 + off), Len: uint32(n)}
	}
	for _, tc := range []struct {
		name  string
		descs []packetio.Desc
		want  byte
	}{
		{"none", nil, 0},
		{"one", []packetio.Desc{d(3, 64, 60)}, 1 << 3},
		{"every frame", []packetio.Desc{d(0, 64, 60), d(1, 64, 60), d(2, 64, 60), d(3, 64, 60), d(4, 64, 60), d(5, 64, 60), d(6, 64, 60), d(7, 64, 60)}, 0xff},
		{"twice cancels", []packetio.Desc{d(1, 64, 60), d(2, 64, 60), d(1, 64, 60)}, 1 << 2},
		{"empty and outside skipped", []packetio.Desc{d(5, 64, 0), d(7, 64, 60), {Addr: 1 << 20, Len: 60}}, 1 << 7},
	} {
		if got := WarmHeads(r, tc.descs); got != tc.want {
			t.Errorf("%s: %#x, want %#x", tc.name, got, tc.want)
		}
	}
	descs := []packetio.Desc{d(0, 64, 60), d(1, 64, 60)}
	if a := testing.AllocsPerRun(100, func() { WarmHeads(r, descs) }); a != 0 {
		t.Fatalf("WarmHeads allocates %.0f times", a)
	}
}
