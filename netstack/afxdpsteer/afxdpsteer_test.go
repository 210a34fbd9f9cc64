package afxdpsteer

import (
	"net"
	"net/netip"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/testenv"
)

var (
	stack4  = netip.MustParseAddr("10.9.0.3")
	stack6  = netip.MustParseAddr("fd09::3")
	kernel4 = netip.MustParseAddr("10.9.0.1")  // the interface's own address
	kernel6 = netip.MustParseAddr("fd09::1")   // another host's, sharing all but the last byte with stack6
	peer4   = netip.MustParseAddr("10.9.0.2")  // a host the stack dials
	other4  = netip.MustParseAddr("10.9.0.77") // a host it does not
	peer6   = netip.MustParseAddr("fd09::2")

	macA = net.HardwareAddr{0x02, 0, 0, 0, 0, 0xa}
	macB = net.HardwareAddr{0x02, 0, 0, 0, 0, 0xb}
)

var traffic = Traffic{
	Addrs:    []netip.Addr{stack4, stack6},
	TCPPorts: []uint16{7, 8080},
	TCPPeers: []netip.AddrPort{netip.AddrPortFrom(peer4, 9000), netip.AddrPortFrom(peer6, 9000)},
	UDPPorts: []uint16{53},
}

func serialize(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	for len(b) < 60 {
		b = append(b, 0)
	}
	return b
}

func eth(t layers.EthernetType, dst net.HardwareAddr) *layers.Ethernet {
	return &layers.Ethernet{SrcMAC: macB, DstMAC: dst, EthernetType: t}
}

func ip4(src, dst netip.Addr, p layers.IPProtocol) *layers.IPv4 {
	return &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: p, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
}

