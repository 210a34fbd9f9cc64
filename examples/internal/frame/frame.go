// Package frame builds and parses the test frames the examples send:
// Ethernet, optional 802.1Q tags, IPv4 or IPv6, UDP. Builders write into a
// caller's buffer and allocate nothing, so a generator can build straight
// into a transmit frame.
package frame

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/packetio/packetio/internal/csum"
)

// Sizes, in bytes. A frame's size never includes the 4-byte FCS the NIC
// appends: a "64-byte packet" on the wire is a 60-byte frame here.
const (
	MinFrame  = 60
	FCS       = 4
	ethHdr    = 14
	vlanTag   = 4
	ipv4Hdr   = 20
	ipv6Hdr   = 40
	udpHdr    = 8
	etherIPv4 = 0x0800
	etherIPv6 = 0x86dd
	etherVLAN = 0x8100
	protoUDP  = 17
)

// Spec describes a UDP frame. The zero VLAN means untagged.
type Spec struct {
	SrcMAC, DstMAC   net.HardwareAddr
	VLAN             uint16 // 1-4094 tags the frame; 0 leaves it untagged
	SrcIP, DstIP     netip.Addr
	SrcPort, DstPort uint16
	Size             int // whole frame without FCS; at least the headers, padded to MinFrame
}

// HeaderLen is the length of the Ethernet, VLAN, IP and UDP headers.
func (s Spec) HeaderLen() int {
	n := ethHdr + udpHdr
	if s.VLAN != 0 {
		n += vlanTag
	}
	if s.SrcIP.Is6() {
		n += ipv6Hdr
	} else {
		n += ipv4Hdr
	}
	return n
}

// Check reports what is wrong with the spec, if anything.
func (s Spec) Check() error {
	switch {
	case len(s.SrcMAC) != 6 || len(s.DstMAC) != 6:
		return errors.New("frame: MAC addresses must be 6 bytes")
	case !s.SrcIP.IsValid() || !s.DstIP.IsValid():
		return errors.New("frame: source and destination addresses are required")
	case s.SrcIP.Is4() != s.DstIP.Is4():
		return fmt.Errorf("frame: %s and %s are of different families", s.SrcIP, s.DstIP)
	case s.VLAN > 4094:
		return fmt.Errorf("frame: VLAN %d is above 4094", s.VLAN)
	case s.Size > 65535+ethHdr:
		return fmt.Errorf("frame: size %d is too large for one IP packet", s.Size)
	}
	return nil
}

// Len is the frame length Build writes: Size, but never less than the
// headers nor than MinFrame.
func (s Spec) Len() int { return max(s.Size, s.HeaderLen(), MinFrame) }

// Build writes the frame into dst and returns its length, or 0 when dst is
// too short. The payload is "packetio" followed by the alphabet, repeated.
// The spec must pass Check. It does not allocate.
func Build(dst []byte, s Spec) int {
	n := s.Len()
	if len(dst) < n {
		return 0
	}
	b := dst[:n]
	copy(b[0:6], s.DstMAC)
	copy(b[6:12], s.SrcMAC)
	off := 12
	if s.VLAN != 0 {
		binary.BigEndian.PutUint16(b[off:], etherVLAN)
		binary.BigEndian.PutUint16(b[off+2:], s.VLAN)
		off += vlanTag
	}
	l3 := off + 2
	var l4 int
	if s.SrcIP.Is6() {
		binary.BigEndian.PutUint16(b[off:], etherIPv6)
		l4 = l3 + ipv6Hdr
		ip := b[l3:l4]
		binary.BigEndian.PutUint32(ip[0:], 6<<28)
		binary.BigEndian.PutUint16(ip[4:], uint16(n-l4))
		ip[6], ip[7] = protoUDP, 64
		src, dst := s.SrcIP.As16(), s.DstIP.As16()
		copy(ip[8:24], src[:])
		copy(ip[24:40], dst[:])
	} else {
		binary.BigEndian.PutUint16(b[off:], etherIPv4)
		l4 = l3 + ipv4Hdr
		ip := b[l3:l4]
		ip[0], ip[1] = 0x45, 0
		binary.BigEndian.PutUint16(ip[2:], uint16(n-l3))
		binary.BigEndian.PutUint32(ip[4:], 0x00004000) // id 0, DF
		ip[8], ip[9] = 64, protoUDP
		ip[10], ip[11] = 0, 0
		src, dst := s.SrcIP.As4(), s.DstIP.As4()
		copy(ip[12:16], src[:])
		copy(ip[16:20], dst[:])
		binary.BigEndian.PutUint16(ip[10:], csum.Checksum(ip, 0))
	}
	u := b[l4:]
	binary.BigEndian.PutUint16(u[0:], s.SrcPort)
	binary.BigEndian.PutUint16(u[2:], s.DstPort)
	binary.BigEndian.PutUint16(u[4:], uint16(n-l4))
	u[6], u[7] = 0, 0
	const fill = "packetioabcdefghijklmnopqrstuvwxyz"
	for i := range u[udpHdr:] {
		u[udpHdr+i] = fill[i%len(fill)]
	}
	if s.SrcIP.Is6() {
		// UDP over IPv6 must carry a checksum.
		binary.BigEndian.PutUint16(u[6:], udpChecksum(b[l3:l4], u))
	}
	return n
}

