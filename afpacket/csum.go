package afpacket

import (
	"encoding/binary"
	"fmt"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/csum"
)

// vnetLen is the size of the virtio_net_hdr that PACKET_VNET_HDR puts in
// front of every packet (no num_buffers field).
const vnetLen = packetio.OffloadHdrLen

const (
	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86dd
	etherTypeQinQ = 0x88a8
	maxVLANTags   = 2
	ipv6HdrLen    = 40
)

// l3End is the offset one past the last byte of the IP packet in frame, as
// the IP header says (stepping over up to two VLAN tags), so Ethernet padding
// after a short IP packet is not part of it. It returns len(frame) when the
// frame is not IP or the header does not parse.
func l3End(frame []byte) int {
	off := macsLen
	for range maxVLANTags + 1 {
		if len(frame) < off+2 {
			return len(frame)
		}
		et := binary.BigEndian.Uint16(frame[off:])
		off += 2
		switch et {
		case tpidDot1Q, etherTypeQinQ:
			off += 2 // the TCI; the next two bytes are the inner type
			continue
		case etherTypeIPv4:
			if len(frame) < off+4 {
				return len(frame)
			}
			return off + int(binary.BigEndian.Uint16(frame[off+2:]))
		case etherTypeIPv6:
			if len(frame) < off+6 {
				return len(frame)
			}
			return off + ipv6HdrLen + int(binary.BigEndian.Uint16(frame[off+4:]))
		default:
			return len(frame)
		}
	}
	return len(frame)
}

// completeL4 finishes a partial (VIRTIO_NET_HDR_F_NEEDS_CSUM) checksum: the
// field at csumStart+csumOff holds the pseudo-header sum, and the one's
// complement sum from csumStart to the end of the IP packet, that field
// included once, complemented, is the checksum (as the kernel's
// skb_checksum_help computes it). Padding after the IP packet is not summed.
// A result of zero is written as 0xffff (UDP's "no checksum" is 0, and the
// two are the same number in one's complement). Offsets that do not fit the
// frame are refused and leave it untouched.
func completeL4(frame []byte, csumStart, csumOff int) bool {
	n := len(frame)
	if csumStart < 0 || csumOff < 0 || csumStart > n || n-csumStart < 2 || csumOff > n-csumStart-2 {
		return false
	}
	at := csumStart + csumOff
	end := l3End(frame)
	if end > n || end < at+2 {
		end = n // the IP header disagrees with the frame: sum it all
	}
	c := csum.Checksum(frame[csumStart:end], 0)
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(frame[at:], c)
	return true
}

// checkOffload refuses an Offload the kernel would reject for a packet of n
// bytes (packet_snd_vnet_parse and virtio_net_hdr_to_skb), before it reaches
// sendmmsg, where one bad header fails the whole call. Every check is a
// subtraction, so nothing wraps.
func checkOffload(o packetio.Offload, n int) error {
	if o.Flags&packetio.OffloadNeedsCsum != 0 {
		if int(o.CsumStart) > n || int(o.CsumOff) > n-int(o.CsumStart)-2 {
			return fmt.Errorf("checksum field at %d+%d outside the %d-byte packet", o.CsumStart, o.CsumOff, n)
		}
	}
	if int(o.HdrLen) > n {
		return fmt.Errorf("header length %d beyond the %d-byte packet", o.HdrLen, n)
	}
	switch o.GSOType &^ packetio.OffloadGSOECN {
	case packetio.OffloadGSONone:
		if o.GSOType&packetio.OffloadGSOECN != 0 {
			return fmt.Errorf("ECN bit without a GSO type")
		}
	case packetio.OffloadGSOTCPv4, packetio.OffloadGSOTCPv6, packetio.OffloadGSOUDP:
		if o.GSOSize == 0 {
			return fmt.Errorf("segmented (type %d) with GSO size 0", o.GSOType)
		}
	default:
		return fmt.Errorf("unknown GSO type %#x", o.GSOType)
	}
	return nil
}

// rxOffload decodes the virtio_net_hdr the kernel put in front of a received
// packet. When a stripped VLAN tag went back into the frame, the offsets that
// count from the frame start move by 4 (csum_start only with NEEDS_CSUM,
// hdr_len only when set), saturating rather than wrapping, so a value the
// checks refuse can never turn into one they accept. csum_off counts from
// csum_start and does not move.
func rxOffload(hdr []byte, tagged bool) packetio.Offload {
	if len(hdr) < vnetLen {
		return packetio.Offload{}
	}
	o := packetio.UnmarshalOffload(hdr)
	if tagged {
		if o.Flags&packetio.OffloadNeedsCsum != 0 {
			o.CsumStart = addSat(o.CsumStart, vlanLen)
		}
		if o.HdrLen != 0 {
			o.HdrLen = addSat(o.HdrLen, vlanLen)
		}
	}
	return o
}

func addSat(a, b uint16) uint16 {
	if a > 0xffff-b {
		return 0xffff
	}
	return a + b
}
