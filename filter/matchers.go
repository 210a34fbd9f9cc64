package filter

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/cilium/ebpf/asm"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter/internal/layout"
)

// Protocol numbers the blocks test for; the offsets they read at, from
// FrameBaseRegister, are filter/internal/layout's.
const (
	protoICMP   = 1
	protoTCP    = 6
	protoUDP    = 17
	protoICMPv6 = 58
)

// ipv4Guard jumps to miss unless the IPv4 header has no options and the
// packet is not a later fragment, so the L4 header is at the fixed offset.
// A first fragment still matches. Needs 22 bytes from the base proven.
func ipv4Guard(miss string) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R1, FrameBaseRegister, layout.IPv4VerIHL, asm.Byte),
		asm.JNE.Imm(asm.R1, 0x45, miss),
		asm.LoadMem(asm.R1, FrameBaseRegister, layout.IPv4Frag, asm.Half),
		asm.And.Imm(asm.R1, NetShort(0x1fff)),
		asm.JNE.Imm(asm.R1, 0, miss),
	}
}

// etherTypeIs jumps to miss unless the (inner) EtherType is et. Needs 14
// bytes from the base proven.
func etherTypeIs(et uint16, miss string) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R1, FrameBaseRegister, OffEtherType, asm.Half),
		asm.JNE.Imm(asm.R1, NetShort(et), miss),
	}
}

// byteIs jumps to miss unless the byte at off is v.
func byteIs(off int16, v uint8, miss string) asm.Instructions {
	return asm.Instructions{
		asm.LoadMem(asm.R1, FrameBaseRegister, off, asm.Byte),
		asm.JNE.Imm(asm.R1, int32(v), miss),
	}
}

// halfIn jumps to hit when the 16-bit field at off is one of vals, else to
// miss. With no values every packet that got here hits.
func halfIn(off int16, vals []uint16, hit, miss string) asm.Instructions {
	if len(vals) == 0 {
		return asm.Instructions{asm.Ja.Label(hit)}
	}
	insns := asm.Instructions{asm.LoadMem(asm.R1, FrameBaseRegister, off, asm.Half)}
	for _, v := range vals {
		insns = append(insns, asm.JEq.Imm(asm.R1, NetShort(v), hit))
	}
	return append(insns, asm.Ja.Label(miss))
}

// l4Port is the code for a port match on one family: protocol proto, the
// 16-bit field at l4off within the L4 header in vals. miss is where a
// packet of the wrong family or protocol goes.
func l4Port(env MatchEnv, v6 bool, proto uint8, l4off int16, vals []uint16, miss string) asm.Instructions {
	var insns asm.Instructions
	if v6 {
		insns = append(insns, boundsTo(FrameBaseRegister, layout.IPv6L4+int(l4off)+2, miss)...)
		insns = append(insns, etherTypeIs(EtherTypeIPv6, miss)...)
		insns = append(insns, byteIs(layout.IPv6Next, proto, miss)...)
		return append(insns, halfIn(layout.IPv6L4+l4off, vals, env.Redirect, miss)...)
	}
	insns = append(insns, boundsTo(FrameBaseRegister, layout.IPv4L4+int(l4off)+2, miss)...)
	insns = append(insns, etherTypeIs(EtherTypeIPv4, miss)...)
	insns = append(insns, ipv4Guard(miss)...)
	insns = append(insns, byteIs(layout.IPv4Proto, proto, miss)...)
	return append(insns, halfIn(layout.IPv4L4+l4off, vals, env.Redirect, miss)...)
}

// portMatch is a match on a TCP or UDP port field of either family.
func portMatch(name string, proto uint8, l4off int16, ports []uint16) Match {
	ports = append([]uint16(nil), ports...)
	return Match{name: name, kind: kindBlock, build: func(env MatchEnv) (asm.Instructions, error) {
		v6 := env.Label("v6")
		insns := l4Port(env, false, proto, l4off, ports, v6)
		insns = append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol(v6))
		return append(insns, l4Port(env, true, proto, l4off, ports, env.Next)...), nil
	}}
}

func portName(proto string, ports []uint16) string {
	if len(ports) == 0 {
		return proto
	}
	return proto + "/" + portList(ports)
}

// MatchUDPPort matches UDP datagrams, IPv4 or IPv6, to any of the
// destination ports; with no ports, every UDP datagram. IPv4 packets with
// options and later fragments do not match (their L4 header is not where the
// match reads); nor do IPv6 packets with extension headers.
func MatchUDPPort(ports ...uint16) Match {
	return portMatch(portName("udp", ports), protoUDP, 2, ports)
}

