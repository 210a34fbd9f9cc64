// Package bpfmatchtest is test support for filters: a corpus of varied
// Ethernet frames, the classic BPF reference VM with the one instruction it
// lacks filled in, and a rate-limited loader of kernel classifiers. The
// tests of bpfmatch and pcapfilter share it; it is not needed to use either.
package bpfmatchtest

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// Frame is one test frame.
type Frame struct {
	// Name says what the frame is ("v4 tcp 10.0.0.1:1000>192.0.2.1:22 S").
	Name string
	// Data is the frame, from the destination MAC on. It is shared: do
	// not modify it.
	Data []byte
}

// Addresses and ports the frames use, so that filters naming them match
// some frames and miss others.
var (
	MACs = []net.HardwareAddr{
		{0x02, 0, 0, 0, 0, 0x01},
		{0x02, 0, 0, 0, 0, 0x02},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb},
		{0x33, 0x33, 0x00, 0x00, 0x00, 0x01},
	}
	IPv4s = []net.IP{
		net.IPv4(10, 0, 0, 1).To4(), net.IPv4(10, 0, 0, 2).To4(),
		net.IPv4(192, 168, 1, 10).To4(), net.IPv4(192, 0, 2, 1).To4(),
		net.IPv4(198, 51, 100, 7).To4(), net.IPv4(224, 0, 0, 251).To4(),
		net.IPv4(255, 255, 255, 255).To4(),
	}
	IPv6s = []net.IP{
		net.ParseIP("2001:db8::1"), net.ParseIP("2001:db8:1::2"),
		net.ParseIP("fe80::1"), net.ParseIP("ff02::1"), net.ParseIP("::1"),
	}
	Ports = []uint16{22, 53, 80, 443, 1000, 1500, 2000, 4789, 8080, 65535, 0}
)

var (
	framesOnce sync.Once
	frames     []Frame
)

// Frames returns the corpus: about five hundred frames built with gopacket
// (IPv4 with and without options, first and later fragments, TCP with each
// flag combination people filter on, UDP, ICMP, SCTP, IGMP, GRE, VXLAN,
// IPv6 with and without fragment and hop-by-hop headers, ICMPv6, ARP, RARP,
// LLC, 802.1Q, 802.1ad and QinQ tags, broadcast and multicast), every one
// of a representative set truncated to each length from 14 to 60 bytes,
// and seeded random and mutated frames. It is the same on every call.
func Frames() []Frame {
	framesOnce.Do(func() { frames = buildFrames() })
	return frames
}

// Serialize builds a frame from layers, fixing lengths and checksums.
func Serialize(ls ...gopacket.SerializableLayer) []byte {
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		panic(fmt.Sprintf("bpfmatchtest: serialize: %v", err)) // a bug in this file
	}
	return append([]byte(nil), buf.Bytes()...)
}

// l2 is the Ethernet header and tags in front of an L3 packet.
type l2 struct {
	src, dst net.HardwareAddr
	tags     []tag // outermost first
}

type tag struct {
	tpid uint16
	vid  uint16
	prio uint8
}

func (h l2) layers(et layers.EthernetType) []gopacket.SerializableLayer {
	if len(h.tags) == 0 {
		return []gopacket.SerializableLayer{&layers.Ethernet{SrcMAC: h.src, DstMAC: h.dst, EthernetType: et}}
	}
	// Tags are written by hand: gopacket's Dot1Q cannot say 0x88a8 or
	// 0x9100 for the inner type.
	raw := make([]byte, 0, 4*len(h.tags))
	for i, t := range h.tags {
		next := uint16(et)
		if i+1 < len(h.tags) {
			next = h.tags[i+1].tpid
		}
		raw = binary.BigEndian.AppendUint16(raw, uint16(t.prio)<<13|t.vid&0x0fff)
		raw = binary.BigEndian.AppendUint16(raw, next)
	}
	return []gopacket.SerializableLayer{
		&layers.Ethernet{SrcMAC: h.src, DstMAC: h.dst, EthernetType: layers.EthernetType(h.tags[0].tpid)},
		rawLayer(raw),
	}
}

