package filter

import (
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf/asm"

	"github.com/packetio/packetio/filter/internal/layout"
)

// MaxManagementPrefixes bounds the addresses ManagementRules scopes its
// rules to: each costs a block per port rule.
const MaxManagementPrefixes = 16

// matchND matches IPv6 neighbour discovery: ICMPv6 types 133 (router
// solicitation) to 137 (redirect).
func matchND() Match {
	return Match{name: "nd", kind: kindBlock, build: func(env MatchEnv) (asm.Instructions, error) {
		insns := boundsTo(FrameBaseRegister, layout.IPv6L4+1, env.Next)
		insns = append(insns, etherTypeIs(EtherTypeIPv6, env.Next)...)
		insns = append(insns, byteIs(layout.IPv6Next, protoICMPv6, env.Next)...)
		return append(insns,
			asm.LoadMem(asm.R1, FrameBaseRegister, layout.IPv6L4, asm.Byte),
			asm.JLT.Imm(asm.R1, 133, env.Next),
			asm.JGT.Imm(asm.R1, 137, env.Next),
			asm.Ja.Label(env.Redirect),
		), nil
	}}
}

// matchLocalPort matches proto packets whose source (src) or destination
// port is port and whose destination address lies in local; with an invalid
// local it matches the port in both families, any address.
func matchLocalPort(proto uint8, src bool, port uint16, local netip.Prefix) Match {
	l4off := int16(2)
	dir := "dport"
	if src {
		l4off, dir = 0, "sport"
	}
	pname := "tcp"
	if proto == protoUDP {
		pname = "udp"
	}
	name := fmt.Sprintf("%s %s %d", pname, dir, port)
	if !local.IsValid() {
		return portMatch(name, proto, l4off, []uint16{port})
	}
	v6 := !local.Addr().Is4()
	return Match{name: name + " to " + local.String(), kind: kindBlock, build: func(env MatchEnv) (asm.Instructions, error) {
		insns := prefixCode(local, false, env.Next)
		return append(insns, l4Port(env, v6, proto, l4off, []uint16{port}, env.Next)...), nil
	}}
}

// ManagementRules are the exceptions that keep a host reachable while a
// program takes its traffic: ARP, IPv6 neighbour discovery, SSH (TCP 22
// and extraTCP, both directions) and DNS replies, scoped to the local
// prefixes (nil: unscoped, any address; empty: only ARP and ND survive, as
// no port can be addressed to this host). More than MaxManagementPrefixes
// prefixes are the caller's to refuse.
func ManagementRules(extraTCP []uint16, local []netip.Prefix) []Match {
	rules := []Match{MatchEtherType(EtherTypeARP), matchND()}
	ports := append([]uint16{22}, extraTCP...)
	scopes := local
	if local == nil {
		scopes = []netip.Prefix{{}}
	}
	for _, pfx := range scopes {
		for _, p := range ports {
			rules = append(rules, matchLocalPort(protoTCP, false, p, pfx), matchLocalPort(protoTCP, true, p, pfx))
		}
		rules = append(rules, matchLocalPort(protoUDP, true, 53, pfx), matchLocalPort(protoTCP, true, 53, pfx))
	}
	return rules
}

// ManagementDesc summarises ManagementRules(extraTCP, local) in one line,
// for a backend's Info.
func ManagementDesc(extraTCP []uint16, local []netip.Prefix) string {
	scope := "any address"
	if local != nil {
		scope = fmt.Sprintf("%d local addresses", len(local))
	}
	return fmt.Sprintf("management: arp, nd, ssh %s, dns replies, to %s", portList(append([]uint16{22}, extraTCP...)), scope)
}
