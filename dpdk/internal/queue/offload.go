package queue

import (
	"encoding/binary"
	"fmt"

	"github.com/packetio/packetio"
)

// headers is what transmit offload needs from a packet.
type headers struct {
	l2, l3 int
	ipv4   bool
	proto  uint8
}

// parse reads the Ethernet (with up to two VLAN tags), IPv4 or IPv6 and TCP
// or UDP headers of p. It reports false for anything else, and when the L4
// header is not wholly present (the device writes into it).
func parse(p []byte) (h headers, ok bool) {
	if len(p) < 14 {
		return h, false
	}
	l2, et := 14, binary.BigEndian.Uint16(p[12:])
	for i := 0; i < 2 && (et == 0x8100 || et == 0x88a8 || et == 0x9100); i++ {
		if len(p) < l2+4 {
			return h, false
		}
		et = binary.BigEndian.Uint16(p[l2+2:])
		l2 += 4
	}
	h.l2 = l2
	switch et {
	case 0x0800:
		if len(p) < l2+20 || p[l2]>>4 != 4 {
			return h, false
		}
		h.l3, h.ipv4, h.proto = int(p[l2]&0xf)*4, true, p[l2+9]
		if h.l3 < 20 {
			return h, false
		}
	case 0x86dd:
		if len(p) < l2+40 || p[l2]>>4 != 6 {
			return h, false
		}
		h.l3, h.proto = 40, p[l2+6]
	default:
		return h, false
	}
	need := 0
	switch h.proto {
	case packetio.IPProtoTCP:
		need = 20
	case packetio.IPProtoUDP:
		need = 8
	default:
		return h, false
	}
	return h, len(p) >= h.l2+h.l3+need
}

func (h headers) flags() uint64 {
	f := TxIPv6
	if h.ipv4 {
		f = TxIPv4 | TxIPCksum
	}
	if h.proto == packetio.IPProtoTCP {
		return f | TxTCPCksum
	}
	return f | TxUDPCksum
}

// bytes returns the packet d names; the caller has checked d.
func (t *Tx) bytesOf(d packetio.Desc) []byte { return t.cfg.Region[d.Addr : d.Addr+uint64(d.Len)] }

// checksumFlags is the plain-Transmit path on a device that kept checksum
// offload: parseable packets get the flags, others go out untouched.
func (t *Tx) checksumFlags(d packetio.Desc) (flags, lens uint64) {
	h, ok := parse(t.bytesOf(d))
	if !ok {
		return 0, 0
	}
	return h.flags(), txOffload(uint64(h.l2), uint64(h.l3), 0, 0)
}

// offload checks o against the packet's own headers and returns the mbuf
// flags and lengths that carry it out.
func (t *Tx) offload(d packetio.Desc, o packetio.Offload) (flags, lens uint64, err error) {
	if o == (packetio.Offload{}) {
		return 0, 0, nil
	}
	h, ok := parse(t.bytesOf(d))
	if !ok {
		return 0, 0, fmt.Errorf("%s: offload on a packet that is not TCP or UDP over IPv4 or IPv6: %w", t.cfg.Name, packetio.ErrBadLength)
	}
	if o.Flags&packetio.OffloadNeedsCsum != 0 && int(o.CsumStart) != h.l2+h.l3 {
		return 0, 0, fmt.Errorf("%s: csum_start %d but the L4 header starts at %d: %w", t.cfg.Name, o.CsumStart, h.l2+h.l3, packetio.ErrBadLength)
	}
	flags, lens = h.flags(), txOffload(uint64(h.l2), uint64(h.l3), 0, 0)
	if !o.Segmented() {
		return flags, lens, nil
	}
	if !t.cfg.TSO {
		return 0, 0, fmt.Errorf("%s: the device did not keep TCP segmentation offload: %w", t.cfg.Name, packetio.ErrUnsupported)
	}
	gso := o.GSOType &^ packetio.OffloadGSOECN
	if (gso != packetio.OffloadGSOTCPv4 && gso != packetio.OffloadGSOTCPv6) || h.proto != packetio.IPProtoTCP {
		return 0, 0, fmt.Errorf("%s: only TCP segmentation is offloaded (gso type %d): %w", t.cfg.Name, o.GSOType, packetio.ErrUnsupported)
	}
	if o.GSOSize == 0 || int(o.HdrLen) <= h.l2+h.l3 || int(o.HdrLen) > int(d.Len) {
		return 0, 0, fmt.Errorf("%s: gso size %d, header length %d do not fit the packet: %w", t.cfg.Name, o.GSOSize, o.HdrLen, packetio.ErrBadLength)
	}
	l4 := uint64(int(o.HdrLen) - h.l2 - h.l3)
	return flags | TxTCPSeg, txOffload(uint64(h.l2), uint64(h.l3), l4, uint64(o.GSOSize)), nil
}
