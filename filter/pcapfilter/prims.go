package pcapfilter

import (
	"net"
	"net/netip"

	"golang.org/x/net/bpf"
)

// Qualifiers, as libpcap names them: the protocol (ip, tcp, ether, ...),
// the direction (src, dst, src or dst, src and dst) and the kind of
// address (host, net, port, portrange, proto).
type proto uint8

const (
	pDefault proto = iota
	pUndef
	pLink
	pIP
	pIP6
	pARP
	pRARP
	pTCP
	pUDP
	pICMP
	pICMP6
	pSCTP
	pIGMP
)

var protoNames = map[proto]string{
	pLink: "ether", pIP: "ip", pIP6: "ip6", pARP: "arp", pRARP: "rarp", pTCP: "tcp",
	pUDP: "udp", pICMP: "icmp", pICMP6: "icmp6", pSCTP: "sctp", pIGMP: "igmp",
}

var kwProto = map[keyword]proto{
	kEther: pLink, kIP: pIP, kIP6: pIP6, kARP: pARP, kRARP: pRARP, kTCP: pTCP,
	kUDP: pUDP, kICMP: pICMP, kICMP6: pICMP6, kSCTP: pSCTP, kIGMP: pIGMP,
}

type dir uint8

const (
	dDefault dir = iota
	dUndef
	dSrc
	dDst
	dOr
	dAnd
)

type addrKind uint8

const (
	aDefault addrKind = iota
	aUndef
	aHost
	aNet
	aPort
	aPortrange
	aProto
)

type qual struct {
	proto proto
	dir   dir
	addr  addrKind
}

// qerr is the qualifier after a term that carries none (tcp, a relation):
// a bare address after it is a syntax error.
var qerr = qual{pUndef, dUndef, aUndef}

// Ethernet types and IP protocols.
const (
	etIP    = 0x0800
	etARP   = 0x0806
	etRARP  = 0x8035
	etIP6   = 0x86dd
	etVLAN  = 0x8100
	etQinQ  = 0x88a8
	etQinQ9 = 0x9100

	ipICMP  = 1
	ipIGMP  = 2
	ipTCP   = 6
	ipUDP   = 17
	ipFrag6 = 44
	ipICMP6 = 58
	ipSCTP  = 132

	etherMTU = 1500
)

// offs are the link-layer offsets at a point of the parse: each vlan
// before it moves the EtherType and the network header 4 bytes on, as in
// libpcap.
type offs struct {
	lt uint32 // the EtherType
	nl uint32 // the network-layer header
}

// linktype tests the EtherType (or, for a value up to 1500, the 802.3
// length and the LLC DSAP, as libpcap does).
func (o offs) linktype(et uint32, pos int) bnode {
	if et > etherMTU {
		return eq(o.lt, 2, et)
	}
	notLen := not(cmp(o.lt, 2, bpf.JumpGreaterThan, etherMTU, 0xffffffff))
	switch et {
	case 0x06, 0xf0, 0xfe: // LLCSAP_IP, NETBEUI, ISONS: DSAP and SSAP
		return and(notLen, eq(o.nl, 2, et<<8|et))
	case 0xe0: // LLCSAP_IPX, which libpcap also looks for in three other encapsulations
		panic(unsupportedAt(pos, "ether proto 0xe0 (IPX) is not supported"))
	}
	return and(notLen, eq(o.nl, 1, et))
}

// ipProto is "ip proto v".
func (o offs) ipProto(v uint32) bnode {
	return and(o.linktype(etIP, 0), eq(o.nl+9, 1, v))
}

// ip6Proto is "ip6 proto v": the next header, or the one after a
// fragment header (libpcap looks that one header deep).
func (o offs) ip6Proto(v uint32) bnode {
	return and(o.linktype(etIP6, 0), or(eq(o.nl+6, 1, v), and(eq(o.nl+6, 1, ipFrag6), eq(o.nl+40, 1, v))))
}

// abbrev is a protocol keyword standing alone (tcp, ip6, arp, ...).
func (o offs) abbrev(p proto, pos int) bnode {
	switch p {
	case pIP:
		return o.linktype(etIP, pos)
	case pIP6:
		return o.linktype(etIP6, pos)
	case pARP:
		return o.linktype(etARP, pos)
	case pRARP:
		return o.linktype(etRARP, pos)
	case pTCP:
		return or(o.ipProto(ipTCP), o.ip6Proto(ipTCP))
	case pUDP:
		return or(o.ipProto(ipUDP), o.ip6Proto(ipUDP))
	case pSCTP:
		return or(o.ipProto(ipSCTP), o.ip6Proto(ipSCTP))
	case pICMP:
		return o.ipProto(ipICMP)
	case pIGMP:
		return o.ipProto(ipIGMP)
	case pICMP6:
		return o.ip6Proto(ipICMP6)
	}
	panic(errAt(pos, "link layer applied in wrong context"))
}

