// Package flow compiles packetio steering rules into the match specs of
// verbs flow rules (ibv_create_flow): an Ethernet spec, then an IPv4 or IPv6
// spec, then a TCP or UDP spec, each a value and a mask. It is pure Go; the
// dv package turns a Spec into the C structs.
//
// A Rule is compiled exactly or refused with packetio.ErrUnsupported, never
// widened: a rule that needs a match the specs cannot express fails the
// whole filter.
package flow

import (
	"fmt"
	"net/netip"

	"github.com/packetio/packetio"
)

// EtherTypes the IP specs imply.
const (
	EtherTypeIPv4 = 0x0800
	EtherTypeIPv6 = 0x86dd
)

// Spec is one flow rule: every set mask must match.
type Spec struct {
	Promiscuous bool // every packet the port sees: an Ethernet spec with a zero mask

	DstMAC, DstMACMask   [6]byte
	VLAN, VLANMask       uint16 // the 12-bit VLAN ID; the mask never covers the priority bits
	EtherType, EtherMask uint16

	// IP is 0 (no IP spec), 4 or 6.
	IP               uint8
	Src, SrcMask     [16]byte // IPv4 in the first 4 bytes
	Dst, DstMask     [16]byte
	Proto, ProtoMask uint8

	// L4 is 0, packetio.IPProtoTCP or packetio.IPProtoUDP.
	L4                   uint8
	SrcPort, SrcPortMask uint16
	DstPort, DstPortMask uint16
}

// Compile returns the specs for a filter on an interface whose own MAC is
// own. The zero filter means packets addressed to the interface: one spec on
// the destination MAC. A rule with an IP protocol and no IP version becomes
// two specs, one for IPv4 and one for IPv6.
func Compile(f packetio.SteeringFilter, own [6]byte) ([]Spec, error) {
	if !f.Promiscuous && len(f.Match) == 0 {
		return []Spec{{DstMAC: own, DstMACMask: fullMAC}}, nil
	}
	rules, err := f.Rules()
	if err != nil {
		return nil, err
	}
	var specs []Spec
	for _, r := range rules {
		s, err := compileRule(r)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s...)
	}
	return specs, nil
}

var fullMAC = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

