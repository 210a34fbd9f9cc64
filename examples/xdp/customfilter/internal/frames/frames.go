// Package frames builds the frames the customfilter example sends in its
// demonstration and its match tests use where internal/testframe has no
// builder: VXLAN and GRE over IPv4 or IPv6, and plain TCP and UDP, tagged
// or not, with github.com/google/gopacket so that the bytes are what a real
// stack puts on the wire.
package frames

import (
	"encoding/binary"
	"net"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

// Spec describes one frame.
type Spec struct {
	// V6 carries the tunnel over IPv6 instead of IPv4.
	V6 bool
	// VLAN lists 802.1Q tags on the outer frame, outermost first.
	VLAN []uint16
	// IPOpts gives the outer IPv4 header 4 bytes of options.
	IPOpts bool
	// FragOff is the outer IPv4 fragment offset, in 8-byte units.
	FragOff uint16
	// Proto is the outer transport: UDP (the default) or TCP for VXLAN.
	Proto layers.IPProtocol
	// DPort is the outer destination port of VXLAN (default 4789).
	DPort uint16
	// VNI is the VXLAN network identifier; NoIFlag clears the I flag that
	// says it is valid.
	VNI     uint32
	NoIFlag bool
	// Header, when set, replaces the 8-byte VXLAN header as it is.
	Header []byte
	// GREProto is the GRE protocol type (default 0x6558, transparent
	// Ethernet bridging), GREVersion its version, GREKey adds a key.
	GREProto   uint16
	GREVersion uint8
	GREKey     bool
}

// Addresses of the outer headers.
var (
	SrcMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0a}
	DstMAC = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x0b}
)

// inner is the encapsulated frame: an Ethernet frame with a small IPv4
// payload, 60 bytes.
func inner() []byte {
	b := make([]byte, 60)
	copy(b, []byte{0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x08, 0x00, 0x45})
	return b
}

// outer returns the layers up to and including the IP header, and the IP
// layer for checksums.
func outer(s Spec, proto layers.IPProtocol) ([]gopacket.SerializableLayer, gopacket.NetworkLayer) {
	eth := &layers.Ethernet{SrcMAC: SrcMAC, DstMAC: DstMAC}
	ls := []gopacket.SerializableLayer{eth}
	next := &eth.EthernetType
	for _, id := range s.VLAN {
		*next = layers.EthernetTypeDot1Q
		d := &layers.Dot1Q{VLANIdentifier: id}
		ls = append(ls, d)
		next = &d.Type
	}
	if s.V6 {
		*next = layers.EthernetTypeIPv6
		ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto,
			SrcIP: net.ParseIP("2001:db8::1"), DstIP: net.ParseIP("2001:db8::2")}
		return append(ls, ip), ip
	}
	*next = layers.EthernetTypeIPv4
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: proto, FragOffset: s.FragOff,
		SrcIP: net.IPv4(192, 0, 2, 1).To4(), DstIP: net.IPv4(192, 0, 2, 2).To4()}
	if s.IPOpts {
		ip.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
	}
	return append(ls, ip), ip
}

// VXLAN builds a VXLAN frame.
func VXLAN(s Spec) ([]byte, error) {
	proto := s.Proto
	if proto == 0 {
		proto = layers.IPProtocolUDP
	}
	dport := s.DPort
	if dport == 0 {
		dport = 4789
	}
	ls, nl := outer(s, proto)
	switch proto {
	case layers.IPProtocolTCP:
		t := &layers.TCP{SrcPort: 49152, DstPort: layers.TCPPort(dport), Window: 1024, DataOffset: 5, ACK: true}
		_ = t.SetNetworkLayerForChecksum(nl)
		ls = append(ls, t)
	default:
		u := &layers.UDP{SrcPort: 49152, DstPort: layers.UDPPort(dport)}
		_ = u.SetNetworkLayerForChecksum(nl)
		ls = append(ls, u)
	}
	h := s.Header
	if h == nil {
		h = make([]byte, 8)
		if !s.NoIFlag {
			h[0] = 0x08
		}
		binary.BigEndian.PutUint32(h[4:], s.VNI<<8)
	}
	ls = append(ls, gopacket.Payload(append(append([]byte(nil), h...), inner()...)))
	return serialize(ls)
}

// GRE builds a GRE frame (IPv4 protocol 47, or IPv6 Next Header 47).
func GRE(s Spec) ([]byte, error) {
	p := s.GREProto
	if p == 0 {
		p = 0x6558
	}
	ls, _ := outer(s, layers.IPProtocolGRE)
	// gopacket's GRE layer would pick its payload's decoder from the
	// protocol; the header is four bytes (eight with a key), so write it.
	g := []byte{0, s.GREVersion & 0x07, byte(p >> 8), byte(p)}
	if s.GREKey {
		g[0] |= 0x20
		g = append(g, 0, 0, 0x12, 0x34)
	}
	ls = append(ls, gopacket.Payload(append(g, inner()...)))
	return serialize(ls)
}

func serialize(ls []gopacket.SerializableLayer) ([]byte, error) {
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// TCP builds a TCP segment to dport with flags ("S", "SA", "A", ...).
func TCP(s Spec, dport uint16, flags string) ([]byte, error) {
	ls, nl := outer(s, layers.IPProtocolTCP)
	t := &layers.TCP{SrcPort: 49152, DstPort: layers.TCPPort(dport), Window: 1024, DataOffset: 5}
	for _, f := range flags {
		switch f {
		case 'S':
			t.SYN = true
		case 'A':
			t.ACK = true
		case 'R':
			t.RST = true
		case 'F':
			t.FIN = true
		}
	}
	_ = t.SetNetworkLayerForChecksum(nl)
	ls = append(ls, t, gopacket.Payload(make([]byte, 8)))
	return serialize(ls)
}

// UDP builds a UDP datagram to dport carrying payload.
func UDP(s Spec, dport uint16, payload []byte) ([]byte, error) {
	ls, nl := outer(s, layers.IPProtocolUDP)
	u := &layers.UDP{SrcPort: 49152, DstPort: layers.UDPPort(dport)}
	_ = u.SetNetworkLayerForChecksum(nl)
	ls = append(ls, u, gopacket.Payload(payload))
	return serialize(ls)
}

// WithDst returns the frame with its Ethernet destination set to mac.
func WithDst(frame []byte, mac net.HardwareAddr) []byte {
	copy(frame[0:6], mac)
	return frame
}