// rawLayer is bytes prepended as they are (gopacket.Payload appends, which
// breaks FixLengths of the layers after it).
type rawLayer []byte

func (r rawLayer) SerializeTo(b gopacket.SerializeBuffer, _ gopacket.SerializeOptions) error {
	p, err := b.PrependBytes(len(r))
	if err != nil {
		return err
	}
	copy(p, r)
	return nil
}

func (r rawLayer) LayerType() gopacket.LayerType { return gopacket.LayerTypePayload }

type builder struct {
	out []Frame
	rng *rand.Rand
}

func (b *builder) add(name string, data []byte) {
	b.out = append(b.out, Frame{Name: name, Data: data})
}

func plain() l2 { return l2{src: MACs[0], dst: MACs[1]} }

// tcpFlags are the flag sets frames carry: FIN, SYN, RST, PSH, ACK, URG.
var tcpFlags = []struct {
	name                         string
	fin, syn, rst, psh, ack, urg bool
	ece, cwr                     bool
}{
	{name: "S", syn: true}, {name: "SA", syn: true, ack: true}, {name: "A", ack: true},
	{name: "FA", fin: true, ack: true}, {name: "RA", rst: true, ack: true},
	{name: "PA", psh: true, ack: true}, {name: "U", urg: true, ack: true},
	{name: "SEC", syn: true, ece: true, cwr: true}, {name: "none"},
}

func tcpLayer(sport, dport uint16, f int) *layers.TCP {
	fl := tcpFlags[f%len(tcpFlags)]
	return &layers.TCP{
		SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport),
		Seq: 1, Ack: 2, Window: 1024, DataOffset: 5,
		FIN: fl.fin, SYN: fl.syn, RST: fl.rst, PSH: fl.psh, ACK: fl.ack, URG: fl.urg, ECE: fl.ece, CWR: fl.cwr,
	}
}

// v4 describes an IPv4 frame; payload is what follows the header, already
// serialized (so that fragments and options can carry anything).
type v4 struct {
	h        l2
	src, dst net.IP
	proto    layers.IPProtocol
	optWords int // 32-bit words of options (IHL = 5 + optWords)
	flags    layers.IPv4Flag
	fragOff  uint16 // in 8-byte units
	ihlRaw   int    // if nonzero, the IHL nibble is forced to this (bogus headers)
	payload  []byte
}

func (p v4) bytes() []byte {
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: p.proto, SrcIP: p.src, DstIP: p.dst, Flags: p.flags, FragOffset: p.fragOff, Id: 7}
	for range p.optWords * 4 {
		ip.Options = append(ip.Options, layers.IPv4Option{OptionType: 1}) // NOP
	}
	ls := append(p.h.layers(layers.EthernetTypeIPv4), ip, gopacket.Payload(p.payload))
	data := Serialize(ls...)
	if p.ihlRaw != 0 {
		off := 14 + 4*len(p.h.tags)
		data[off] = 0x40 | byte(p.ihlRaw&0xf)
	}
	return data
}

// l4v4 and l4v6 serialize a transport header, with its checksum over IPv4
// or IPv6.
func l4v4(src, dst net.IP, ls ...gopacket.SerializableLayer) []byte {
	ip := &layers.IPv4{Version: 4, SrcIP: src, DstIP: dst}
	for _, l := range ls {
		switch l := l.(type) {
		case *layers.TCP:
			_ = l.SetNetworkLayerForChecksum(ip)
			ip.Protocol = layers.IPProtocolTCP
		case *layers.UDP:
			_ = l.SetNetworkLayerForChecksum(ip)
			ip.Protocol = layers.IPProtocolUDP
		}
	}
	return Serialize(ls...)
}