// MatchTCPPort matches TCP segments, IPv4 or IPv6, to any of the
// destination ports (every TCP segment with none), with the same limits as
// MatchUDPPort.
func MatchTCPPort(ports ...uint16) Match {
	return portMatch(portName("tcp", ports), protoTCP, 2, ports)
}

// MatchUDPSrcPort matches UDP datagrams from any of the source ports: replies
// rather than requests.
func MatchUDPSrcPort(ports ...uint16) Match {
	return portMatch(portName("udp-src", ports), protoUDP, 0, ports)
}

// MatchTCPSrcPort matches TCP segments from any of the source ports.
func MatchTCPSrcPort(ports ...uint16) Match {
	return portMatch(portName("tcp-src", ports), protoTCP, 0, ports)
}

// MatchIPv4Proto matches IPv4 packets whose protocol field is p, fragments
// included.
func MatchIPv4Proto(p uint8) Match {
	return Match{name: fmt.Sprintf("ipv4-proto/%d", p), kind: kindBlock, build: func(env MatchEnv) (asm.Instructions, error) {
		insns := boundsTo(FrameBaseRegister, layout.IPv4Proto+1, env.Next)
		insns = append(insns, etherTypeIs(EtherTypeIPv4, env.Next)...)
		insns = append(insns, byteIs(layout.IPv4Proto, p, env.Next)...)
		return append(insns, asm.Ja.Label(env.Redirect)), nil
	}}
}

// MatchIPv6NextHeader matches IPv6 packets whose Next Header field is nh,
// taken literally: an extension header in between means no match.
func MatchIPv6NextHeader(nh uint8) Match {
	return Match{name: fmt.Sprintf("ipv6-nexthdr/%d", nh), kind: kindBlock, build: func(env MatchEnv) (asm.Instructions, error) {
		insns := boundsTo(FrameBaseRegister, layout.IPv6Next+1, env.Next)
		insns = append(insns, etherTypeIs(EtherTypeIPv6, env.Next)...)
		insns = append(insns, byteIs(layout.IPv6Next, nh, env.Next)...)
		return append(insns, asm.Ja.Label(env.Redirect)), nil
	}}
}

// MatchICMPv4Echo matches ICMP echo requests over IPv4 (no options, not a
// later fragment).
func MatchICMPv4Echo() Match {
	return Match{name: "icmpv4-echo", kind: kindBlock, build: func(env MatchEnv) (asm.Instructions, error) {
		insns := boundsTo(FrameBaseRegister, layout.IPv4L4+1, env.Next)
		insns = append(insns, etherTypeIs(EtherTypeIPv4, env.Next)...)
		insns = append(insns, ipv4Guard(env.Next)...)
		insns = append(insns, byteIs(layout.IPv4Proto, protoICMP, env.Next)...)
		insns = append(insns, byteIs(layout.IPv4L4, 8, env.Next)...)
		return append(insns, asm.Ja.Label(env.Redirect)), nil
	}}
}

// MatchICMPv6Echo matches ICMPv6 echo requests (Next Header 58 directly).
func MatchICMPv6Echo() Match {
	return Match{name: "icmpv6-echo", kind: kindBlock, build: func(env MatchEnv) (asm.Instructions, error) {
		insns := boundsTo(FrameBaseRegister, layout.IPv6L4+1, env.Next)
		insns = append(insns, etherTypeIs(EtherTypeIPv6, env.Next)...)
		insns = append(insns, byteIs(layout.IPv6Next, protoICMPv6, env.Next)...)
		insns = append(insns, byteIs(layout.IPv6L4, 128, env.Next)...)
		return append(insns, asm.Ja.Label(env.Redirect)), nil
	}}
}

// MatchEtherType matches frames whose EtherType, after one VLAN tag is
// skipped, is et. So MatchEtherType(EtherTypeVLAN) matches only frames with
// two tags; use MatchVLAN for the tag itself.
func MatchEtherType(et uint16) Match {
	return Match{name: fmt.Sprintf("ethertype/0x%04x", et), kind: kindBlock, build: func(env MatchEnv) (asm.Instructions, error) {
		insns := boundsTo(FrameBaseRegister, OffEtherType+2, env.Next)
		insns = append(insns, etherTypeIs(et, env.Next)...)
		return append(insns, asm.Ja.Label(env.Redirect)), nil
	}}
}