func ip6(src, dst netip.Addr, p layers.IPProtocol) *layers.IPv6 {
	return &layers.IPv6{Version: 6, HopLimit: 255, NextHeader: p, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
}

func tcp4(t *testing.T, src, dst netip.AddrPort) []byte {
	ip := ip4(src.Addr(), dst.Addr(), layers.IPProtocolTCP)
	tc := &layers.TCP{SrcPort: layers.TCPPort(src.Port()), DstPort: layers.TCPPort(dst.Port()), SYN: true, Window: 1000}
	tc.SetNetworkLayerForChecksum(ip)
	return serialize(t, eth(layers.EthernetTypeIPv4, macA), ip, tc)
}

func tcp6(t *testing.T, src, dst netip.AddrPort) []byte {
	ip := ip6(src.Addr(), dst.Addr(), layers.IPProtocolTCP)
	tc := &layers.TCP{SrcPort: layers.TCPPort(src.Port()), DstPort: layers.TCPPort(dst.Port()), SYN: true, Window: 1000}
	tc.SetNetworkLayerForChecksum(ip)
	return serialize(t, eth(layers.EthernetTypeIPv6, macA), ip, tc)
}

func udp4(t *testing.T, src, dst netip.AddrPort) []byte {
	ip := ip4(src.Addr(), dst.Addr(), layers.IPProtocolUDP)
	u := &layers.UDP{SrcPort: layers.UDPPort(src.Port()), DstPort: layers.UDPPort(dst.Port())}
	u.SetNetworkLayerForChecksum(ip)
	return serialize(t, eth(layers.EthernetTypeIPv4, macA), ip, u, gopacket.Payload("query"))
}

func arp(t *testing.T, op uint16, sender, target netip.Addr, vlan bool) []byte {
	a := &layers.ARP{
		AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
		Operation: op, SourceHwAddress: macB, SourceProtAddress: sender.AsSlice(),
		DstHwAddress: make(net.HardwareAddr, 6), DstProtAddress: target.AsSlice(),
	}
	bcast := net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	if vlan {
		return serialize(t, eth(layers.EthernetTypeDot1Q, bcast), &layers.Dot1Q{VLANIdentifier: 5, Type: layers.EthernetTypeARP}, a)
	}
	return serialize(t, eth(layers.EthernetTypeARP, bcast), a)
}

// icmp6 builds an ICMPv6 message of type typ from src to dst about target.
func icmp6(t *testing.T, typ uint8, src, dst, target netip.Addr) []byte {
	ip := ip6(src, dst, layers.IPProtocolICMPv6)
	ic := &layers.ICMPv6{TypeCode: layers.CreateICMPv6TypeCode(typ, 0)}
	ic.SetNetworkLayerForChecksum(ip)
	var body gopacket.SerializableLayer
	switch typ {
	case layers.ICMPv6TypeNeighborSolicitation:
		body = &layers.ICMPv6NeighborSolicitation{TargetAddress: target.AsSlice()}
	case layers.ICMPv6TypeNeighborAdvertisement:
		body = &layers.ICMPv6NeighborAdvertisement{TargetAddress: target.AsSlice(), Flags: 0x60}
	default:
		body = gopacket.Payload(make([]byte, 8))
	}
	mac := macA
	if dst.IsMulticast() {
		b := dst.As16()
		mac = net.HardwareAddr{0x33, 0x33, b[12], b[13], b[14], b[15]}
	}
	return serialize(t, eth(layers.EthernetTypeIPv6, mac), ip, ic, body)
}

func solicited(a netip.Addr) netip.Addr {
	b := a.As16()
	return netip.AddrFrom16([16]byte{0xff, 0x02, 11: 1, 12: 0xff, 13: b[13], 14: b[14], 15: b[15]})
}

// steerCase is a frame and whether the steering takes it.
type steerCase struct {
	name  string
	frame []byte
	want  bool
}

// checkSteering loads ms as the program's filter and runs every frame
// through it in the kernel.
func checkSteering(t *testing.T, ms []filter.Match, cases []steerCase) {
	t.Helper()
	c, err := filter.NewClassifier(filter.Program{Matches: ms})
	if err != nil {
		t.Fatalf("load the steering: %v", err)
	}
	defer c.Close()
	for _, tc := range cases {
		got, err := c.Match(tc.frame)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("%s: taken %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The kernel runs the steering over frames of every kind the link carries:
// the stack gets its ports, its peers' replies and its own address
// resolution, and the kernel keeps everything else, its own ARP included.
func TestSteering(t *testing.T) {
	testenv.NeedBPF(t)
	ms, err := traffic.Matches()
	if err != nil {
		t.Fatal(err)
	}
	ap := netip.AddrPortFrom
	checkSteering(t, ms, []steerCase{
		{"tcp to a listening port", tcp4(t, ap(peer4, 40000), ap(stack4, 7)), true},
		{"tcp to the other listening port", tcp4(t, ap(other4, 40000), ap(stack4, 8080)), true},
		{"tcp6 to a listening port", tcp6(t, ap(peer6, 40000), ap(stack6, 7)), true},
		{"tcp to a port not listened on", tcp4(t, ap(peer4, 40000), ap(stack4, 9)), false},
		{"tcp to the port on the kernel's address", tcp4(t, ap(peer4, 40000), ap(kernel4, 7)), false},
		{"tcp6 to the port on another address", tcp6(t, ap(peer6, 40000), ap(kernel6, 7)), false},
		{"tcp from a dialled peer", tcp4(t, ap(peer4, 9000), ap(stack4, 51000)), true},
		{"tcp6 from a dialled peer", tcp6(t, ap(peer6, 9000), ap(stack6, 51000)), true},
		{"tcp from the peer's other port", tcp4(t, ap(peer4, 9001), ap(stack4, 51000)), false},
		{"tcp from the port on another host", tcp4(t, ap(other4, 9000), ap(stack4, 51000)), false},
		{"tcp from the peer to the kernel", tcp4(t, ap(peer4, 9000), ap(kernel4, 51000)), false},
		{"udp to a port", udp4(t, ap(peer4, 40000), ap(stack4, 53)), true},
		{"udp to another port", udp4(t, ap(peer4, 40000), ap(stack4, 54)), false},
		{"tcp to the udp port", tcp4(t, ap(peer4, 40000), ap(stack4, 53)), false},
		{"udp to the kernel", udp4(t, ap(peer4, 40000), ap(kernel4, 53)), false},
		{"arp request for the stack", arp(t, layers.ARPRequest, peer4, stack4, false), true},
		{"arp reply to the stack", arp(t, layers.ARPReply, peer4, stack4, false), true},
		{"tagged arp request for the stack", arp(t, layers.ARPRequest, peer4, stack4, true), true},
		{"arp request for the kernel", arp(t, layers.ARPRequest, peer4, kernel4, false), false},
		{"arp reply to the kernel", arp(t, layers.ARPReply, peer4, kernel4, false), false},
		{"arp request from the stack's address", arp(t, layers.ARPRequest, stack4, peer4, false), false},
		{"neighbour solicitation for the stack", icmp6(t, layers.ICMPv6TypeNeighborSolicitation, peer6, solicited(stack6), stack6), true},
		{"unicast solicitation to the stack", icmp6(t, layers.ICMPv6TypeNeighborSolicitation, peer6, stack6, stack6), true},
		{"neighbour advertisement to the stack", icmp6(t, layers.ICMPv6TypeNeighborAdvertisement, peer6, stack6, peer6), true},
		{"neighbour solicitation for another", icmp6(t, layers.ICMPv6TypeNeighborSolicitation, peer6, solicited(kernel6), kernel6), false},
		{"advertisement to all nodes", icmp6(t, layers.ICMPv6TypeNeighborAdvertisement, peer6, netip.MustParseAddr("ff02::1"), peer6), false},
		{"echo request to the stack", icmp6(t, layers.ICMPv6TypeEchoRequest, peer6, stack6, netip.Addr{}), false},
		{"router advertisement", icmp6(t, layers.ICMPv6TypeRouterAdvertisement, peer6, netip.MustParseAddr("ff02::1"), netip.Addr{}), false},
	})
}

// AnyPort takes everything to the stack's addresses and still nothing
// else: not the kernel's traffic, not its ARP.
func TestSteeringAnyPort(t *testing.T) {
	testenv.NeedBPF(t)
	ms, err := Traffic{Addrs: []netip.Addr{stack4, stack6}, AnyPort: true}.Matches()
	if err != nil {
		t.Fatal(err)
	}
	ap := netip.AddrPortFrom
	echo4 := func(dst netip.Addr) []byte {
		return serialize(t, eth(layers.EthernetTypeIPv4, macA), ip4(peer4, dst, layers.IPProtocolICMPv4),
			&layers.ICMPv4{TypeCode: layers.CreateICMPv4TypeCode(layers.ICMPv4TypeEchoRequest, 0)})
	}
	checkSteering(t, ms, []steerCase{
		{"tcp to any port", tcp4(t, ap(peer4, 40000), ap(stack4, 9)), true},
		{"tcp from any peer", tcp4(t, ap(other4, 443), ap(stack4, 51000)), true},
		{"tcp6 to any port", tcp6(t, ap(peer6, 40000), ap(stack6, 9)), true},
		{"udp to any port", udp4(t, ap(peer4, 40000), ap(stack4, 54)), true},
		{"icmp echo to the stack", echo4(stack4), true},
		{"icmpv6 echo to the stack", icmp6(t, layers.ICMPv6TypeEchoRequest, peer6, stack6, netip.Addr{}), true},
		{"arp request for the stack", arp(t, layers.ARPRequest, peer4, stack4, false), true},
		{"neighbour solicitation for the stack", icmp6(t, layers.ICMPv6TypeNeighborSolicitation, peer6, solicited(stack6), stack6), true},
		{"tcp to the kernel", tcp4(t, ap(peer4, 40000), ap(kernel4, 7)), false},
		{"icmp echo to the kernel", echo4(kernel4), false},
		{"arp request for the kernel", arp(t, layers.ARPRequest, peer4, kernel4, false), false},
		{"neighbour solicitation for another", icmp6(t, layers.ICMPv6TypeNeighborSolicitation, peer6, solicited(kernel6), kernel6), false},
	})
}

func TestOptions(t *testing.T) {
	opts, err := traffic.Options()
	if err != nil {
		t.Fatal(err)
	}
	if len(opts) != 2 {
		t.Fatalf("%d options, want WithSteering and WithXDP", len(opts))
	}
	ms, err := traffic.Matches()
	if err != nil {
		t.Fatal(err)
	}
	// The two listening ports, two peers, the UDP port, ARP and ND.
	if len(ms) != 6 {
		t.Errorf("%d matches: %v", len(ms), ms)
	}
	for _, m := range ms {
		if m.Err() != nil {
			t.Errorf("match %v: %v", m, m.Err())
		}
	}
	one, err := Traffic{Addrs: []netip.Addr{stack6}, UDPPorts: []uint16{53}}.Matches()
	if err != nil || len(one) != 2 {
		t.Errorf("IPv6 only, UDP only: %v, %v", one, err)
	}
}

func TestRefusals(t *testing.T) {
	ap := netip.AddrPortFrom
	ports := make([]uint16, maxPorts+1)
	for i := range ports {
		ports[i] = uint16(1000 + i)
	}
	for _, tc := range []struct {
		name string
		t    Traffic
	}{
		{"no address", Traffic{TCPPorts: []uint16{7}}},
		{"unspecified address", Traffic{Addrs: []netip.Addr{netip.IPv4Unspecified()}, TCPPorts: []uint16{7}}},
		{"multicast address", Traffic{Addrs: []netip.Addr{netip.MustParseAddr("ff02::1")}, TCPPorts: []uint16{7}}},
		{"two IPv4 addresses", Traffic{Addrs: []netip.Addr{stack4, kernel4}, TCPPorts: []uint16{7}}},
		{"two IPv6 addresses", Traffic{Addrs: []netip.Addr{stack6, kernel6}, TCPPorts: []uint16{7}}},
		{"nothing to take", Traffic{Addrs: []netip.Addr{stack4}}},
		{"port 0", Traffic{Addrs: []netip.Addr{stack4}, TCPPorts: []uint16{0}}},
		{"too many ports", Traffic{Addrs: []netip.Addr{stack4, stack6}, UDPPorts: ports}},
		{"peer without port", Traffic{Addrs: []netip.Addr{stack4}, TCPPeers: []netip.AddrPort{ap(peer4, 0)}}},
		{"peer of a family the stack lacks", Traffic{Addrs: []netip.Addr{stack4}, TCPPeers: []netip.AddrPort{ap(peer6, 80)}}},
	} {
		if _, err := tc.t.Options(); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
		if _, err := tc.t.Matches(); err == nil {
			t.Errorf("%s: Matches accepted", tc.name)
		}
	}
	if err := ARPFor(stack6).Err(); err == nil {
		t.Error("ARPFor an IPv6 address accepted")
	}
	if err := NeighborDiscoveryFor(stack4).Err(); err == nil {
		t.Error("NeighborDiscoveryFor an IPv4 address accepted")
	}
}