func l4v6(src, dst net.IP, ls ...gopacket.SerializableLayer) []byte {
	ip := &layers.IPv6{Version: 6, SrcIP: src, DstIP: dst}
	for _, l := range ls {
		switch l := l.(type) {
		case *layers.TCP:
			_ = l.SetNetworkLayerForChecksum(ip)
		case *layers.UDP:
			_ = l.SetNetworkLayerForChecksum(ip)
		case *layers.ICMPv6:
			_ = l.SetNetworkLayerForChecksum(ip)
		}
	}
	return Serialize(ls...)
}

func udpLayer(sport, dport uint16) *layers.UDP {
	return &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
}

// sctpBytes is an SCTP common header (ports, tag, checksum) and a DATA chunk.
func sctpBytes(sport, dport uint16) []byte {
	b := binary.BigEndian.AppendUint16(nil, sport)
	b = binary.BigEndian.AppendUint16(b, dport)
	b = append(b, 0, 0, 0, 1, 0, 0, 0, 0)
	return append(b, 0, 0, 0, 8, 'd', 'a', 't', 'a')
}

func v6frame(h l2, src, dst net.IP, next layers.IPProtocol, payload []byte) []byte {
	ls := append(h.layers(layers.EthernetTypeIPv6),
		&layers.IPv6{Version: 6, HopLimit: 64, NextHeader: next, SrcIP: src, DstIP: dst},
		gopacket.Payload(payload))
	return Serialize(ls...)
}

func arpFrame(h l2, et layers.EthernetType, op uint16, spa, tpa net.IP) []byte {
	ls := append(h.layers(et), &layers.ARP{
		AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4,
		HwAddressSize: 6, ProtAddressSize: 4, Operation: op,
		SourceHwAddress: MACs[0], SourceProtAddress: spa,
		DstHwAddress: []byte{0, 0, 0, 0, 0, 0}, DstProtAddress: tpa,
	})
	return Serialize(ls...)
}

func buildFrames() []Frame {
	b := &builder{rng: rand.New(rand.NewPCG(0x5eed, 0xb9f))}
	b.ipv4()
	b.ipv6()
	b.others()
	b.tagged()
	b.runts()
	b.random()
	return b.out
}