// MatchDstMAC matches frames sent to mac (the Ethernet destination).
func MatchDstMAC(mac [6]byte) Match {
	name := fmt.Sprintf("ether-dst/%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5])
	return Match{name: name, kind: kindBlock, build: func(env MatchEnv) (asm.Instructions, error) {
		insns := boundsTo(DataRegister, 6, env.Next)
		insns = append(insns,
			asm.LoadMem(asm.R1, DataRegister, 0, asm.Word),
			asm.JNE.Imm32(asm.R1, netWord(uint32(mac[0])<<24|uint32(mac[1])<<16|uint32(mac[2])<<8|uint32(mac[3])), env.Next),
			asm.LoadMem(asm.R1, DataRegister, 4, asm.Half),
			asm.JNE.Imm(asm.R1, NetShort(uint16(mac[4])<<8|uint16(mac[5])), env.Next),
			asm.Ja.Label(env.Redirect),
		)
		return insns, nil
	}}
}

// noVLAN is what the prologue stores when the driver reports no stripped
// tag: above every VLAN ID.
const noVLAN = 0x10000

// MatchVLAN matches frames of VLAN id: the outer tag in the frame (TPID
// 0x8100 or 0x88a8), or, where the driver strips tags before XDP and offers
// the bpf_xdp_metadata_rx_vlan_tag kfunc, the tag it stripped. The priority
// bits never decide. Where the driver strips tags and offers no kfunc, a
// stripped tag cannot be seen: the backend's Info says which applies.
func MatchVLAN(id uint16) Match {
	if id > 4095 {
		return MatchError("vlan", fmt.Errorf("VLAN ID %d is above 4095", id))
	}
	return Match{name: fmt.Sprintf("vlan/%d", id), kind: kindBlock, needsVLAN: true, build: func(env MatchEnv) (asm.Instructions, error) {
		stripped := env.Label("stripped")
		insns := boundsTo(DataRegister, 16, stripped)
		insns = append(insns,
			asm.LoadMem(asm.R1, DataRegister, OffEtherType, asm.Half),
			asm.JEq.Imm(asm.R1, NetShort(EtherTypeVLAN), env.Label("tagged")),
			asm.JNE.Imm(asm.R1, NetShort(EtherTypeQinQ), stripped),
			asm.LoadMem(asm.R1, DataRegister, 14, asm.Half).WithSymbol(env.Label("tagged")),
			asm.And.Imm(asm.R1, NetShort(0x0fff)),
			asm.JEq.Imm(asm.R1, NetShort(id), env.Redirect),
			asm.LoadMem(asm.R1, asm.R10, stackVLAN, asm.DWord).WithSymbol(stripped),
			asm.JEq.Imm(asm.R1, int32(id), env.Redirect),
			asm.Ja.Label(env.Next),
		)
		return insns, nil
	}}
}

// MatchSrcIP matches IPv4 or IPv6 packets from an address inside cidr
// ("10.0.0.0/8", "2001:db8::/32", or a single address). The family comes
// from cidr. A bad CIDR makes a match that Program.Instructions refuses.
func MatchSrcIP(cidr string) Match { return prefixMatch("src", cidr, true) }

// MatchDstIP matches IPv4 or IPv6 packets to an address inside cidr.
func MatchDstIP(cidr string) Match { return prefixMatch("dst", cidr, false) }

// MatchFlow matches packets from src AND to dst, both of one family.
func MatchFlow(src, dst string) Match {
	s, err := parsePrefix(src)
	if err != nil {
		return MatchError("flow", err)
	}
	d, err := parsePrefix(dst)
	if err != nil {
		return MatchError("flow", err)
	}
	if s.Addr().Is4() != d.Addr().Is4() {
		return MatchError("flow", fmt.Errorf("%s and %s are of different families", s, d))
	}
	return Match{name: "src " + s.String() + " & dst " + d.String(), kind: kindBlock, build: func(env MatchEnv) (asm.Instructions, error) {
		insns := prefixCode(s, true, env.Next)
		insns = append(insns, prefixCode(d, false, env.Next)...)
		return append(insns, asm.Ja.Label(env.Redirect)), nil
	}}
}

func prefixMatch(dir, cidr string, src bool) Match {
	p, err := parsePrefix(cidr)
	if err != nil {
		return MatchError(dir, err)
	}
	return PrefixMatch(p, src)
}

// PrefixMatch is MatchSrcIP (src true) or MatchDstIP for a parsed prefix.
// An IPv4-mapped IPv6 prefix is taken as the IPv4 prefix it maps.
func PrefixMatch(p netip.Prefix, src bool) Match {
	dir := "dst"
	if src {
		dir = "src"
	}
	p, err := packetio.CanonicalPrefix(p)
	if err != nil {
		return MatchError(dir, err)
	}
	return Match{name: dir + " " + p.String(), kind: kindBlock, build: func(env MatchEnv) (asm.Instructions, error) {
		return append(prefixCode(p, src, env.Next), asm.Ja.Label(env.Redirect)), nil
	}}
}

func parsePrefix(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("bad address %q: %w", s, err)
		}
		return packetio.CanonicalPrefix(netip.PrefixFrom(a, a.BitLen()))
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("bad CIDR %q: %w", s, err)
	}
	return packetio.CanonicalPrefix(p)
}

