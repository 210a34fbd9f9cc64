// Package pkt is what the afxdp/xdp examples need to read and answer
// packets in the frame they arrived in: finding the UDP datagram in an
// Ethernet frame (one optional 802.1Q or 802.1ad tag, IPv4 or IPv6),
// turning the frame into the reply in place, the Internet checksum, and a
// one-line description of a frame for printing. It allocates nothing on the
// parse and reply paths.
package pkt

import (
	"encoding/binary"
	"errors"
	"net/netip"

	"github.com/packetio/packetio/internal/csum"
)

// EtherTypes the package knows.
const (
	EtherTypeIPv4 = 0x0800
	EtherTypeIPv6 = 0x86dd
	EtherTypeVLAN = 0x8100
	EtherTypeQinQ = 0x88a8
)

// IP protocol numbers.
const (
	ProtoTCP = 6
	ProtoUDP = 17
	ProtoGRE = 47
)

// MinFrame is the shortest Ethernet frame without its FCS: Reply pads to it.
const MinFrame = 60

// DefaultTTL is the TTL (or hop limit) of a reply.
const DefaultTTL = 64

// Why Parse refused a frame. They are values, so a packet loop can count
// them without allocating.
var (
	ErrShort       = errors.New("frame too short for its headers")
	ErrNotIP       = errors.New("not IPv4 or IPv6")
	ErrNotUDP      = errors.New("not UDP")
	ErrFragment    = errors.New("an IPv4 fragment")
	ErrBadHeader   = errors.New("malformed IP or UDP header")
	ErrIPv6ExtHdrs = errors.New("IPv6 extension headers before UDP")
)

// Datagram says where a UDP datagram lies in its frame.
type Datagram struct {
	// L3 is the offset of the IP header, L4 of the UDP header, Payload of
	// the UDP payload; PayloadLen is its length from the UDP header.
	L3, L4, Payload, PayloadLen int
	// V6 is true for IPv6.
	V6 bool
	// SrcPort and DstPort are the UDP ports.
	SrcPort, DstPort uint16
}

// Src returns the datagram's source address.
func (d Datagram) Src(frame []byte) netip.Addr {
	if d.V6 {
		return netip.AddrFrom16([16]byte(frame[d.L3+8 : d.L3+24]))
	}
	return netip.AddrFrom4([4]byte(frame[d.L3+12 : d.L3+16]))
}

// Dst returns the datagram's destination address.
func (d Datagram) Dst(frame []byte) netip.Addr {
	if d.V6 {
		return netip.AddrFrom16([16]byte(frame[d.L3+24 : d.L3+40]))
	}
	return netip.AddrFrom4([4]byte(frame[d.L3+16 : d.L3+20]))
}

// Body returns the UDP payload.
func (d Datagram) Body(frame []byte) []byte { return frame[d.Payload : d.Payload+d.PayloadLen] }

// L3Offset returns the offset of the network header and its EtherType,
// skipping one 802.1Q or 802.1ad tag, or ok false when the frame is too
// short for them.
func L3Offset(frame []byte) (off int, etherType uint16, ok bool) {
	if len(frame) < 14 {
		return 0, 0, false
	}
	off, et := 14, binary.BigEndian.Uint16(frame[12:])
	if et == EtherTypeVLAN || et == EtherTypeQinQ {
		if len(frame) < 18 {
			return 0, 0, false
		}
		off, et = 18, binary.BigEndian.Uint16(frame[16:])
	}
	return off, et, true
}