func (b *builder) ipv4() {
	h := plain()
	// TCP: every flag set, a spread of ports and addresses.
	for i, pp := range [][2]uint16{{1000, 22}, {22, 1000}, {443, 2000}, {2000, 80}, {8080, 53}, {65535, 1500}, {0, 0}, {53, 53}} {
		src, dst := IPv4s[i%4], IPv4s[(i+1)%5]
		for f := range tcpFlags {
			if f > 2 && i > 2 {
				break
			}
			tcp := tcpLayer(pp[0], pp[1], f)
			b.add(fmt.Sprintf("v4 tcp %v:%d>%v:%d %s", src, pp[0], dst, pp[1], tcpFlags[f].name),
				v4{h: h, src: src, dst: dst, proto: layers.IPProtocolTCP, flags: layers.IPv4DontFragment, payload: l4v4(src, dst, tcp, gopacket.Payload("hello"))}.bytes())
		}
	}
	// UDP, including DNS-ish, VXLAN and edge ports.
	for i, pp := range [][2]uint16{{1000, 53}, {53, 1000}, {4789, 4789}, {2000, 1500}, {1499, 2001}, {123, 123}, {65535, 0}, {5000, 443}} {
		src, dst := IPv4s[(i+2)%5], IPv4s[i%7]
		b.add(fmt.Sprintf("v4 udp %v:%d>%v:%d", src, pp[0], dst, pp[1]),
			v4{h: h, src: src, dst: dst, proto: layers.IPProtocolUDP, payload: l4v4(src, dst, udpLayer(pp[0], pp[1]), gopacket.Payload("0123456789abcdef"))}.bytes())
	}
	// VXLAN with an inner frame: the VNI filters of the intent tests.
	for _, vni := range []uint32{42, 4242, 0xabcdef} {
		innerIP := &layers.IPv4{Version: 4, TTL: 9, Protocol: layers.IPProtocolUDP, SrcIP: IPv4s[3], DstIP: IPv4s[4]}
		innerUDP := udpLayer(7, 8)
		_ = innerUDP.SetNetworkLayerForChecksum(innerIP)
		inner := Serialize(&layers.Ethernet{SrcMAC: MACs[1], DstMAC: MACs[0], EthernetType: layers.EthernetTypeIPv4},
			innerIP, innerUDP, gopacket.Payload("in"))
		vx := append([]byte{0x08, 0, 0, 0}, byte(vni>>16), byte(vni>>8), byte(vni), 0)
		b.add(fmt.Sprintf("v4 vxlan vni %d", vni),
			v4{h: h, src: IPv4s[0], dst: IPv4s[1], proto: layers.IPProtocolUDP, payload: l4v4(IPv4s[0], IPv4s[1], udpLayer(30000, 4789), gopacket.Payload(append(vx, inner...)))}.bytes())
	}
	// ICMP.
	for _, tc := range []struct {
		name string
		t, c uint8
	}{{"echo", 8, 0}, {"echoreply", 0, 0}, {"unreach", 3, 3}, {"timxceed", 11, 0}} {
		icmp := Serialize(&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(tc.t, tc.c), Id: 1, Seq: 2}, gopacket.Payload("ping"))
		b.add("v4 icmp "+tc.name, v4{h: h, src: IPv4s[0], dst: IPv4s[3], proto: layers.IPProtocolICMPv4, payload: icmp}.bytes())
	}
	// SCTP, IGMP, GRE, and an unassigned protocol.
	b.add("v4 sctp 1000>53", v4{h: h, src: IPv4s[1], dst: IPv4s[2], proto: layers.IPProtocolSCTP, payload: sctpBytes(1000, 53)}.bytes())
	b.add("v4 sctp 80>2000", v4{h: h, src: IPv4s[2], dst: IPv4s[1], proto: layers.IPProtocolSCTP, payload: sctpBytes(80, 2000)}.bytes())
	b.add("v4 igmp", v4{h: l2{src: MACs[0], dst: MACs[3]}, src: IPv4s[0], dst: IPv4s[5], proto: layers.IPProtocolIGMP, payload: []byte{0x16, 0, 0, 0, 224, 0, 0, 251}}.bytes())
	b.add("v4 gre", v4{h: h, src: IPv4s[3], dst: IPv4s[4], proto: layers.IPProtocolGRE, payload: []byte{0, 0, 0x08, 0, 0x45, 0, 0, 20}}.bytes())
	b.add("v4 proto 253", v4{h: h, src: IPv4s[4], dst: IPv4s[3], proto: 253, payload: []byte("experimental")}.bytes())
	// Options: the L4 header moves; fixed-offset filters go wrong.
	for _, words := range []int{1, 3, 10} {
		src, dst := IPv4s[0], IPv4s[3]
		b.add(fmt.Sprintf("v4 options %d words tcp 1000>22 S", words),
			v4{h: h, src: src, dst: dst, proto: layers.IPProtocolTCP, optWords: words, payload: l4v4(src, dst, tcpLayer(1000, 22, 0))}.bytes())
		b.add(fmt.Sprintf("v4 options %d words udp 1000>53", words),
			v4{h: h, src: src, dst: dst, proto: layers.IPProtocolUDP, optWords: words, payload: l4v4(src, dst, udpLayer(1000, 53))}.bytes())
	}
	// Fragments: a first fragment has the L4 header, a later one does not
	// (its payload happens to look like ports 22 and 53).
	fake := []byte{0, 22, 0, 53, 0, 22, 0, 53, 1, 2, 3, 4, 5, 6, 7, 8, 0x50, 0x02, 0, 0}
	b.add("v4 first fragment tcp 1000>22", v4{h: h, src: IPv4s[0], dst: IPv4s[3], proto: layers.IPProtocolTCP, flags: layers.IPv4MoreFragments, payload: l4v4(IPv4s[0], IPv4s[3], tcpLayer(1000, 22, 0))}.bytes())
	b.add("v4 later fragment tcp", v4{h: h, src: IPv4s[0], dst: IPv4s[3], proto: layers.IPProtocolTCP, fragOff: 100, payload: fake}.bytes())
	b.add("v4 later fragment udp", v4{h: h, src: IPv4s[0], dst: IPv4s[3], proto: layers.IPProtocolUDP, flags: layers.IPv4MoreFragments, fragOff: 1, payload: fake}.bytes())
	b.add("v4 last fragment udp", v4{h: h, src: IPv4s[1], dst: IPv4s[2], proto: layers.IPProtocolUDP, fragOff: 0x1fff, payload: fake}.bytes())
	// Bogus header lengths.
	for _, ihl := range []int{0, 1, 4, 15} {
		b.add(fmt.Sprintf("v4 bogus ihl %d udp", ihl), v4{h: h, src: IPv4s[0], dst: IPv4s[1], proto: layers.IPProtocolUDP, ihlRaw: ihl, payload: l4v4(IPv4s[0], IPv4s[1], udpLayer(53, 53), gopacket.Payload(make([]byte, 60)))}.bytes())
	}
	// Broadcast and multicast destinations.
	b.add("v4 udp broadcast", v4{h: l2{src: MACs[0], dst: MACs[2]}, src: IPv4s[2], dst: IPv4s[6], proto: layers.IPProtocolUDP, payload: l4v4(IPv4s[2], IPv4s[6], udpLayer(68, 67))}.bytes())
	b.add("v4 udp mdns", v4{h: l2{src: MACs[0], dst: MACs[3]}, src: IPv4s[2], dst: IPv4s[5], proto: layers.IPProtocolUDP, payload: l4v4(IPv4s[2], IPv4s[5], udpLayer(5353, 5353))}.bytes())
}