// prefixCode jumps to miss unless the packet is of p's family and its source
// (or destination) address lies in p. Addresses are compared a word at a
// time with 32-bit compares, so a word with its top bit set is not
// sign-extended into a mismatch; words the mask leaves out are skipped.
func prefixCode(p netip.Prefix, src bool, miss string) asm.Instructions {
	var (
		et    uint16
		off   int16
		words int
	)
	if p.Addr().Is4() {
		et, off, words = EtherTypeIPv4, layout.IPv4Dst, 1
		if src {
			off = layout.IPv4Src
		}
	} else {
		et, off, words = EtherTypeIPv6, layout.IPv6Dst, 4
		if src {
			off = layout.IPv6Src
		}
	}
	insns := boundsTo(FrameBaseRegister, int(off)+4*words, miss)
	insns = append(insns, etherTypeIs(et, miss)...)
	addr := p.Addr().AsSlice()
	bits := p.Bits()
	for w := 0; w < words; w++ {
		n := min(max(bits-32*w, 0), 32)
		if n == 0 {
			break
		}
		mask := uint32(0xffffffff) << (32 - n)
		net := uint32(addr[4*w])<<24 | uint32(addr[4*w+1])<<16 | uint32(addr[4*w+2])<<8 | uint32(addr[4*w+3])
		insns = append(insns, asm.LoadMem(asm.R1, FrameBaseRegister, off+int16(4*w), asm.Word))
		if mask != 0xffffffff {
			insns = append(insns, asm.And.Imm32(asm.R1, netWord(mask)))
		}
		insns = append(insns, asm.JNE.Imm32(asm.R1, netWord(net&mask), miss))
	}
	return insns
}

// MatchAll matches every packet. Use it to take everything on purpose, and
// ManagementRules as exceptions to leave the box reachable. It cannot be an
// exception itself.
func MatchAll() Match {
	return Match{name: "all", kind: kindAll, build: func(env MatchEnv) (asm.Instructions, error) {
		return asm.Instructions{asm.Ja.Label(env.Redirect)}, nil
	}}
}

// MatchNone matches nothing: the filter of a fleet that only transmits.
// The program is still attached, because some drivers transmit from an
// AF_XDP socket only while one is.
func MatchNone() Match {
	return Match{name: "none", kind: kindNone, build: func(env MatchEnv) (asm.Instructions, error) {
		return asm.Instructions{asm.Ja.Label(env.Next)}, nil
	}}
}

// MatchAnd matches packets that every one of ms matches: a conjunction,
// evaluated left to right, the first miss ending it. With no matches it is
// refused. MatchAll inside it is neutral; MatchNone makes it match nothing.
func MatchAnd(ms ...Match) Match {
	if len(ms) == 0 {
		return MatchError("and", errors.New("no matches"))
	}
	names := make([]string, len(ms))
	needsVLAN := false
	for i, m := range ms {
		if err := m.Err(); err != nil {
			return MatchError("and", err)
		}
		names[i] = m.String()
		needsVLAN = needsVLAN || m.needsVLAN
	}
	ms = append([]Match(nil), ms...)
	return Match{name: "(" + strings.Join(names, " & ") + ")", kind: kindBlock, needsVLAN: needsVLAN, build: func(env MatchEnv) (asm.Instructions, error) {
		var insns asm.Instructions
		for i, m := range ms {
			sub := env
			if i < len(ms)-1 {
				sub.Redirect = env.Label(fmt.Sprintf("and%d", i+1))
			}
			code, err := assembleBlock(m, sub, env.Label(fmt.Sprintf("and%d", i)))
			if err != nil {
				return nil, err
			}
			insns = append(insns, code...)
		}
		return insns, nil
	}}
}

