package filter

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/packetio/packetio"
)

// Steering compiles a packetio.SteeringFilter into one Match: the OR of
// its rules, each rule the AND of its conditions. Nothing is widened: a
// condition no block can test, or a rule no packet can match, is refused
// with packetio.ErrUnsupported. local gives the interface's own addresses
// (its MAC, broadcast, the multicast groups it joined) for the zero
// filter, which means "addressed to this interface"; it is called only
// for that
func Steering(f packetio.SteeringFilter, local func() ([][6]byte, error)) (Match, error) {
	if !f.Promiscuous && len(f.Match) == 0 {
		macs, err := local()
		if err != nil {
			return Match{}, fmt.Errorf("steering: the zero filter means packets addressed to this interface, and its addresses cannot be read (%v): %w", err, packetio.ErrUnsupported)
		}
		ms := make([]Match, len(macs))
		for i, m := range macs {
			ms[i] = MatchDstMAC(m)
		}
		return MatchAny(ms...), nil
	}
	rules, err := f.Rules()
	if err != nil {
		return Match{}, err
	}
	if len(rules) == 1 && rules[0].Promiscuous {
		return MatchAll(), nil
	}
	alts := make([]Match, 0, len(rules))
	for _, r := range rules {
		m, err := compileRule(r)
		if err != nil {
			return Match{}, err
		}
		alts = append(alts, m)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return MatchAny(alts...), nil
}

// compileRule is one conjunction.
func compileRule(r packetio.Rule) (Match, error) {
	var conds []Match
	if r.MACSet {
		conds = append(conds, MatchDstMAC(r.MAC))
	}
	if r.VLANSet {
		conds = append(conds, MatchVLAN(r.VLAN))
	}
	if r.EtherType != 0 {
		conds = append(conds, MatchEtherType(r.EtherType))
	}
	if err := contradiction(r); err != nil {
		return Match{}, err
	}
	if r.SrcPrefix.IsValid() {
		conds = append(conds, PrefixMatch(r.SrcPrefix, true))
	}
	if r.DstPrefix.IsValid() {
		conds = append(conds, PrefixMatch(r.DstPrefix, false))
	}
	ports := r.SrcPortSet || r.DstPortSet
	if ports && (!r.IPProtoSet || (r.IPProto != packetio.IPProtoTCP && r.IPProto != packetio.IPProtoUDP)) {
		return Match{}, fmt.Errorf("steering: rule %v: ports are matched for TCP and UDP only, not protocol %d: %w", ruleString(r), r.IPProto, packetio.ErrUnsupported)
	}
	switch {
	case ports:
		// The port matches test the protocol too, in both families.
		if r.DstPortSet {
			conds = append(conds, MatchL4Port(r.IPProto, false, r.DstPort))
		}
		if r.SrcPortSet {
			conds = append(conds, MatchL4Port(r.IPProto, true, r.SrcPort))
		}
	case r.IPProtoSet:
		conds = append(conds, MatchAny(MatchIPv4Proto(r.IPProto), MatchIPv6NextHeader(r.IPProto)))
	}
	if len(conds) == 0 {
		return MatchAll(), nil
	}
	if len(conds) == 1 {
		return conds[0], nil
	}
	return MatchAnd(conds...), nil
}

// contradiction refuses a rule no packet can match: conditions of two
// families, or IP conditions on a frame whose EtherType is not IP. Such a
// filter would install a program that takes nothing, silently.
func contradiction(r packetio.Rule) error {
	family := 0 // 4, 6, or -1 for not IP
	need := func(f int, what string) error {
		if family != 0 && family != f {
			return fmt.Errorf("steering: rule %v: %s contradicts the rest of the rule: no packet can match it: %w", ruleString(r), what, packetio.ErrUnsupported)
		}
		family = f
		return nil
	}
	switch r.EtherType {
	case 0:
	case 0x0800:
		family = 4
	case 0x86dd:
		family = 6
	default:
		family = -1
	}
	for _, p := range []netip.Prefix{r.SrcPrefix, r.DstPrefix} {
		if !p.IsValid() {
			continue
		}
		f := 6
		if p.Addr().Unmap().Is4() {
			f = 4
		}
		if err := need(f, "prefix "+p.String()); err != nil {
			return err
		}
	}
	if (r.IPProtoSet || r.SrcPortSet || r.DstPortSet) && family == -1 {
		return fmt.Errorf("steering: rule %v: an IP protocol or port on EtherType %#04x, which is not IP: no packet can match it: %w", ruleString(r), r.EtherType, packetio.ErrUnsupported)
	}
	return nil
}

func ruleString(r packetio.Rule) string {
	var parts []string
	if r.MACSet {
		parts = append(parts, net.HardwareAddr(r.MAC[:]).String())
	}
	if r.VLANSet {
		parts = append(parts, fmt.Sprintf("vlan %d", r.VLAN))
	}
	if r.EtherType != 0 {
		parts = append(parts, fmt.Sprintf("ethertype %#04x", r.EtherType))
	}
	if r.IPProtoSet {
		parts = append(parts, fmt.Sprintf("proto %d", r.IPProto))
	}
	if r.SrcPrefix.IsValid() {
		parts = append(parts, "from "+r.SrcPrefix.String())
	}
	if r.DstPrefix.IsValid() {
		parts = append(parts, "to "+r.DstPrefix.String())
	}
	if r.SrcPortSet {
		parts = append(parts, fmt.Sprintf("src port %d", r.SrcPort))
	}
	if r.DstPortSet {
		parts = append(parts, fmt.Sprintf("port %d", r.DstPort))
	}
	return "(" + strings.Join(parts, " and ") + ")"
}