// Parse finds the UDP datagram in an Ethernet frame. It takes IPv4 with or
// without options (not fragments) and IPv6 whose first Next Header is UDP,
// and checks every length against the frame; it does not check checksums
// (see Reply for why).
func Parse(frame []byte) (Datagram, error) {
	l3, et, ok := L3Offset(frame)
	if !ok {
		return Datagram{}, ErrShort
	}
	d := Datagram{L3: l3}
	var ipEnd int
	switch et {
	case EtherTypeIPv4:
		if len(frame) < l3+20 {
			return d, ErrShort
		}
		vihl := frame[l3]
		ihl := int(vihl&0x0f) * 4
		total := int(binary.BigEndian.Uint16(frame[l3+2:]))
		switch {
		case vihl>>4 != 4 || ihl < 20:
			return d, ErrBadHeader
		case total < ihl || l3+total > len(frame):
			return d, ErrBadHeader
		case binary.BigEndian.Uint16(frame[l3+6:])&0x3fff != 0:
			return d, ErrFragment // MF set or an offset
		case frame[l3+9] != ProtoUDP:
			return d, ErrNotUDP
		}
		d.L4, ipEnd = l3+ihl, l3+total
	case EtherTypeIPv6:
		if len(frame) < l3+40 {
			return d, ErrShort
		}
		if frame[l3]>>4 != 6 {
			return d, ErrBadHeader
		}
		plen := int(binary.BigEndian.Uint16(frame[l3+4:]))
		if l3+40+plen > len(frame) {
			return d, ErrBadHeader
		}
		switch frame[l3+6] {
		case ProtoUDP:
		case 0, 43, 44, 50, 51, 60:
			return d, ErrIPv6ExtHdrs
		default:
			return d, ErrNotUDP
		}
		d.V6, d.L4, ipEnd = true, l3+40, l3+40+plen
	default:
		return d, ErrNotIP
	}
	if ipEnd-d.L4 < 8 {
		return d, ErrShort
	}
	ulen := int(binary.BigEndian.Uint16(frame[d.L4+4:]))
	if ulen < 8 || d.L4+ulen > ipEnd {
		return d, ErrBadHeader
	}
	d.SrcPort = binary.BigEndian.Uint16(frame[d.L4:])
	d.DstPort = binary.BigEndian.Uint16(frame[d.L4+2:])
	d.Payload, d.PayloadLen = d.L4+8, ulen-8
	return d, nil
}

// Reply turns the frame holding d into the reply to it, in place: the
// Ethernet addresses, IP addresses and UDP ports swapped, a VLAN tag kept
// as it was, the TTL (hop limit) set to DefaultTTL, IPv4 options dropped,
// and the lengths and checksums written for a payload of payloadLen bytes,
// which the caller has already put at d.Payload (or leaves there, to echo
// it). frame must be the whole room of the frame, not only the received
// bytes, when the reply is longer. It returns the reply's length (padded to
// MinFrame), or 0 when the reply does not fit in frame.
//
// The UDP checksum is computed afresh, never adjusted: a datagram that a
// local stack sent through a veth, or any device with transmit checksum
// offload, arrives at an XDP program with only the pseudo-header sum in its
// checksum field, waiting for a NIC that never comes, so the received value
// cannot be trusted. An IPv4 datagram that came with no checksum (0) is
// answered with none.
func Reply(frame []byte, d Datagram, payloadLen int) int {
	l3 := d.L3
	l4 := l3 + 40
	if !d.V6 {
		l4 = l3 + 20
	}
	end := l4 + 8 + payloadLen
	if payloadLen < 0 || d.L4 < l4 || d.Payload != d.L4+8 || d.Payload+payloadLen > len(frame) || end-l3 > 0xffff {
		return 0
	}
	// Ethernet: swap the addresses.
	var mac [6]byte
	copy(mac[:], frame[0:6])
	copy(frame[0:6], frame[6:12])
	copy(frame[6:12], mac[:])
	noSum := !d.V6 && binary.BigEndian.Uint16(frame[d.L4+6:]) == 0
	if l4 != d.L4 {
		// IPv4 options are not sent back: move the UDP header (and a
		// payload the caller left in place) up to follow a plain header.
		copy(frame[l4:], frame[d.L4:d.Payload+payloadLen])
	}
	var sum uint32
	if d.V6 {
		h := frame[l3 : l3+40]
		var a [16]byte
		copy(a[:], h[8:24])
		copy(h[8:24], h[24:40])
		copy(h[24:40], a[:])
		binary.BigEndian.PutUint16(h[4:], uint16(end-l4))
		h[7] = DefaultTTL
		sum = csum.Sum(h[8:40], 0)
	} else {
		h := frame[l3 : l3+20]
		var a [4]byte
		copy(a[:], h[12:16])
		copy(h[12:16], h[16:20])
		copy(h[16:20], a[:])
		h[0] = 0x45
		binary.BigEndian.PutUint16(h[2:], uint16(end-l3))
		h[8] = DefaultTTL
		h[10], h[11] = 0, 0
		binary.BigEndian.PutUint16(h[10:], csum.Checksum(h, 0))
		sum = csum.Sum(h[12:20], 0)
	}
	u := frame[l4:end]
	sp, dp := u[0:2], u[2:4]
	sp[0], sp[1], dp[0], dp[1] = dp[0], dp[1], sp[0], sp[1]
	binary.BigEndian.PutUint16(u[4:], uint16(len(u)))
	u[6], u[7] = 0, 0
	if !noSum {
		sum += ProtoUDP + uint32(len(u))
		c := csum.Checksum(u, sum)
		if c == 0 {
			c = 0xffff // 0 means "no checksum" in UDP
		}
		binary.BigEndian.PutUint16(u[6:], c)
	}
	for ; end < MinFrame && end < len(frame); end++ {
		frame[end] = 0
	}
	return end
}
