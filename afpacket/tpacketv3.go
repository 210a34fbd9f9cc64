package afpacket

import "encoding/binary"

// TPACKET_V3 layout, from linux/if_packet.h, written out so the walk below is
// plain Go over a byte slice and can be tested on a forged ring without a
// kernel. Sizes and offsets are checked in tpacketv3_test.go.
const (
	tpStatusKernel    = 0      // TP_STATUS_KERNEL: the kernel owns the block
	tpStatusUser      = 1 << 0 // TP_STATUS_USER: the block is ours to read
	tpStatusVLANValid = 1 << 4 // TP_STATUS_VLAN_VALID: tp_vlan_tci holds a stripped tag
	tpStatusVLANTPID  = 1 << 6 // TP_STATUS_VLAN_TPID_VALID: tp_vlan_tpid is set

	// struct tpacket_block_desc (the header of every block).
	bdBlockStatus = 8  // hdr.bh1.block_status, u32
	bdNumPkts     = 12 // hdr.bh1.num_pkts, u32
	bdFirstPkt    = 16 // hdr.bh1.offset_to_first_pkt, u32
	bdSize        = 48

	// struct tpacket3_hdr (in front of every packet).
	hNextOffset = 0  // tp_next_offset, u32: 0 on the last packet
	hSec        = 4  // tp_sec, u32
	hNsec       = 8  // tp_nsec, u32
	hSnaplen    = 12 // tp_snaplen, u32: bytes stored
	hLen        = 16 // tp_len, u32: bytes on the wire
	hStatus     = 20 // tp_status, u32
	hMac        = 24 // tp_mac, u16: offset from this header to the frame
	hVLANTCI    = 32 // hv1.tp_vlan_tci, u32
	hVLANTPID   = 36 // hv1.tp_vlan_tpid, u16
	hSize       = 48

	vlanLen   = 4
	macsLen   = 12 // destination and source MAC
	etherLen  = 14
	tpidDot1Q = 0x8100
)

// ne reads kernel-written fields: the kernel writes them in host order.
var ne = binary.NativeEndian

// packet is one packet of the ring as the walk found it, already checked to
// lie inside its block. data aliases the ring: copy it out before the block
// is retired.
type packet struct {
	data    []byte // tp_snaplen bytes at tp_mac
	wireLen uint32 // tp_len
	status  uint32 // tp_status
	vlanTCI uint16
	tpid    uint16
	sec     uint32
	nsec    uint32
	vnet    []byte // the virtio_net_hdr in front of data, vnet rings only
}

// vlanTagged reports whether the kernel stripped a VLAN tag that must be put
// back.
func (p *packet) vlanTagged() bool { return p.status&tpStatusVLANValid != 0 }

// peekResult says what peek found.
type peekResult int

const (
	peekEmpty   peekResult = iota // no ready packet
	peekOK                        // a packet, valid
	peekCorrupt                   // the kernel-written offsets do not fit the block; retire it
)

// ring walks a TPACKET_V3 receive ring. One goroutine owns it (the receive
// queue's), so the cursor has no lock; only the block status word is shared
// with the kernel and it is touched through the atomics in ring_unsafe.go.
type ring struct {
	mem       []byte // blocks*blockSize, the mmapped ring (or a forged one in tests)
	blockSize uint32
	blocks    uint32
	vnet      bool // PACKET_VNET_HDR: a virtio_net_hdr precedes every packet

	cur     uint32 // current block index
	open    bool   // the current block is ours and partly walked
	left    uint32 // packets left in the open block
	off     uint32 // offset of the next packet header inside the open block
	retired uint64 // blocks handed back (tests)
}

func newRing(mem []byte, blockSize, blocks int, vnet bool) *ring {
	return &ring{mem: mem, blockSize: uint32(blockSize), blocks: uint32(blocks), vnet: vnet}
}

// block returns block i's bytes.
func (r *ring) block(i uint32) []byte {
	b := uint64(i) * uint64(r.blockSize)
	return r.mem[b : b+uint64(r.blockSize) : b+uint64(r.blockSize)]
}

// openNext makes the current block the open one if the kernel has handed it
// over. Empty blocks are retired on the way, at most one lap of them.
func (r *ring) openNext() bool {
	for range r.blocks {
		b := r.block(r.cur)
		if loadStatus(b)&tpStatusUser == 0 {
			return false
		}
		r.left = ne.Uint32(b[bdNumPkts:])
		r.off = ne.Uint32(b[bdFirstPkt:])
		if r.left != 0 {
			r.open = true
			return true
		}
		r.retire()
	}
	return false
}

// ready is how many packets are waiting: the rest of the open block, else
// the next block's count. It is a lower bound.
func (r *ring) ready() int {
	if r.open {
		return int(r.left)
	}
	b := r.block(r.cur)
	if loadStatus(b)&tpStatusUser == 0 {
		return 0
	}
	return int(ne.Uint32(b[bdNumPkts:]))
}