func compileRule(r packetio.Rule) ([]Spec, error) {
	if r.Promiscuous {
		return []Spec{{Promiscuous: true}}, nil
	}
	var s Spec
	if r.MACSet {
		s.DstMAC, s.DstMACMask = r.MAC, fullMAC
	}
	if r.VLANSet {
		if r.VLAN > packetio.MaxVLAN {
			return nil, fmt.Errorf("mlx5 steering: VLAN %d is above %d: %w", r.VLAN, packetio.MaxVLAN, packetio.ErrUnsupported)
		}
		s.VLAN, s.VLANMask = r.VLAN, 0x0fff
	}
	if r.EtherType != 0 {
		s.EtherType, s.EtherMask = r.EtherType, 0xffff
	}
	// Which IP version the rule needs: from the prefixes, then the
	// EtherType.
	v := uint8(0)
	for _, p := range []netip.Prefix{r.SrcPrefix, r.DstPrefix} {
		if !p.IsValid() {
			continue
		}
		pv := uint8(4)
		if p.Addr().Is6() && !p.Addr().Is4In6() {
			pv = 6
		}
		if v != 0 && v != pv {
			return nil, fmt.Errorf("mlx5 steering: a rule matches both an IPv4 and an IPv6 address: %w", packetio.ErrUnsupported)
		}
		v = pv
	}
	needIP := v != 0 || r.IPProtoSet || r.SrcPortSet || r.DstPortSet
	if needIP && r.EtherType != 0 {
		ev := uint8(0)
		switch r.EtherType {
		case EtherTypeIPv4:
			ev = 4
		case EtherTypeIPv6:
			ev = 6
		default:
			return nil, fmt.Errorf("mlx5 steering: EtherType %#04x contradicts an IP match: %w", r.EtherType, packetio.ErrUnsupported)
		}
		if v != 0 && v != ev {
			return nil, fmt.Errorf("mlx5 steering: EtherType %#04x contradicts an IPv%d address: %w", r.EtherType, v, packetio.ErrUnsupported)
		}
		v = ev
	}
	if r.IPProtoSet {
		s.Proto, s.ProtoMask = r.IPProto, 0xff
	}
	if r.SrcPortSet || r.DstPortSet {
		if r.IPProto != packetio.IPProtoTCP && r.IPProto != packetio.IPProtoUDP {
			return nil, fmt.Errorf("mlx5 steering: ports need TCP or UDP, not protocol %d: %w", r.IPProto, packetio.ErrUnsupported)
		}
		s.L4 = r.IPProto
		if r.SrcPortSet {
			s.SrcPort, s.SrcPortMask = r.SrcPort, 0xffff
		}
		if r.DstPortSet {
			s.DstPort, s.DstPortMask = r.DstPort, 0xffff
		}
	}
	if !needIP {
		return []Spec{s}, nil
	}
	versions := []uint8{v}
	if v == 0 {
		versions = []uint8{4, 6} // a protocol or port match on either IP version
	}
	out := make([]Spec, 0, len(versions))
	for _, ver := range versions {
		c := s
		c.IP = ver
		if err := setPrefix(&c.Src, &c.SrcMask, r.SrcPrefix, ver); err != nil {
			return nil, err
		}
		if err := setPrefix(&c.Dst, &c.DstMask, r.DstPrefix, ver); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// setPrefix writes p's address with its host bits cleared, and its mask.
func setPrefix(addr, mask *[16]byte, p netip.Prefix, ver uint8) error {
	if !p.IsValid() {
		return nil
	}
	p = p.Masked()
	bitsLen := p.Bits()
	if ver == 4 {
		// packetio.Rules hands over canonical prefixes: an IPv4-mapped
		// one arrives as the IPv4 prefix it maps.
		a := p.Addr()
		if !a.Is4() {
			return fmt.Errorf("mlx5 steering: %s is not an IPv4 prefix: %w", p, packetio.ErrUnsupported)
		}
		b := a.As4()
		copy(addr[:4], b[:])
		fillMask(mask[:4], bitsLen)
		return nil
	}
	b := p.Addr().As16()
	copy(addr[:], b[:])
	fillMask(mask[:], bitsLen)
	return nil
}

func fillMask(m []byte, n int) {
	for i := range m {
		switch {
		case n >= 8:
			m[i] = 0xff
			n -= 8
		case n > 0:
			m[i] = byte(0xff << (8 - n))
			n = 0
		default:
			m[i] = 0
		}
	}
}

// String renders a spec for Info lines and errors.
func (s Spec) String() string {
	if s.Promiscuous {
		return "every packet"
	}
	out := ""
	add := func(f string, a ...any) {
		if out != "" {
			out += " "
		}
		out += fmt.Sprintf(f, a...)
	}
	if s.DstMACMask != [6]byte{} {
		m := s.DstMAC
		add("dst %02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
	}
	if s.VLANMask != 0 {
		add("vlan %d", s.VLAN)
	}
	if s.EtherMask != 0 {
		add("ethertype %#04x", s.EtherType)
	}
	if s.IP != 0 {
		add("ip%d", s.IP)
		n := 4
		if s.IP == 6 {
			n = 16
		}
		if pfx, ok := prefixOf(s.Src[:n], s.SrcMask[:n]); ok {
			add("from %s", pfx)
		}
		if pfx, ok := prefixOf(s.Dst[:n], s.DstMask[:n]); ok {
			add("to %s", pfx)
		}
	}
	if s.ProtoMask != 0 {
		add("proto %d", s.Proto)
	}
	if s.SrcPortMask != 0 {
		add("sport %d", s.SrcPort)
	}
	if s.DstPortMask != 0 {
		add("dport %d", s.DstPort)
	}
	if out == "" {
		return "everything"
	}
	return out
}

func prefixOf(a, m []byte) (netip.Prefix, bool) {
	n := 0
	for _, b := range m {
		for b&0x80 != 0 {
			n++
			b <<= 1
		}
	}
	if n == 0 {
		return netip.Prefix{}, false
	}
	addr, _ := netip.AddrFromSlice(a)
	return netip.PrefixFrom(addr, n), true
}