// fragOK is "not a fragment other than the first".
func (o offs) fragOK() bnode {
	return not(cmp(o.nl+6, 2, bpf.JumpBitsSet, 0x1fff, 0xffffffff))
}

// proto is "[p] proto v".
func (o offs) proto(v uint32, p proto, d dir, pos int) bnode {
	if d != dDefault {
		panic(errAt(pos, "direction applied to 'proto'"))
	}
	switch p {
	case pDefault:
		return or(o.ipProto(v), o.ip6Proto(v))
	case pLink:
		if v == 0x809b || v == 0x80f3 {
			panic(unsupportedAt(pos, "ether proto %#x (AppleTalk) is not supported", v))
		}
		return o.linktype(v, pos)
	case pIP:
		return o.ipProto(v)
	case pIP6:
		return o.ip6Proto(v)
	case pARP, pRARP:
		panic(errAt(pos, "%s does not encapsulate another protocol", protoNames[p]))
	}
	panic(errAt(pos, "'%s proto' is bogus", protoNames[p]))
}

// hostop tests an IPv4 address field (masked) of one protocol.
func (o offs) hostop(addr, mask uint32, d dir, et, src, dst uint32) bnode {
	one := func(off uint32) bnode {
		return and(o.linktype(et, 0), cmp(o.nl+off, 4, bpf.JumpEqual, addr, mask))
	}
	switch d {
	case dSrc:
		return one(src)
	case dDst:
		return one(dst)
	case dAnd:
		return and(one(src), one(dst))
	}
	return or(one(src), one(dst))
}

// host is "[p] [dir] host|net a": IPv4, or ARP and RARP too when no
// protocol is given.
func (o offs) host(addr, mask uint32, p proto, d dir, a addrKind, pos int) bnode {
	typ := "host"
	if a == aNet {
		typ = "net"
	}
	switch p {
	case pDefault:
		return or(or(o.host(addr, mask, pIP, d, a, pos), o.host(addr, mask, pARP, d, a, pos)), o.host(addr, mask, pRARP, d, a, pos))
	case pIP:
		return o.hostop(addr, mask, d, etIP, 12, 16)
	case pARP:
		return o.hostop(addr, mask, d, etARP, 14, 24)
	case pRARP:
		return o.hostop(addr, mask, d, etRARP, 14, 24)
	case pLink:
		panic(errAt(pos, "link-layer modifier applied to %s", typ))
	case pIP6:
		panic(errAt(pos, "'ip6' modifier applied to ip %s", typ))
	}
	panic(errAt(pos, "'%s' modifier applied to %s", protoNames[p], typ))
}

// host6 is "[ip6] [dir] host|net a/len".
func (o offs) host6(addr netip.Addr, bits int, p proto, d dir, a addrKind, pos int) bnode {
	typ := "host"
	if a == aNet {
		typ = "net"
	}
	switch p {
	case pDefault, pIP6:
	case pLink:
		panic(errAt(pos, "link-layer modifier applied to ip6 %s", typ))
	default:
		panic(errAt(pos, "'%s' modifier applied to ip6 %s", protoNames[p], typ))
	}
	a16 := addr.As16()
	one := func(off uint32) bnode {
		var b bnode = o.linktype(etIP6, 0)
		for w := range 4 {
			mask := wordMask(bits, w)
			if mask == 0 {
				continue // libpcap's optimiser drops "and #0" words, loads and all
			}
			v := uint32(a16[4*w])<<24 | uint32(a16[4*w+1])<<16 | uint32(a16[4*w+2])<<8 | uint32(a16[4*w+3])
			b = and(b, cmp(o.nl+off+uint32(4*w), 4, bpf.JumpEqual, v&mask, mask))
		}
		return b
	}
	switch d {
	case dSrc:
		return one(8)
	case dDst:
		return one(24)
	case dAnd:
		return and(one(8), one(24))
	}
	return or(one(8), one(24))
}

// wordMask is the w-th 32-bit word of a prefix mask of bits bits.
func wordMask(bits, w int) uint32 {
	n := bits - 32*w
	switch {
	case n <= 0:
		return 0
	case n >= 32:
		return 0xffffffff
	}
	return ^uint32(0) << (32 - n)
}

