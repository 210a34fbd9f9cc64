// Package afxdpsteer builds the steering a netstack.Stack needs on an afxdp
// device: the stack's own TCP and UDP traffic and the address resolution
// for its own addresses, and nothing else, so the kernel keeps the rest of
// the interface (its own address, its ARP and neighbour discovery, SSH).
//
// The stack should have an address the kernel does not own on that
// interface, with the interface's MAC (see the netstack README, "Which
// address to give the stack"). Then every frame for the stack is one of:
//
//   - TCP to one of its listening ports at one of its addresses,
//   - TCP from a peer it dialled, to one of its addresses,
//   - UDP to one of its ports at one of its addresses,
//   - ARP whose target is its IPv4 address (requests for it, replies to
//     it),
//   - an IPv6 neighbour solicitation or advertisement to its IPv6 address
//     or that address's solicited-node group.
//
// A packetio.SteeringFilter cannot say that (its kinds AND, so "TCP port P,
// or ARP" is not one filter), and it has no condition for an ARP target
// address at all. Options therefore gives the first kind of traffic to
// afxdp.WithSteering and adds the others as alternatives of the XDP program
// through afxdp.WithXDP(xdp.WithFilter(...)).
//
//	t := afxdpsteer.Traffic{
//		Addrs:    []netip.Addr{cfg.Addr.Addr()},
//		TCPPorts: []uint16{8080},
//	}
//	opts, err := t.Options()
//	if err != nil { ... }
//	dev, err := afxdp.Open("eth0", opts...)
package afxdpsteer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf/asm"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/filter"
)

// Traffic is what a stack receives.
type Traffic struct {
	// Addrs are the stack's addresses (Config.Addr and Config.Addr6), one
	// or two, at most one of each family. Required.
	Addrs []netip.Addr
	// TCPPorts are the local TCP ports the stack listens on.
	TCPPorts []uint16
	// TCPPeers are the remote TCP endpoints the stack dials: their
	// segments to the stack, from that address and port, are taken.
	// Ephemeral local ports are not known in advance, so a dialling stack
	// is steered by its peer.
	TCPPeers []netip.AddrPort
	// UDPPorts are the local UDP ports the stack has sockets on.
	UDPPorts []uint16
	// AnyPort takes every IPv4 and IPv6 packet to the stack's addresses,
	// whatever its protocol and ports (the lists above are then implied):
	// for a stack that dials peers not known when the device opens, and
	// so that ICMP (Packet Too Big, unreachables, echo) reaches it. Use it
	// only with addresses the kernel does not own.
	AnyPort bool
}

// maxPorts bounds each port list so that a filter stays within
// packetio.MaxRules conjunctions (ports times address families).
const maxPorts = packetio.MaxRules / 2

// check refuses what cannot be steered exactly.
func (t Traffic) check() (v4, v6 netip.Addr, err error) {
	if len(t.Addrs) == 0 {
		return v4, v6, errors.New("afxdpsteer: no address: give the stack's addresses in Addrs")
	}
	for _, a := range t.Addrs {
		switch {
		case !a.IsValid() || a.IsUnspecified() || a.IsMulticast() || a.IsLoopback():
			return v4, v6, fmt.Errorf("afxdpsteer: %v is not a unicast address", a)
		case a.Is4() || a.Is4In6():
			if v4.IsValid() {
				return v4, v6, fmt.Errorf("afxdpsteer: two IPv4 addresses (%s, %s): a stack has one", v4, a)
			}
			v4 = a.Unmap()
		default:
			if v6.IsValid() {
				return v4, v6, fmt.Errorf("afxdpsteer: two IPv6 addresses (%s, %s): a stack has one", v6, a)
			}
			v6 = a.WithZone("")
		}
	}
	if !t.AnyPort && len(t.TCPPorts) == 0 && len(t.TCPPeers) == 0 && len(t.UDPPorts) == 0 {
		return v4, v6, errors.New("afxdpsteer: no ports and no peers: the stack would receive nothing but address resolution")
	}
	for _, l := range []struct {
		name  string
		ports []uint16
	}{{"TCPPorts", t.TCPPorts}, {"UDPPorts", t.UDPPorts}} {
		if len(l.ports) > maxPorts {
			return v4, v6, fmt.Errorf("afxdpsteer: %d %s, at most %d", len(l.ports), l.name, maxPorts)
		}
		for _, p := range l.ports {
			if p == 0 {
				return v4, v6, fmt.Errorf("afxdpsteer: port 0 in %s", l.name)
			}
		}
	}
	for _, p := range t.TCPPeers {
		a := p.Addr().Unmap()
		switch {
		case !p.IsValid() || p.Port() == 0:
			return v4, v6, fmt.Errorf("afxdpsteer: TCP peer %v has no address or no port", p)
		case a.Is4() && !v4.IsValid(), a.Is6() && !v6.IsValid():
			return v4, v6, fmt.Errorf("afxdpsteer: TCP peer %v is of a family the stack has no address of", p)
		}
	}
	return v4, v6, nil
}