// MatchAny matches packets that any of ms matches: an OR that can sit
// inside MatchAnd. With no matches it is refused.
func MatchAny(ms ...Match) Match {
	if len(ms) == 0 {
		return MatchError("any", errors.New("no matches"))
	}
	names := make([]string, len(ms))
	needsVLAN := false
	for i, m := range ms {
		if err := m.Err(); err != nil {
			return MatchError("any", err)
		}
		names[i] = m.String()
		needsVLAN = needsVLAN || m.needsVLAN
	}
	ms = append([]Match(nil), ms...)
	return Match{name: "(" + strings.Join(names, " | ") + ")", kind: kindBlock, needsVLAN: needsVLAN, build: func(env MatchEnv) (asm.Instructions, error) {
		var insns asm.Instructions
		for i, m := range ms {
			sub := env
			if i < len(ms)-1 {
				sub.Next = env.Label(fmt.Sprintf("any%d", i+1))
			}
			code, err := assembleBlock(m, sub, env.Label(fmt.Sprintf("any%d", i)))
			if err != nil {
				return nil, err
			}
			insns = append(insns, code...)
		}
		return insns, nil
	}}
}

// MatchL4Port matches proto packets (TCP or UDP, or any protocol with a
// 16-bit port pair at the start of its header, such as SCTP), IPv4 or IPv6,
// whose source (src) or destination port is one of ports. Unlike
// MatchUDPPort it reads the IPv4 header length from the packet, so a header
// with options matches too; a later fragment, which carries no L4 header,
// never does, and an IPv6 packet must have the protocol as its first Next
// Header.
func MatchL4Port(proto uint8, src bool, ports ...uint16) Match {
	if len(ports) == 0 {
		return MatchError("port", errors.New("no ports"))
	}
	ports = append([]uint16(nil), ports...)
	l4off := int16(2)
	dir := "dport"
	if src {
		l4off, dir = 0, "sport"
	}
	name := fmt.Sprintf("ip/%d %s %s", proto, dir, portList(ports))
	switch proto {
	case protoTCP:
		name = fmt.Sprintf("tcp %s %s", dir, portList(ports))
	case protoUDP:
		name = fmt.Sprintf("udp %s %s", dir, portList(ports))
	}
	return Match{name: name, kind: kindBlock, build: func(env MatchEnv) (asm.Instructions, error) {
		v6 := env.Label("v6")
		insns := boundsTo(FrameBaseRegister, layout.IPv4L4, v6)
		insns = append(insns, etherTypeIs(EtherTypeIPv4, v6)...)
		insns = append(insns, byteIs(layout.IPv4Proto, proto, env.Next)...)
		insns = append(insns,
			asm.LoadMem(asm.R1, FrameBaseRegister, layout.IPv4Frag, asm.Half),
			asm.And.Imm(asm.R1, NetShort(0x1fff)),
			asm.JNE.Imm(asm.R1, 0, env.Next), // a later fragment
			asm.LoadMem(asm.R1, FrameBaseRegister, layout.IPv4VerIHL, asm.Byte),
			asm.And.Imm(asm.R1, 0x0f),
			asm.JLT.Imm(asm.R1, 5, env.Next), // not an IPv4 header
			asm.LSh.Imm(asm.R1, 2),
			// R2 = frame base + IHL*4: the L4 header minus the 14
			// bytes of Ethernet header before the IP header.
			asm.Mov.Reg(asm.R2, FrameBaseRegister),
			asm.Add.Reg(asm.R2, asm.R1),
		)
		insns = append(insns, boundsTo(asm.R2, 14+int(l4off)+2, env.Next)...)
		insns = append(insns, asm.LoadMem(asm.R1, asm.R2, 14+l4off, asm.Half))
		for _, p := range ports {
			insns = append(insns, asm.JEq.Imm(asm.R1, NetShort(p), env.Redirect))
		}
		insns = append(insns, asm.Ja.Label(env.Next), asm.Mov.Imm(asm.R0, 0).WithSymbol(v6))
		return append(insns, l4Port(env, true, proto, l4off, ports, env.Next)...), nil
	}}
}