// ether is "ether [dir] host m": six bytes compared as a word and a half,
// the word first, as libpcap does.
func ether(mac net.HardwareAddr, d dir) bnode {
	one := func(off uint32) bnode {
		w := uint32(mac[2])<<24 | uint32(mac[3])<<16 | uint32(mac[4])<<8 | uint32(mac[5])
		h := uint32(mac[0])<<8 | uint32(mac[1])
		return and(eq(off+2, 4, w), eq(off, 2, h))
	}
	switch d {
	case dSrc:
		return one(6)
	case dDst:
		return one(0)
	case dAnd:
		return and(one(6), one(0))
	}
	return or(one(6), one(0))
}

var ipProtoNum = map[proto]uint32{pTCP: ipTCP, pUDP: ipUDP, pSCTP: ipSCTP}

// portProtos are the transport protocols a port qualifier means.
func portProtos(p proto, what string, pos int) []uint32 {
	switch p {
	case pDefault:
		return []uint32{ipSCTP, ipTCP, ipUDP} // libpcap's order
	case pTCP, pUDP, pSCTP:
		return []uint32{ipProtoNum[p]}
	}
	panic(errAt(pos, "illegal qualifier of '%s'", what))
}

// ports is "[tcp|udp|sctp] [dir] port|portrange lo[-hi]" over IPv6 then
// IPv4, as libpcap orders them. IPv4 ports are after the header IHL says
// and only in the first fragment; IPv6 ports right after the fixed header.
func (o offs) ports(lo, hi uint32, p proto, d dir, what string, pos int) bnode {
	if lo > hi {
		lo, hi = hi, lo
	}
	protos := portProtos(p, what, pos)
	atom := func(v4 bool, off uint32) bnode {
		field := func(cond bpf.JumpTest, k uint32) bnode {
			if v4 {
				return transport(o.nl, off, 2, cond, k)
			}
			return cmp(o.nl+40+off, 2, cond, k, 0xffffffff)
		}
		if what == "port" {
			return field(bpf.JumpEqual, lo)
		}
		return and(field(bpf.JumpGreaterOrEqual, lo), not(field(bpf.JumpGreaterThan, hi)))
	}
	dirs := func(v4 bool) bnode {
		switch d {
		case dSrc:
			return atom(v4, 0)
		case dDst:
			return atom(v4, 2)
		case dAnd:
			return and(atom(v4, 0), atom(v4, 2))
		}
		return or(atom(v4, 0), atom(v4, 2))
	}
	var v6, v4 bnode = bConst(false), bConst(false)
	for _, n := range protos {
		v6 = or(v6, and(eq(o.nl+6, 1, n), dirs(false)))
		v4 = or(v4, and(and(eq(o.nl+9, 1, n), o.fragOK()), dirs(true)))
	}
	return or(and(o.linktype(etIP6, 0), v6), and(o.linktype(etIP, 0), v4))
}

// vlan is "vlan [id]": a 802.1Q, 802.1ad or 0x9100 tag, with that VLAN ID.
func (o offs) vlan(id uint32, hasID bool) bnode {
	b := or(or(eq(o.lt, 2, etVLAN), eq(o.lt, 2, etQinQ)), eq(o.lt, 2, etQinQ9))
	if hasID {
		b = and(b, cmp(o.nl, 2, bpf.JumpEqual, id, 0x0fff))
	}
	return b
}

// load is proto[idx:size], with libpcap's conditions: the protocol, and for
// the transport protocols IPv4 and not a later fragment.
func (o offs) load(p proto, idx arth, size int, pos int) arth {
	switch p {
	case pLink:
		return arth{aLoad{ldLink, 0, size, idx.v}, idx.conds}
	case pIP, pIP6, pARP, pRARP:
		return arth{aLoad{ldNet, o.nl, size, idx.v}, and(idx.conds, o.abbrev(p, pos))}
	case pICMP6:
		return arth{aLoad{ldNet, o.nl + 40, size, idx.v}, and(and(idx.conds, o.linktype(etIP6, pos)), eq(o.nl+6, 1, ipICMP6))}
	case pTCP, pUDP, pSCTP, pICMP, pIGMP:
		n := map[proto]uint32{pTCP: ipTCP, pUDP: ipUDP, pSCTP: ipSCTP, pICMP: ipICMP, pIGMP: ipIGMP}[p]
		// libpcap: ip and (idx and ((ip proto n or ip6 proto n) and not a
		// later fragment)); given ip, the ip6 half never holds, and
		// libpcap's optimiser removes it.
		conds := and(o.linktype(etIP, pos), and(idx.conds, and(eq(o.nl+9, 1, n), o.fragOK())))
		return arth{aLoad{ldTrans, o.nl, size, idx.v}, conds}
	}
	panic(errAt(pos, "unsupported index operation"))
}