// udpChecksum computes the UDP checksum over an IPv6 pseudo-header.
func udpChecksum(ip6, udp []byte) uint16 {
	c := csum.Checksum(udp, csum.Sum(ip6[8:40], uint32(len(udp))+protoUDP))
	if c == 0 {
		c = 0xffff
	}
	return c
}

// Info is what Parse found in a frame.
type Info struct {
	VLAN             uint16 // 0 when untagged
	SrcIP, DstIP     netip.Addr
	Proto            uint8
	SrcPort, DstPort uint16 // UDP and TCP only
	L3, L4           int    // offsets of the IP and transport headers
}

// Parse reads the headers of an Ethernet frame (one optional 802.1Q tag,
// IPv4 or IPv6, then UDP or TCP ports). It reports false for anything else or
// for a frame too short to hold what its headers claim.
func Parse(b []byte) (Info, bool) {
	var in Info
	if len(b) < ethHdr {
		return in, false
	}
	et := binary.BigEndian.Uint16(b[12:])
	off := ethHdr
	if et == etherVLAN {
		if len(b) < ethHdr+vlanTag {
			return in, false
		}
		in.VLAN = binary.BigEndian.Uint16(b[14:]) & 0x0fff
		et = binary.BigEndian.Uint16(b[16:])
		off += vlanTag
	}
	in.L3 = off
	switch et {
	case etherIPv4:
		if len(b) < off+ipv4Hdr || b[off]>>4 != 4 {
			return in, false
		}
		ihl := int(b[off]&0x0f) * 4
		if ihl < ipv4Hdr || len(b) < off+ihl {
			return in, false
		}
		in.Proto = b[off+9]
		in.SrcIP = netip.AddrFrom4([4]byte(b[off+12 : off+16]))
		in.DstIP = netip.AddrFrom4([4]byte(b[off+16 : off+20]))
		in.L4 = off + ihl
		if binary.BigEndian.Uint16(b[off+6:])&0x1fff != 0 {
			in.L4 = 0 // a later fragment: no transport header
		}
	case etherIPv6:
		if len(b) < off+ipv6Hdr || b[off]>>4 != 6 {
			return in, false
		}
		in.Proto = b[off+6]
		in.SrcIP = netip.AddrFrom16([16]byte(b[off+8 : off+24]))
		in.DstIP = netip.AddrFrom16([16]byte(b[off+24 : off+40]))
		in.L4 = off + ipv6Hdr
	default:
		return in, false
	}
	if in.L4 != 0 && (in.Proto == protoUDP || in.Proto == 6) && len(b) >= in.L4+4 {
		in.SrcPort = binary.BigEndian.Uint16(b[in.L4:])
		in.DstPort = binary.BigEndian.Uint16(b[in.L4+2:])
	}
	return in, true
}