func (b *builder) ipv6() {
	h := plain()
	for i, pp := range [][2]uint16{{1000, 22}, {443, 2000}, {2000, 80}, {53, 1000}, {2000, 443}} {
		src, dst := IPv6s[i%3], IPv6s[(i+1)%3]
		for f := range 3 {
			b.add(fmt.Sprintf("v6 tcp %v:%d>%v:%d %s", src, pp[0], dst, pp[1], tcpFlags[f].name),
				v6frame(h, src, dst, layers.IPProtocolTCP, l4v6(src, dst, tcpLayer(pp[0], pp[1], f), gopacket.Payload("v6"))))
		}
		b.add(fmt.Sprintf("v6 udp %v:%d>%v:%d", src, pp[1], dst, pp[0]),
			v6frame(h, src, dst, layers.IPProtocolUDP, l4v6(src, dst, udpLayer(pp[1], pp[0]), gopacket.Payload("v6 udp"))))
	}
	b.add("v6 sctp 1000>53", v6frame(h, IPv6s[0], IPv6s[1], layers.IPProtocolSCTP, sctpBytes(1000, 53)))
	for _, tc := range []struct {
		name string
		t    uint8
	}{{"echo", 128}, {"echoreply", 129}, {"ns", 135}, {"ra", 134}} {
		dst := IPv6s[1]
		if tc.t >= 133 {
			dst = IPv6s[3]
		}
		icmp := l4v6(IPv6s[2], dst, &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(tc.t, 0)}, gopacket.Payload([]byte{0, 1, 0, 2}))
		hh := h
		if tc.t >= 133 {
			hh = l2{src: MACs[0], dst: MACs[4]}
		}
		b.add("v6 icmp6 "+tc.name, v6frame(hh, IPv6s[2], dst, layers.IPProtocolICMPv6, icmp))
	}
	// A fragment header in front of UDP, TCP and ICMPv6 (libpcap's
	// "ip6 proto" looks one header deep for it).
	for _, tc := range []struct {
		name  string
		proto layers.IPProtocol
		l4    []byte
	}{
		{"udp 1000>53", layers.IPProtocolUDP, l4v6(IPv6s[0], IPv6s[1], udpLayer(1000, 53))},
		{"tcp 1000>22", layers.IPProtocolTCP, l4v6(IPv6s[0], IPv6s[1], tcpLayer(1000, 22, 0))},
		{"icmp6 echo", layers.IPProtocolICMPv6, l4v6(IPv6s[0], IPv6s[1], &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(128, 0)})},
	} {
		frag := append([]byte{byte(tc.proto), 0, 0, 1, 0, 0, 0, 9}, tc.l4...)
		b.add("v6 fragment header "+tc.name, v6frame(h, IPv6s[0], IPv6s[1], layers.IPProtocolIPv6Fragment, frag))
	}
	hbh := append([]byte{byte(layers.IPProtocolUDP), 0, 1, 4, 0, 0, 0, 0}, l4v6(IPv6s[1], IPv6s[0], udpLayer(53, 1000))...)
	b.add("v6 hop-by-hop udp 53>1000", v6frame(h, IPv6s[1], IPv6s[0], layers.IPProtocolIPv6HopByHop, hbh))
	b.add("v6 loopback udp 80>80", v6frame(h, IPv6s[4], IPv6s[4], layers.IPProtocolUDP, l4v6(IPv6s[4], IPv6s[4], udpLayer(80, 80))))
	b.add("v6 multicast udp", v6frame(l2{src: MACs[0], dst: MACs[4]}, IPv6s[2], IPv6s[3], layers.IPProtocolUDP, l4v6(IPv6s[2], IPv6s[3], udpLayer(546, 547))))
}

