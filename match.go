package packetio

import (
	"fmt"
	"net/netip"
	"strings"
)

// SteeringFilter names the packets a device takes away from the kernel and
// delivers to the program; everything else stays with Linux where
// Capabilities().KernelCoexistence is true.
//
// Matches of different kinds are ANDed; repeated matches of one kind are
// alternatives (OR). The zero filter means the backend's default, which is
// packets addressed to the interface. A backend compiles Rules, never the
// filter itself, and refuses with ErrUnsupported what it cannot express
// rather than installing something wider.
type SteeringFilter struct {
	// Match lists the conditions.
	Match []Match
	// Promiscuous takes every packet the port sees. Match must then be
	// empty.
	Promiscuous bool
}

// Match is one condition of a SteeringFilter. Use the constructors; the
// fields are exported so backends can compile them.
type Match struct {
	Kind      MatchKind
	MAC       [6]byte      // MatchKindDstMAC
	VLAN      uint16       // MatchKindVLAN: the VLAN ID, never the priority bits
	EtherType uint16       // MatchKindEtherType
	IPProto   uint8        // MatchKindIPProto, and the protocol of a port match
	Port      uint16       // MatchKindSrcPort, MatchKindDstPort
	Prefix    netip.Prefix // MatchKindSrcIP, MatchKindDstIP; a single address is a full-length prefix
}

// MatchKind says which field of a Match is the condition.
type MatchKind uint8

// The kinds of Match. The zero MatchKind is not a kind and is refused.
const (
	MatchKindDstMAC MatchKind = iota + 1
	MatchKindVLAN
	MatchKindEtherType
	MatchKindIPProto
	MatchKindSrcIP
	MatchKindDstIP
	MatchKindSrcPort
	MatchKindDstPort
)

// IP protocol numbers for MatchIPProto, MatchSrcPort and MatchDstPort.
const (
	IPProtoTCP uint8 = 6
	IPProtoUDP uint8 = 17
)

// MaxVLAN is the largest VLAN ID.
const MaxVLAN = 4095

// MaxRules is the most conjunctions a filter may expand to. A filter that
// expands to more is refused, never truncated.
const MaxRules = 16

// MatchDstMAC matches frames sent to mac.
func MatchDstMAC(mac [6]byte) Match { return Match{Kind: MatchKindDstMAC, MAC: mac} }

// MatchVLAN matches frames tagged with VLAN ID id. The priority bits never
// decide delivery.
func MatchVLAN(id uint16) Match { return Match{Kind: MatchKindVLAN, VLAN: id} }

// MatchEtherType matches frames whose (inner) EtherType is t.
func MatchEtherType(t uint16) Match { return Match{Kind: MatchKindEtherType, EtherType: t} }

// MatchIPProto matches IPv4 or IPv6 packets carrying protocol p.
func MatchIPProto(p uint8) Match { return Match{Kind: MatchKindIPProto, IPProto: p} }

// MatchSrcIP matches packets from an address inside p.
func MatchSrcIP(p netip.Prefix) Match { return Match{Kind: MatchKindSrcIP, Prefix: p} }

// MatchDstIP matches packets to an address inside p.
func MatchDstIP(p netip.Prefix) Match { return Match{Kind: MatchKindDstIP, Prefix: p} }

// MatchSrcPort matches proto packets from port. It returns the protocol
// match as well, so append it with "...".
func MatchSrcPort(proto uint8, port uint16) []Match {
	return []Match{MatchIPProto(proto), {Kind: MatchKindSrcPort, IPProto: proto, Port: port}}
}

// MatchDstPort matches proto packets to port. It returns the protocol match
// as well, so append it with "...".
func MatchDstPort(proto uint8, port uint16) []Match {
	return []Match{MatchIPProto(proto), {Kind: MatchKindDstPort, IPProto: proto, Port: port}}
}

// Rule is one conjunction of conditions: a packet matches when every set
// field holds. SteeringFilter.Rules expands a filter into the Rules a backend
// compiles.
type Rule struct {
	MAC    [6]byte
	MACSet bool

	VLAN    uint16
	VLANSet bool

	EtherType uint16 // 0 means not matched

	IPProto    uint8
	IPProtoSet bool

	SrcPrefix netip.Prefix // invalid (zero) means not matched
	DstPrefix netip.Prefix // invalid (zero) means not matched

	SrcPort    uint16
	DstPort    uint16
	SrcPortSet bool
	DstPortSet bool

	// Promiscuous is set on the single rule of a promiscuous filter.
	Promiscuous bool
}