// peek returns the next packet without consuming it. Every offset and length
// the kernel wrote is distrusted; each check is a subtraction, so no sum can
// wrap.
func (r *ring) peek(p *packet) peekResult {
	if !r.open && !r.openNext() {
		return peekEmpty
	}
	b := r.block(r.cur)
	bs := r.blockSize
	off := r.off
	if off < bdSize || off > bs-hSize {
		return peekCorrupt
	}
	h := b[off : off+hSize]
	mac := uint32(ne.Uint16(h[hMac:]))
	snap := ne.Uint32(h[hSnaplen:])
	if mac < hSize || mac > bs-off || snap > bs-off-mac {
		return peekCorrupt
	}
	if r.vnet && mac < hSize+vnetLen {
		return peekCorrupt
	}
	start := off + mac
	p.data = b[start : start+snap : start+snap]
	p.wireLen = ne.Uint32(h[hLen:])
	p.status = ne.Uint32(h[hStatus:])
	p.vlanTCI = uint16(ne.Uint32(h[hVLANTCI:]))
	p.tpid = ne.Uint16(h[hVLANTPID:])
	p.sec = ne.Uint32(h[hSec:])
	p.nsec = ne.Uint32(h[hNsec:])
	p.vnet = nil
	if r.vnet {
		p.vnet = b[start-vnetLen : start : start]
	}
	return peekOK
}

// advance consumes the packet peek returned; the block goes back to the
// kernel after its last packet (tp_next_offset 0 ends it, whatever num_pkts
// said).
func (r *ring) advance() {
	b := r.block(r.cur)
	next := ne.Uint32(b[r.off+hNextOffset:])
	r.left--
	if r.left == 0 || next == 0 {
		r.retire()
		return
	}
	if next < hSize || next > r.blockSize-r.off {
		// The next header would not be inside the block: peek
		// reports it corrupt, which retires the block.
		r.off = r.blockSize
		return
	}
	r.off += next
}

// retire hands the current block back to the kernel and moves on.
func (r *ring) retire() {
	storeStatus(r.block(r.cur), tpStatusKernel)
	r.open = false
	r.left = 0
	r.retired++
	r.cur++
	if r.cur == r.blocks {
		r.cur = 0
	}
}

// wireLen is the length the packet has once a stripped VLAN tag is back.
func (p *packet) frameLen() int {
	n := len(p.data)
	if p.vlanTagged() && n >= macsLen {
		n += vlanLen
	}
	return n
}

// copyOut writes the packet's wire image into dst, putting back a VLAN tag
// the kernel stripped, and returns the length. dst must hold frameLen bytes.
// It reports whether a tag went back in.
func (p *packet) copyOut(dst []byte) (int, bool) {
	if !p.vlanTagged() || len(p.data) < macsLen {
		return copy(dst, p.data), false
	}
	return insertVLAN(dst, p.data, p.tpid, p.vlanTCI), true
}

// copyAt writes bytes [off, off+len(dst)) of the packet's wire image (the
// stripped VLAN tag put back) into dst and returns how many it wrote: fewer
// than len(dst) only at the end of the packet. It lets one packet be spread
// over several frames.
func (p *packet) copyAt(dst []byte, off int) int {
	if off < 0 {
		return 0
	}
	if !p.vlanTagged() || len(p.data) < macsLen {
		if off >= len(p.data) {
			return 0
		}
		return copy(dst, p.data[off:])
	}
	n := 0
	for n < len(dst) {
		o := off + n
		var c int
		switch {
		case o < macsLen:
			c = copy(dst[n:], p.data[o:macsLen])
		case o < macsLen+vlanLen:
			tpid := p.tpid
			if tpid == 0 {
				tpid = tpidDot1Q
			}
			var tag [vlanLen]byte
			binary.BigEndian.PutUint16(tag[:], tpid)
			binary.BigEndian.PutUint16(tag[2:], p.vlanTCI)
			c = copy(dst[n:], tag[o-macsLen:])
		case o-vlanLen < len(p.data):
			c = copy(dst[n:], p.data[o-vlanLen:])
		}
		if c == 0 {
			break
		}
		n += c
	}
	return n
}

// insertVLAN copies frame into dst with an 802.1Q tag (TPID tpid, 0x8100 when
// 0) after the two MAC addresses. frame must hold at least 12 bytes and dst
// len(frame)+4; it returns the bytes written.
func insertVLAN(dst, frame []byte, tpid, tci uint16) int {
	if tpid == 0 {
		tpid = tpidDot1Q
	}
	if len(frame) < macsLen || len(dst) < len(frame)+vlanLen {
		return 0
	}
	copy(dst, frame[:macsLen])
	binary.BigEndian.PutUint16(dst[macsLen:], tpid)
	binary.BigEndian.PutUint16(dst[macsLen+2:], tci)
	return macsLen + vlanLen + copy(dst[macsLen+vlanLen:], frame[macsLen:])
}
