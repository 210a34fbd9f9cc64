// Package forward is the IPv4 forwarding step the router examples share: a
// longest-prefix-match table and the in-place rewrite of a frame for its
// next hop (new Ethernet header, TTL less one, header checksum updated
// incrementally). Nothing here allocates per packet.
package forward

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"net"
	"net/netip"
)

// Hop is where a route sends packets: the Ethernet addresses to write.
type Hop struct {
	Dst, Src [6]byte
}

// FIB is a longest-prefix-match table of IPv4 routes.
type FIB struct {
	byLen   [33]map[uint32]int // prefix bits -> masked address -> hop index
	present uint64             // bit n set when routes of length n exist
	hops    []Hop
}

// Add installs a route. A later route for the same prefix replaces it.
func (f *FIB) Add(p netip.Prefix, h Hop) error {
	if !p.Addr().Is4() {
		return fmt.Errorf("forward: %s is not an IPv4 prefix", p)
	}
	p = p.Masked()
	n := p.Bits()
	if f.byLen[n] == nil {
		f.byLen[n] = map[uint32]int{}
	}
	f.hops = append(f.hops, h)
	f.byLen[n][addr32(p.Addr())] = len(f.hops) - 1
	f.present |= 1 << n
	return nil
}

// Lookup returns the hop of the longest prefix holding dst.
func (f *FIB) Lookup(dst uint32) (*Hop, bool) {
	for set := f.present; set != 0; {
		n := 63 - bits.LeadingZeros64(set) // longest remaining length
		set &^= 1 << n
		if i, ok := f.byLen[n][dst&mask(n)]; ok {
			return &f.hops[i], true
		}
	}
	return nil, false
}

// Routes is the number of routes added.
func (f *FIB) Routes() int { return len(f.hops) }

func mask(n int) uint32 {
	if n == 0 {
		return 0
	}
	return ^uint32(0) << (32 - n)
}

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
func (f *FIB) Forward(b []byte, l3OK bool) Verdict {
	if len(b) < 34 || binary.BigEndian.Uint16(b[12:]) != 0x0800 {
		return NotIPv4
	}
	ip := b[14:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[0]>>4 != 4 || ihl < 20 || len(ip) < ihl || int(binary.BigEndian.Uint16(ip[2:])) > len(ip) {
		return BadHeader
	}
	if !l3OK && sum16(ip[:ihl]) != 0xffff {
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
	copy(b[0:6], hop.Dst[:])
	copy(b[6:12], hop.Src[:])
	return Forwarded
}

// sum16 is the ones' complement sum of b (not complemented).
func sum16(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}
