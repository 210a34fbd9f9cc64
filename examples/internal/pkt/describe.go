package pkt

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Describe returns one line about a frame, for an example to print what
// arrived: its length, Ethernet addresses, VLAN tags, and what it can read
// of the IP and transport headers (TCP flags, UDP ports, a VXLAN VNI on port
// 4789, a GRE protocol). It allocates; keep it off the fast path.
func Describe(frame []byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%4d B", len(frame))
	if len(frame) < 14 {
		b.WriteString(" (runt)")
		return b.String()
	}
	fmt.Fprintf(&b, "  %s > %s", net.HardwareAddr(frame[6:12]), net.HardwareAddr(frame[0:6]))
	off, et := 14, binary.BigEndian.Uint16(frame[12:])
	for (et == EtherTypeVLAN || et == EtherTypeQinQ) && len(frame) >= off+4 {
		fmt.Fprintf(&b, "  vlan %d", binary.BigEndian.Uint16(frame[off:])&0x0fff)
		off, et = off+4, binary.BigEndian.Uint16(frame[off+2:])
	}
	ip := frame[off:]
	var proto byte
	var l4 []byte
	switch {
	case et == EtherTypeIPv4 && len(ip) >= 20 && ip[0]>>4 == 4:
		ihl := int(ip[0]&0x0f) * 4
		fmt.Fprintf(&b, "  %s > %s", netip.AddrFrom4([4]byte(ip[12:16])), netip.AddrFrom4([4]byte(ip[16:20])))
		proto = ip[9]
		if binary.BigEndian.Uint16(ip[6:])&0x1fff != 0 {
			fmt.Fprintf(&b, " proto %d fragment", proto)
			return b.String()
		}
		if ihl >= 20 && len(ip) >= ihl {
			l4 = ip[ihl:]
		}
	case et == EtherTypeIPv6 && len(ip) >= 40:
		fmt.Fprintf(&b, "  %s > %s", netip.AddrFrom16([16]byte(ip[8:24])), netip.AddrFrom16([16]byte(ip[24:40])))
		proto, l4 = ip[6], ip[40:]
	default:
		fmt.Fprintf(&b, "  ethertype %#04x", et)
		return b.String()
	}
	switch {
	case proto == ProtoTCP && len(l4) >= 14:
		fmt.Fprintf(&b, " tcp %d > %d [%s]", binary.BigEndian.Uint16(l4), binary.BigEndian.Uint16(l4[2:]), tcpFlags(l4[13]))
	case proto == ProtoUDP && len(l4) >= 8:
		dport := binary.BigEndian.Uint16(l4[2:])
		fmt.Fprintf(&b, " udp %d > %d", binary.BigEndian.Uint16(l4), dport)
		if dport == 4789 && len(l4) >= 16 {
			fmt.Fprintf(&b, " vxlan vni %#06x", binary.BigEndian.Uint32(l4[12:])>>8)
		}
	case proto == ProtoGRE && len(l4) >= 4:
		fmt.Fprintf(&b, " gre protocol %#04x", binary.BigEndian.Uint16(l4[2:]))
	default:
		fmt.Fprintf(&b, " proto %d", proto)
	}
	return b.String()
}

// tcpFlags spells the flags tcpdump's way: S, F, R, P, U, E, W, with "."
// for ACK.
func tcpFlags(f byte) string {
	var s []byte
	for _, x := range []struct {
		bit byte
		c   byte
	}{{0x02, 'S'}, {0x01, 'F'}, {0x04, 'R'}, {0x08, 'P'}, {0x20, 'U'}, {0x40, 'E'}, {0x80, 'W'}, {0x10, '.'}} {
		if f&x.bit != 0 {
			s = append(s, x.c)
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return string(s)
}