// Validate checks the filter without regard to any backend. Every refusal
// wraps ErrUnsupported. It refuses Promiscuous with matches, two different
// protocols (from MatchIPProto or a port match), a port match with no
// protocol anywhere, an invalid prefix, a VLAN above MaxVLAN, EtherType 0 and
// an unknown kind.
func (f SteeringFilter) Validate() error {
	if f.Promiscuous && len(f.Match) > 0 {
		return fmt.Errorf("steering: promiscuous takes every packet and cannot be combined with %d match(es): %w", len(f.Match), ErrUnsupported)
	}
	var proto uint8
	protoSet := false
	setProto := func(p uint8, m Match) error {
		if protoSet && p != proto {
			return fmt.Errorf("steering: %q contradicts protocol %s: %w", m, protoName(proto), ErrUnsupported)
		}
		proto, protoSet = p, true
		return nil
	}
	portWithoutProto := ""
	for _, m := range f.Match {
		switch m.Kind {
		case MatchKindDstMAC:
		case MatchKindVLAN:
			if m.VLAN > MaxVLAN {
				return fmt.Errorf("steering: VLAN %d is above %d: %w", m.VLAN, MaxVLAN, ErrUnsupported)
			}
		case MatchKindEtherType:
			if m.EtherType == 0 {
				return fmt.Errorf("steering: EtherType 0 cannot be matched (0 means unset): %w", ErrUnsupported)
			}
		case MatchKindIPProto:
			if err := setProto(m.IPProto, m); err != nil {
				return err
			}
		case MatchKindSrcIP, MatchKindDstIP:
			if _, err := CanonicalPrefix(m.Prefix); err != nil {
				return fmt.Errorf("steering: %s match: %w", kindName(m.Kind), err)
			}
		case MatchKindSrcPort, MatchKindDstPort:
			if m.IPProto == 0 {
				portWithoutProto = m.String()
				continue
			}
			if err := setProto(m.IPProto, m); err != nil {
				return err
			}
		default:
			return fmt.Errorf("steering: unknown match kind %d: %w", m.Kind, ErrUnsupported)
		}
	}
	if portWithoutProto != "" && !protoSet {
		return fmt.Errorf("steering: %q names no protocol (use MatchDstPort or MatchSrcPort): %w", portWithoutProto, ErrUnsupported)
	}
	return nil
}

