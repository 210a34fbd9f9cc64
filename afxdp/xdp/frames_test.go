package xdp

import (
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// pkt describes a test frame; build turns it into bytes with gopacket.
type pkt struct {
	v6       bool
	proto    layers.IPProtocol // TCP, UDP, ICMPv4 or ICMPv6; 0 = UDP
	src, dst string
	sport    uint16
	dport    uint16
	vlan     []uint16 // tags, outermost first
	qinq     bool     // outer TPID 0x88a8
	ipOpts   bool     // IPv4 header with options
	fragOff  uint16   // IPv4 fragment offset (8-byte units)
	icmpType uint8
	dstMAC   net.HardwareAddr
	payload  int
	tcpFlags string // "S", "SA", ...
	ether    layers.EthernetType
}

var (
	macA = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0a}
	macB = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0b}
)

func (p pkt) build(t testing.TB) []byte {
	t.Helper()
	dst := p.dstMAC
	if dst == nil {
		dst = macB
	}
	eth := &layers.Ethernet{SrcMAC: macA, DstMAC: dst}
	var ls []gopacket.SerializableLayer
	ls = append(ls, eth)
	inner := layers.EthernetTypeIPv4
	if p.v6 {
		inner = layers.EthernetTypeIPv6
	}
	if p.ether != 0 {
		inner = p.ether
	}
	next := &eth.EthernetType
	for i, id := range p.vlan {
		if i == 0 && p.qinq {
			*next = layers.EthernetTypeQinQ
		} else {
			*next = layers.EthernetTypeDot1Q
		}
		d := &layers.Dot1Q{VLANIdentifier: id, Priority: 5}
		ls = append(ls, d)
		next = &d.Type
	}
	*next = inner
	if p.ether == layers.EthernetTypeARP {
		ls = append(ls, &layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4,
			HwAddressSize: 6, ProtAddressSize: 4, Operation: 1,
			SourceHwAddress: macA, SourceProtAddress: net.IP{10, 0, 0, 1}.To4(),
			DstHwAddress: make([]byte, 6), DstProtAddress: net.IP{10, 0, 0, 2}.To4()})
		return serialize(t, ls)
	}
	if p.ether != 0 && p.ether != layers.EthernetTypeIPv4 && p.ether != layers.EthernetTypeIPv6 {
		ls = append(ls, gopacket.Payload(make([]byte, 46)))
		return serialize(t, ls)
	}
	src, dsta := p.src, p.dst
	if src == "" {
		src, dsta = "10.0.0.1", "10.0.0.2"
		if p.v6 {
			src, dsta = "2001:db8::1", "2001:db8::2"
		}
	}
	proto := p.proto
	if proto == 0 {
		proto = layers.IPProtocolUDP
	}
	var nl gopacket.NetworkLayer
	if p.v6 {
		ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto, SrcIP: net.ParseIP(src), DstIP: net.ParseIP(dsta)}
		ls = append(ls, ip)
		nl = ip
	} else {
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: proto, SrcIP: net.ParseIP(src).To4(), DstIP: net.ParseIP(dsta).To4(), FragOffset: p.fragOff}
		if p.ipOpts {
			ip.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
		}
		ls = append(ls, ip)
		nl = ip
	}
	switch proto {
	case layers.IPProtocolUDP:
		u := &layers.UDP{SrcPort: layers.UDPPort(p.sport), DstPort: layers.UDPPort(p.dport)}
		_ = u.SetNetworkLayerForChecksum(nl)
		ls = append(ls, u)
	case layers.IPProtocolTCP:
		tc := &layers.TCP{SrcPort: layers.TCPPort(p.sport), DstPort: layers.TCPPort(p.dport), Window: 1024, DataOffset: 5}
		for _, f := range p.tcpFlags {
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
		ls = append(ls, &layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(p.icmpType, 0)})
	case layers.IPProtocolICMPv6:
		ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(p.icmpType, 0)}
		_ = ic.SetNetworkLayerForChecksum(nl)
		ls = append(ls, ic)
	}
	ls = append(ls, gopacket.Payload(make([]byte, max(p.payload, 8))))
	return serialize(t, ls)
}

func serialize(t testing.TB, ls []gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatalf("build frame: %v", err)
	}
	return buf.Bytes()
}
