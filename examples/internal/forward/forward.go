// Package forward is the IPv4 forwarding step the router examples share: a
// longest-prefix-match table and the in-place rewrite of a frame for its
// next hop (new Ethernet header, TTL less one, header checksum updated
// incrementally). Nothing here allocates per packet.
package forward

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/csum"
)

// Hop is where a route sends packets: the Ethernet addresses to write.
type Hop struct {
	Dst, Src [6]byte
}

// FIB is a longest-prefix-match table of IPv4 routes: a multibit trie of
// four levels of 8 bits, each route written into every entry it covers
// (a /12 into 16 entries of a second-level node) and pushed down into the
// nodes below them, so a lookup is at most four array loads whatever the
// table holds. The zero FIB is empty and ready.
type FIB struct {
	root  node
	nodes []*node // below the root; entry.child is an index here, plus one
	hops  []Hop
}

// node is one level of the trie: the entries for the 256 values of one byte
// of the address.
type node [256]entry

// entry is the route for the addresses its node's byte selects: hop is an
// index into FIB.hops plus one (0: no route) and bits the route's prefix
// length. child, when not 0, is the node of the next byte (its index in
// FIB.nodes plus one), and the entry's route is written into each entry of
// that node no longer route covers, so a lookup goes down until an entry
// has no child and takes its route.
type entry struct {
	hop, child int32
	bits       int8
}

// Add installs a route. A later route for the same prefix replaces it.
func (f *FIB) Add(p netip.Prefix, h Hop) error {
	if !p.Addr().Is4() {
		return fmt.Errorf("forward: %s is not an IPv4 prefix", p)
	}
	p = p.Masked()
	f.hops = append(f.hops, h)
	hop, bits, dst := int32(len(f.hops)), p.Bits(), addr32(p.Addr())
	n := &f.root
	level := 0
	if bits > 0 {
		level = (bits - 1) / 8 // the level whose byte holds the prefix's last bit
	}
	for l := 0; l < level; l++ {
		n = f.child(&n[dst>>(24-8*l)&0xff])
	}
	span := 1 << (8*(level+1) - bits) // the entries of that byte the prefix covers
	first := int(dst>>(24-8*level)&0xff) &^ (span - 1)
	for i := first; i < first+span; i++ {
		f.write(&n[i], hop, int8(bits))
	}
	return nil
}

// child returns e's node of the next byte, making it (every entry holding
// e's route) when e has none.
func (f *FIB) child(e *entry) *node {
	if e.child == 0 {
		c := new(node)
		for i := range c {
			c[i] = entry{hop: e.hop, bits: e.bits}
		}
		f.nodes = append(f.nodes, c)
		e.child = int32(len(f.nodes))
	}
	return f.nodes[e.child-1]
}

// write puts a route of the given length into e and the entries below it
// that no longer route covers.
func (f *FIB) write(e *entry, hop int32, bits int8) {
	if e.hop != 0 && e.bits > bits {
		return // a longer route owns e, and everything below it
	}
	e.hop, e.bits = hop, bits
	if e.child != 0 {
		c := f.nodes[e.child-1]
		for i := range c {
			f.write(&c[i], hop, bits)
		}
	}
}

// Lookup returns the hop of the longest prefix holding dst.
func (f *FIB) Lookup(dst uint32) (*Hop, bool) {
	e := &f.root[dst>>24]
	for shift := 16; e.child != 0; shift -= 8 {
		e = &f.nodes[e.child-1][dst>>shift&0xff]
	}
	if e.hop == 0 {
		return nil, false
	}
	return &f.hops[e.hop-1], true
}

// Routes is the number of routes added.
func (f *FIB) Routes() int { return len(f.hops) }

func addr32(a netip.Addr) uint32 { b := a.As4(); return binary.BigEndian.Uint32(b[:]) }

// ParseRoute reads "prefix,nexthop-mac" as the -route flag gives it.
func ParseRoute(s string, src net.HardwareAddr) (netip.Prefix, Hop, error) {
	var h Hop
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			p, err := netip.ParsePrefix(s[:i])
			if err != nil {
				return p, h, err
			}
			mac, err := net.ParseMAC(s[i+1:])
			if err != nil || len(mac) != 6 {
				return p, h, fmt.Errorf("forward: route %q: bad next-hop MAC", s)
			}
			copy(h.Dst[:], mac)
			copy(h.Src[:], src)
			return p, h, nil
		}
	}
	return netip.Prefix{}, h, fmt.Errorf("forward: route %q: want prefix,nexthop-mac", s)
}

// Verdict is what Forward decided for a frame.
type Verdict uint8

// The verdicts; everything but Forwarded is a reason to drop.
const (
	Forwarded Verdict = iota
	NotIPv4
	BadHeader
	TTLExpired
	NoRoute
	numVerdicts
)

// NumVerdicts is the number of distinct verdicts, for counters.
const NumVerdicts = int(numVerdicts)

// String names the verdict, for counters and logs.
func (v Verdict) String() string {
	return [...]string{"forwarded", "not IPv4", "bad header", "TTL expired", "no route"}[v]
}

// Forward rewrites an untagged Ethernet/IPv4 frame in place for its next hop
// and reports what it did. The header checksum is verified unless l3OK (the
// device already checked it) and updated incrementally (RFC 1624).
func (f *FIB) Forward(b []byte, l3OK bool) Verdict { return f.ForwardHead(b, len(b), l3OK) }

// ForwardHead is Forward for a packet of length bytes of which head holds
// the first, headers included: the first frame of a multi-buffer chain.
// The IP total length is checked against length, and only head is
// rewritten.
func (f *FIB) ForwardHead(head []byte, length int, l3OK bool) Verdict {
	if len(head) < 34 || binary.BigEndian.Uint16(head[12:]) != 0x0800 {
		return NotIPv4
	}
	ip := head[14:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[0]>>4 != 4 || ihl < 20 || len(ip) < ihl || int(binary.BigEndian.Uint16(ip[2:])) > length-14 {
		return BadHeader
	}
	if !l3OK && csum.Fold(csum.Sum(ip[:ihl], 0)) != 0xffff {
		return BadHeader
	}
	if ip[8] <= 1 {
		return TTLExpired
	}
	hop, ok := f.Lookup(binary.BigEndian.Uint32(ip[16:]))
	if !ok {
		return NoRoute
	}
	ip[8]--
	// TTL is the high byte of its 16-bit word: the checksum rises by 0x0100.
	c := uint32(binary.BigEndian.Uint16(ip[10:])) + 0x0100
	c = c&0xffff + c>>16
	binary.BigEndian.PutUint16(ip[10:], uint16(c))
	copy(head[0:6], hop.Dst[:])
	copy(head[6:12], hop.Src[:])
	return Forwarded
}

// WarmHeads reads the first byte of every packet in descs and returns the
// XOR of them, which the caller keeps alive (runtime.KeepAlive) so the
// compiler keeps the reads. The reads do not depend on one another, so the
// CPU has them all in flight at once, and the lookup and rewrite that
// follow find each header in the cache instead of waiting for each in
// turn: the kernel or the driver wrote those headers on another CPU, and
// the first read of each missed for about 150 ns on a 2-vCPU guest (88 %
// of the router's samples, on the instruction after the EtherType load).
// testpmd's forwarding engines prefetch the next packet's header for the
// same reason. A descriptor outside the region is skipped.
func WarmHeads(r packetio.Region, descs []packetio.Desc) byte {
	var x byte
	for _, d := range descs {
		if b := r.Frame(d); len(b) > 0 {
			x ^= b[0]
		}
	}
	return x
}