// filters are the packetio filters for the stack's TCP and UDP traffic, in
// the order Options uses them.
func (t Traffic) filters(v4, v6 netip.Addr) []packetio.SteeringFilter {
	var dsts []packetio.Match
	for _, a := range []netip.Addr{v4, v6} {
		if a.IsValid() {
			dsts = append(dsts, packetio.MatchDstIP(netip.PrefixFrom(a, a.BitLen())))
		}
	}
	if t.AnyPort {
		return []packetio.SteeringFilter{{Match: dsts}}
	}
	ports := func(proto uint8, ps []uint16) packetio.SteeringFilter {
		m := append([]packetio.Match{packetio.MatchIPProto(proto)}, dsts...)
		for _, p := range ps {
			m = append(m, packetio.Match{Kind: packetio.MatchKindDstPort, IPProto: proto, Port: p})
		}
		return packetio.SteeringFilter{Match: m}
	}
	var fs []packetio.SteeringFilter
	if len(t.TCPPorts) > 0 {
		fs = append(fs, ports(packetio.IPProtoTCP, t.TCPPorts))
	}
	for _, p := range t.TCPPeers {
		a := p.Addr().Unmap()
		own := v4
		if a.Is6() {
			own = v6
		}
		m := packetio.MatchSrcPort(packetio.IPProtoTCP, p.Port())
		m = append(m, packetio.MatchSrcIP(netip.PrefixFrom(a, a.BitLen())), packetio.MatchDstIP(netip.PrefixFrom(own, own.BitLen())))
		fs = append(fs, packetio.SteeringFilter{Match: m})
	}
	if len(t.UDPPorts) > 0 {
		fs = append(fs, ports(packetio.IPProtoUDP, t.UDPPorts))
	}
	return fs
}

// Options returns the afxdp options that steer t to the device: one
// afxdp.WithSteering and one afxdp.WithXDP with the other alternatives.
// Give them to afxdp.Open before options of your own. The steering is fixed
// when the device opens: a stack that will dial peers not named in TCPPeers
// needs AnyPort.
func (t Traffic) Options() ([]afxdp.Option, error) {
	v4, v6, err := t.check()
	if err != nil {
		return nil, err
	}
	fs := t.filters(v4, v6)
	alts, err := t.matches(v4, v6, fs[1:])
	if err != nil {
		return nil, err
	}
	return []afxdp.Option{afxdp.WithSteering(fs[0]), afxdp.WithXDP(xdp.WithFilter(alts...))}, nil
}

// Matches returns the whole steering as XDP matches, any of which takes a
// frame: what Options installs, for filter.NewClassifier or for a program on
// the datapath (package afxdp/xdp) directly.
func (t Traffic) Matches() ([]filter.Match, error) {
	v4, v6, err := t.check()
	if err != nil {
		return nil, err
	}
	return t.matches(v4, v6, t.filters(v4, v6))
}

func (t Traffic) matches(v4, v6 netip.Addr, fs []packetio.SteeringFilter) ([]filter.Match, error) {
	var ms []filter.Match
	for _, f := range fs {
		m, err := afxdp.SteeringMatch(f)
		if err != nil {
			return nil, fmt.Errorf("afxdpsteer: %w", err)
		}
		ms = append(ms, m)
	}
	if v4.IsValid() {
		ms = append(ms, ARPFor(v4))
	}
	if v6.IsValid() {
		ms = append(ms, NeighborDiscoveryFor(v6))
	}
	return ms, nil
}

