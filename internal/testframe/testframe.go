// Package testframe builds the frames tests send: Ethernet, VLAN and QinQ
// tags, IPv4 (with options and fragments) and IPv6, TCP, UDP, ICMP and ARP,
// with github.com/google/gopacket so that the bytes are what a real stack
// would put on the wire.
package testframe

import (
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// Spec describes a test frame; Build turns it into bytes.
type Spec struct {
	V6       bool              // IPv6 instead of IPv4
	Proto    layers.IPProtocol // TCP, UDP, ICMPv4, ICMPv6 or any; 0 = UDP
	Src, Dst string            // addresses; defaults 10.0.0.1 -> 10.0.0.2 (2001:db8::1 -> ::2)
	SPort    uint16
	DPort    uint16
	VLAN     []uint16 // tags, outermost first
	QinQ     bool     // outer TPID 0x88a8
	IPOpts   bool     // IPv4 header with options
	FragOff  uint16   // IPv4 fragment offset (8-byte units)
	ICMPType uint8
	SrcMAC   net.HardwareAddr // default 02:00:00:00:00:0a
	DstMAC   net.HardwareAddr // default 02:00:00:00:00:0b
	Payload  []byte           // after the L4 header (at least 8 bytes are sent)
	TCPFlags string           // "S", "SA", ...
	Ether    layers.EthernetType
}

// Default addresses.
var (
	MACA = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0a}
	MACB = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0b}
)

// Build returns the frame's bytes, failing the test if it cannot be built.
func (p Spec) Build(t testing.TB) []byte {
	t.Helper()
	dst, srcMAC := p.DstMAC, p.SrcMAC
	if dst == nil {
		dst = MACB
	}
	if srcMAC == nil {
		srcMAC = MACA
	}
	eth := &layers.Ethernet{SrcMAC: srcMAC, DstMAC: dst}
	var ls []gopacket.SerializableLayer
	ls = append(ls, eth)
	inner := layers.EthernetTypeIPv4
	if p.V6 {
		inner = layers.EthernetTypeIPv6
	}
	if p.Ether != 0 {
		inner = p.Ether
	}
	next := &eth.EthernetType
	for i, id := range p.VLAN {
		if i == 0 && p.QinQ {
			*next = layers.EthernetTypeQinQ
		} else {
			*next = layers.EthernetTypeDot1Q
		}
		d := &layers.Dot1Q{VLANIdentifier: id, Priority: 5}
		ls = append(ls, d)
		next = &d.Type
	}
	*next = inner
	if p.Ether == layers.EthernetTypeARP {
		ls = append(ls, &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4,
			HwAddressSize: 6, ProtAddressSize: 4, Operation: 1,
			SourceHwAddress: srcMAC, SourceProtAddress: net.IP{10, 0, 0, 1}.To4(),
			DstHwAddress: make([]byte, 6), DstProtAddress: net.IP{10, 0, 0, 2}.To4()})
		return serialize(t, ls)
	}
	if p.Ether != 0 && p.Ether != layers.EthernetTypeIPv4 && p.Ether != layers.EthernetTypeIPv6 {
		ls = append(ls, gopacket.Payload(pad(p.Payload, 46)))
		return serialize(t, ls)
	}
	src, dsta := p.Src, p.Dst
	if src == "" {
		src = "10.0.0.1"
		if p.V6 {
			src = "2001:db8::1"
		}
	}
	if dsta == "" {
		dsta = "10.0.0.2"
		if p.V6 {
			dsta = "2001:db8::2"
		}
	}
	proto := p.Proto
	if proto == 0 {
		proto = layers.IPProtocolUDP
	}
	var nl gopacket.NetworkLayer
	if p.V6 {
		ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dsta)}
		ls = append(ls, ip)
		nl = ip
	} else {
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: proto, SrcIP: net.ParseIP(src).To4(), DstIP: net.ParseIP(dsta).To4(), FragOffset: p.FragOff}
		if p.IPOpts {
			ip.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
		}
		ls = append(ls, ip)
		nl = ip
	}
	switch proto {
	case layers.IPProtocolUDP:
		u := &layers.UDP{SrcPort: layers.UDPPort(p.SPort), DstPort: layers.UDPPort(p.DPort)}
		_ = u.SetNetworkLayerForChecksum(nl)
		ls = append(ls, u)
	case layers.IPProtocolTCP:
		tc := &layers.TCP{SrcPort: layers.TCPPort(p.SPort), DstPort: layers.TCPPort(p.DPort), Window: 1024, DataOffset: 5}
		for _, f := range p.TCPFlags {
			switch f {
			case 'S':
				tc.SYN = true
			case 'A':
				tc.ACK = true
			}
		}
		_ = tc.SetNetworkLayerForChecksum(nl)
		ls = append(ls, tc)
	case layers.IPProtocolICMPv4:
		ls = append(ls, &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(p.ICMPType, 0)})
	case layers.IPProtocolICMPv6:
		ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(p.ICMPType, 0)}
		_ = ic.SetNetworkLayerForChecksum(nl)
		ls = append(ls, ic)
	}
	ls = append(ls, gopacket.Payload(pad(p.Payload, 8)))
	return serialize(t, ls)
}

// pad returns b, zero-padded to at least n bytes.
func pad(b []byte, n int) []byte {
	if len(b) >= n {
		return b
	}
	return append(append([]byte(nil), b...), make([]byte, n-len(b))...)
}

func serialize(t testing.TB, ls []gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatalf("build frame: %v", err)
	}
	return buf.Bytes()
}