func (b *builder) others() {
	h := plain()
	bh := l2{src: MACs[0], dst: MACs[2]}
	b.add("arp request", arpFrame(bh, layers.EthernetTypeARP, 1, IPv4s[0], IPv4s[1]))
	b.add("arp reply", arpFrame(h, layers.EthernetTypeARP, 2, IPv4s[1], IPv4s[0]))
	b.add("arp request 192.0.2.1", arpFrame(bh, layers.EthernetTypeARP, 1, IPv4s[3], IPv4s[2]))
	b.add("rarp request", arpFrame(bh, 0x8035, 3, IPv4s[2], IPv4s[3]))
	// 802.3 frames: a length where the EtherType would be, then LLC.
	for _, sap := range []byte{0x42, 0x06, 0xaa, 0xe0, 0xfe} {
		llc := []byte{sap, sap, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
		data := Serialize(&layers.Ethernet{SrcMAC: MACs[0], DstMAC: MACs[3], EthernetType: layers.EthernetType(len(llc))}, gopacket.Payload(llc))
		b.add(fmt.Sprintf("802.3 llc sap %#02x", sap), data)
	}
	b.add("lldp", Serialize(&layers.Ethernet{SrcMAC: MACs[0], DstMAC: net.HardwareAddr{0x01, 0x80, 0xc2, 0, 0, 0x0e}, EthernetType: 0x88cc}, gopacket.Payload(make([]byte, 46))))
	b.add("loopback 0x9000", Serialize(&layers.Ethernet{SrcMAC: MACs[1], DstMAC: MACs[1], EthernetType: 0x9000}, gopacket.Payload(make([]byte, 46))))
	b.add("ethertype 0x88b5", Serialize(&layers.Ethernet{SrcMAC: MACs[1], DstMAC: MACs[0], EthernetType: 0x88b5}, gopacket.Payload([]byte("local experimental ethertype 1"))))
}

func (b *builder) tagged() {
	for _, tags := range [][]tag{
		{{0x8100, 100, 0}}, {{0x8100, 10, 5}}, {{0x8100, 4095, 0}}, {{0x8100, 0, 3}},
		{{0x88a8, 100, 0}}, {{0x9100, 200, 0}},
		{{0x88a8, 100, 0}, {0x8100, 10, 0}}, {{0x8100, 5, 0}, {0x8100, 100, 0}},
	} {
		h := l2{src: MACs[0], dst: MACs[1], tags: tags}
		name := "vlan"
		for _, t := range tags {
			name += fmt.Sprintf(" %#04x/%d", t.tpid, t.vid)
		}
		src, dst := IPv4s[0], IPv4s[3]
		b.add(name+" v4 tcp 1000>22 S", v4{h: h, src: src, dst: dst, proto: layers.IPProtocolTCP, payload: l4v4(src, dst, tcpLayer(1000, 22, 0))}.bytes())
		b.add(name+" v4 udp 1000>53", v4{h: h, src: dst, dst: src, proto: layers.IPProtocolUDP, payload: l4v4(dst, src, udpLayer(1000, 53))}.bytes())
		b.add(name+" v6 udp 53>1000", v6frame(h, IPv6s[0], IPv6s[1], layers.IPProtocolUDP, l4v6(IPv6s[0], IPv6s[1], udpLayer(53, 1000))))
		if len(tags) == 1 {
			b.add(name+" v4 options udp 1000>53", v4{h: h, src: src, dst: dst, proto: layers.IPProtocolUDP, optWords: 2, payload: l4v4(src, dst, udpLayer(1000, 53))}.bytes())
			b.add(name+" arp", arpFrame(l2{src: MACs[0], dst: MACs[2], tags: tags}, layers.EthernetTypeARP, 1, IPv4s[0], IPv4s[1]))
		}
	}
}

// runts truncates representative frames to every length from 14 to 60:
// loads past the end must fail the same way everywhere.
func (b *builder) runts() {
	picks := map[string]bool{
		"v4 tcp 10.0.0.1:1000>10.0.0.2:22 S": true, "v4 udp 192.0.2.1:1000>10.0.0.1:53": true,
		"v6 tcp 2001:db8::1:1000>2001:db8:1::2:22 S": true, "arp request": true,
		"vlan 0x8100/100 v4 udp 1000>53": true, "v4 options 3 words udp 1000>53": true,
		"v6 fragment header udp 1000>53": true, "vlan 0x88a8/100 0x8100/10 v4 tcp 1000>22 S": true,
	}
	var base []Frame
	for _, f := range b.out {
		if picks[f.Name] {
			base = append(base, f)
		}
	}
	for _, f := range base {
		for n := 14; n <= 60 && n < len(f.Data); n++ {
			if n > 24 && n%2 == 1 && n < 54 {
				continue // every length near the headers, every other one later
			}
			b.add(fmt.Sprintf("runt %d of %s", n, f.Name), f.Data[:n:n])
		}
	}
}

// random adds seeded random frames: real frames with a byte changed, and
// bytes after an interesting EtherType.
func (b *builder) random() {
	n := len(b.out)
	for i := range 60 {
		f := b.out[b.rng.IntN(n)]
		d := append([]byte(nil), f.Data...)
		pos := 12 + b.rng.IntN(len(d)-12)
		d[pos] ^= byte(1 + b.rng.IntN(255))
		b.add(fmt.Sprintf("mutant %d of %s (byte %d)", i, f.Name, pos), d)
	}
	ets := []uint16{0x0800, 0x86dd, 0x0806, 0x8035, 0x8100, 0x88a8, 0x9100, 0x0010, 0x05dc, 0x05dd}
	for i := range 40 {
		d := make([]byte, 14+b.rng.IntN(90))
		for j := range d {
			d[j] = byte(b.rng.Uint32())
		}
		binary.BigEndian.PutUint16(d[12:], ets[i%len(ets)])
		if i%3 == 0 && len(d) > 24 {
			d[14] = 0x45
			d[23] = []byte{6, 17, 1, 132}[i%4]
			d[20], d[21] = 0, 0
		}
		b.add(fmt.Sprintf("random %d", i), d)
	}
}