// ARP header offsets from the frame base (Ethernet header 14 bytes).
const (
	offARPProto  = 14 + 2  // protocol type: 0x0800
	offARPTarget = 14 + 24 // target protocol address
	arpEnd       = 14 + 28
)

// ARPFor matches ARP packets for IPv4 over Ethernet whose target protocol
// address is a: requests asking for a, and the replies to requests a sent
// (a reply's target is the asker). The kernel keeps every other ARP packet
// on the interface, its own included. a must be an IPv4 address.
func ARPFor(a netip.Addr) filter.Match {
	a = a.Unmap()
	if !a.Is4() {
		return filter.MatchError("arp-for", fmt.Errorf("%v is not an IPv4 address", a))
	}
	want := a.As4()
	return filter.NewMatch("arp for "+a.String(), func(env filter.MatchEnv) (asm.Instructions, error) {
		_, base := env.FrameBase()
		insns := env.Bounds(base, arpEnd)
		return append(insns,
			asm.LoadMem(asm.R1, base, filter.OffEtherType, asm.Half),
			asm.JNE.Imm(asm.R1, filter.NetShort(filter.EtherTypeARP), env.Next),
			asm.LoadMem(asm.R1, base, offARPProto, asm.Half),
			asm.JNE.Imm(asm.R1, filter.NetShort(filter.EtherTypeIPv4), env.Next),
			asm.LoadMem(asm.R1, base, offARPTarget, asm.Word),
			asm.JNE.Imm32(asm.R1, int32(binary.NativeEndian.Uint32(want[:])), env.Next),
			asm.Ja.Label(env.Redirect),
		), nil
	})
}

// IPv6 offsets from the frame base, for a packet without extension headers.
const (
	offIPv6Next    = 14 + 6
	offICMPv6Type  = 14 + 40
	icmpv6         = 58
	typeNeighSolic = 135
	typeNeighAdv   = 136
)

// NeighborDiscoveryFor matches IPv6 neighbour solicitations and
// advertisements (ICMPv6 types 135 and 136, with no extension header in
// front) sent to a or to a's solicited-node multicast group: what a stack
// at a needs to be found and to find its neighbours. Router discovery,
// MLD and every other ICMPv6 message stay with the kernel. a must be an
// IPv6 address.
func NeighborDiscoveryFor(a netip.Addr) filter.Match {
	if !a.Is6() || a.Is4In6() {
		return filter.MatchError("nd-for", fmt.Errorf("%v is not an IPv6 address", a))
	}
	a = a.WithZone("")
	b := a.As16()
	sol := netip.AddrFrom16([16]byte{0xff, 0x02, 11: 1, 12: 0xff, 13: b[13], 14: b[14], 15: b[15]})
	ndType := filter.NewMatch("icmpv6 type 135|136", func(env filter.MatchEnv) (asm.Instructions, error) {
		_, base := env.FrameBase()
		insns := env.Bounds(base, offICMPv6Type+1)
		return append(insns,
			asm.LoadMem(asm.R1, base, filter.OffEtherType, asm.Half),
			asm.JNE.Imm(asm.R1, filter.NetShort(filter.EtherTypeIPv6), env.Next),
			asm.LoadMem(asm.R1, base, offIPv6Next, asm.Byte),
			asm.JNE.Imm(asm.R1, icmpv6, env.Next),
			asm.LoadMem(asm.R1, base, offICMPv6Type, asm.Byte),
			asm.JEq.Imm(asm.R1, typeNeighSolic, env.Redirect),
			asm.JEq.Imm(asm.R1, typeNeighAdv, env.Redirect),
			asm.Ja.Label(env.Next),
		), nil
	})
	return filter.MatchAnd(ndType, filter.MatchAny(
		filter.PrefixMatch(netip.PrefixFrom(a, 128), false),
		filter.PrefixMatch(netip.PrefixFrom(sol, 128), false),
	))
}