// CanonicalPrefix is the one reading of an address prefix every backend
// compiles: p with its host bits cleared, and an IPv4-mapped IPv6 prefix of
// /96 or longer (::ffff:10.0.0.0/104) turned into the IPv4 prefix it maps
// (10.0.0.0/8). An IPv4-mapped address with a shorter prefix
// (::ffff:0.0.0.0/80) spans IPv6 space and the whole mapped range at once,
// which no rule of one family expresses: it is refused, as is an invalid
// prefix, with an error wrapping ErrUnsupported that names it.
func CanonicalPrefix(p netip.Prefix) (netip.Prefix, error) {
	if !p.IsValid() {
		return netip.Prefix{}, fmt.Errorf("invalid prefix %q: %w", p, ErrUnsupported)
	}
	if p.Addr().Is4In6() {
		if p.Bits() < 96 {
			return netip.Prefix{}, fmt.Errorf("prefix %s is IPv4-mapped but shorter than /96, so it spans IPv6 and every IPv4 address at once; "+
				"name the IPv4 part (an IPv4 prefix) and the IPv6 part (a prefix not written as ::ffff:a.b.c.d) separately: %w", p, ErrUnsupported)
		}
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// expansion order of Rules: each kind's alternatives multiply the rule set in
// this order.
var ruleOrder = [...]MatchKind{
	MatchKindDstMAC, MatchKindVLAN, MatchKindEtherType, MatchKindIPProto,
	MatchKindDstPort, MatchKindSrcPort, MatchKindSrcIP, MatchKindDstIP,
}

// Rules validates the filter and expands it into conjunctions: the cross
// product of each kind's alternatives. A promiscuous filter gives one Rule
// with Promiscuous set; the zero filter gives one empty Rule, which matches
// everything, so backends handle the default filter before calling Rules.
// More than MaxRules conjunctions is refused with ErrUnsupported.
func (f SteeringFilter) Rules() ([]Rule, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if f.Promiscuous {
		return []Rule{{Promiscuous: true}}, nil
	}
	var groups [MatchKindDstPort + 1][]Match
	for _, m := range f.Match {
		if m.Kind == MatchKindIPProto && len(groups[m.Kind]) > 0 {
			continue // Validate proved every protocol is the same one
		}
		groups[m.Kind] = append(groups[m.Kind], m)
	}
	// A port match carries its protocol; give the rule one even when the
	// only protocol is on the port matches.
	if len(groups[MatchKindIPProto]) == 0 {
		for _, k := range [...]MatchKind{MatchKindDstPort, MatchKindSrcPort} {
			if g := groups[k]; len(g) > 0 && g[0].IPProto != 0 {
				groups[MatchKindIPProto] = []Match{MatchIPProto(g[0].IPProto)}
				break
			}
		}
	}
	rules := []Rule{{}}
	for _, k := range ruleOrder {
		alts := groups[k]
		if len(alts) == 0 {
			continue
		}
		if len(rules)*len(alts) > MaxRules {
			return nil, fmt.Errorf("steering: filter expands to more than %d rules: %w", MaxRules, ErrUnsupported)
		}
		next := make([]Rule, 0, len(rules)*len(alts))
		for _, r := range rules {
			for _, m := range alts {
				next = append(next, m.apply(r))
			}
		}
		rules = next
	}
	return rules, nil
}

// apply returns r with m's condition set.
func (m Match) apply(r Rule) Rule {
	switch m.Kind {
	case MatchKindDstMAC:
		r.MAC, r.MACSet = m.MAC, true
	case MatchKindVLAN:
		r.VLAN, r.VLANSet = m.VLAN, true
	case MatchKindEtherType:
		r.EtherType = m.EtherType
	case MatchKindIPProto:
		r.IPProto, r.IPProtoSet = m.IPProto, true
	case MatchKindSrcIP:
		r.SrcPrefix, _ = CanonicalPrefix(m.Prefix) // Validate refused the rest
	case MatchKindDstIP:
		r.DstPrefix, _ = CanonicalPrefix(m.Prefix)
	case MatchKindSrcPort:
		r.SrcPort, r.SrcPortSet = m.Port, true
	case MatchKindDstPort:
		r.DstPort, r.DstPortSet = m.Port, true
	}
	return r
}

// String describes the filter in one line, for start-up messages:
// "vlan 2043 and proto udp and (udp port 9000 or udp port 9001)".
func (f SteeringFilter) String() string {
	if f.Promiscuous {
		return "every packet the port sees"
	}
	if len(f.Match) == 0 {
		return "packets addressed to this interface"
	}
	type group struct {
		kind MatchKind
		alts []string
	}
	var groups []group
outer:
	for _, m := range f.Match {
		s := m.String()
		for i := range groups {
			if groups[i].kind != m.Kind {
				continue
			}
			for _, a := range groups[i].alts {
				if a == s {
					continue outer
				}
			}
			groups[i].alts = append(groups[i].alts, s)
			continue outer
		}
		groups = append(groups, group{kind: m.Kind, alts: []string{s}})
	}
	parts := make([]string, len(groups))
	for i, g := range groups {
		s := strings.Join(g.alts, " or ")
		if len(g.alts) > 1 && len(groups) > 1 {
			s = "(" + s + ")"
		}
		parts[i] = s
	}
	return strings.Join(parts, " and ")
}

// String renders one condition, as SteeringFilter.String shows it.
func (m Match) String() string {
	switch m.Kind {
	case MatchKindDstMAC:
		return fmt.Sprintf("to %02x:%02x:%02x:%02x:%02x:%02x", m.MAC[0], m.MAC[1], m.MAC[2], m.MAC[3], m.MAC[4], m.MAC[5])
	case MatchKindVLAN:
		return fmt.Sprintf("vlan %d", m.VLAN)
	case MatchKindEtherType:
		return fmt.Sprintf("ethertype 0x%04x", m.EtherType)
	case MatchKindIPProto:
		return "proto " + protoName(m.IPProto)
	case MatchKindSrcIP:
		return "from " + m.Prefix.String()
	case MatchKindDstIP:
		return "to " + m.Prefix.String()
	case MatchKindSrcPort:
		return fmt.Sprintf("%s src port %d", protoName(m.IPProto), m.Port)
	case MatchKindDstPort:
		return fmt.Sprintf("%s port %d", protoName(m.IPProto), m.Port)
	}
	return "unknown match"
}

func protoName(p uint8) string {
	switch p {
	case IPProtoTCP:
		return "tcp"
	case IPProtoUDP:
		return "udp"
	}
	return fmt.Sprintf("ip/%d", p)
}

func kindName(k MatchKind) string {
	if k == MatchKindSrcIP {
		return "source address"
	}
	return "destination address"
}
