package afpacket

// TPACKET_V2 layout (WithLowLatency), from linux/if_packet.h, written out so
// the walk below is plain Go over a byte slice and can be tested on a forged
// ring without a kernel. Sizes and offsets are checked in tpacketv2_test.go.
//
// A V2 ring is tp_block_nr blocks of tp_block_size bytes, each cut into
// tp_block_size/tp_frame_size frame slots; a slot holds one packet, its
// struct tpacket2_hdr first, and carries its own status word, so the kernel
// hands every packet over on its own (and wakes poll(2)) instead of waiting
// for a block to fill or time out as TPACKET_V3 does.
const (
	h2Status   = 0  // tp_status, u32
	h2Len      = 4  // tp_len, u32: bytes on the wire
	h2Snaplen  = 8  // tp_snaplen, u32: bytes stored
	h2Mac      = 12 // tp_mac, u16: offset from the slot start to the frame
	h2Net      = 14 // tp_net, u16
	h2Sec      = 16 // tp_sec, u32
	h2Nsec     = 20 // tp_nsec, u32
	h2VLANTCI  = 24 // tp_vlan_tci, u16
	h2VLANTPID = 26 // tp_vlan_tpid, u16
	h2Size     = 32

	// ring2HdrRoom is what a V2 slot needs in front of the frame: the
	// kernel puts the frame at TPACKET_ALIGN(TPACKET2_HDRLEN + max(mac
	// header, 16)) less the mac header, plus the virtio header with
	// PACKET_VNET_HDR: 66 (76) bytes for Ethernet. 128 leaves room for a
	// longer link header.
	ring2HdrRoom = 128
	// ring2MaxReady bounds how far ready looks ahead: it is a lower bound.
	ring2MaxReady = 256
	tpacketAlign  = 16 // TPACKET_ALIGNMENT
)

// ring2 walks a TPACKET_V2 receive ring frame slot by frame slot. Like ring,
// one goroutine owns it; only the slot status words are shared with the
// kernel, through the atomics in ring_unsafe.go. Every slot is handed back
// as soon as its packet has been copied out.
type ring2 struct {
	mem       []byte // blocks*blockSize, the mmapped ring (or a forged one in tests)
	blockSize uint32
	frameSize uint32
	perBlock  uint32 // slots per block
	frames    uint32 // slots in the ring
	vnet      bool   // PACKET_VNET_HDR: a virtio_net_hdr precedes every packet

	cur      uint32 // the next slot to read
	released uint64 // slots handed back (tests)
}

// newRing2 makes the walker for a ring of blocks blocks of blockSize bytes
// cut into frameSize slots. frameSize must be at least h2Size and at most
// blockSize, and mem must hold the blocks.
func newRing2(mem []byte, blockSize, frameSize, blocks int, vnet bool) *ring2 {
	per := blockSize / frameSize
	return &ring2{mem: mem, blockSize: uint32(blockSize), frameSize: uint32(frameSize),
		perBlock: uint32(per), frames: uint32(per * blocks), vnet: vnet}
}

// slot returns frame slot i's bytes. Slots never straddle a block.
func (r *ring2) slot(i uint32) []byte {
	b := uint64(i/r.perBlock)*uint64(r.blockSize) + uint64(i%r.perBlock)*uint64(r.frameSize)
	e := b + uint64(r.frameSize)
	return r.mem[b:e:e]
}

// ready is how many slots in a row from the cursor the kernel has handed
// over, up to ring2MaxReady: a lower bound.
func (r *ring2) ready() int {
	i := r.cur
	n := 0
	for n < ring2MaxReady && uint32(n) < r.frames {
		if loadSlotStatus(r.slot(i))&tpStatusUser == 0 {
			break
		}
		n++
		i++
		if i == r.frames {
			i = 0
		}
	}
	return n
}

// peek returns the packet in the current slot without consuming it. Every
// offset and length the kernel wrote is checked against the slot; each
// check is a subtraction, so no sum can wrap.
func (r *ring2) peek(p *packet) peekResult {
	s := r.slot(r.cur)
	st := loadSlotStatus(s)
	if st&tpStatusUser == 0 {
		return peekEmpty
	}
	fs := r.frameSize
	mac := uint32(ne.Uint16(s[h2Mac:]))
	snap := ne.Uint32(s[h2Snaplen:])
	if mac < h2Size || mac > fs || snap > fs-mac {
		return peekCorrupt
	}
	if r.vnet && mac < h2Size+vnetLen {
		return peekCorrupt
	}
	p.data = s[mac : mac+snap : mac+snap]
	p.wireLen = ne.Uint32(s[h2Len:])
	p.status = st
	p.vlanTCI = ne.Uint16(s[h2VLANTCI:])
	p.tpid = ne.Uint16(s[h2VLANTPID:])
	p.sec = ne.Uint32(s[h2Sec:])
	p.nsec = ne.Uint32(s[h2Nsec:])
	p.vnet = nil
	if r.vnet {
		p.vnet = s[mac-vnetLen : mac : mac]
	}
	return peekOK
}

// advance hands the current slot back to the kernel (after the last read of
// its bytes) and moves on.
func (r *ring2) advance() {
	storeSlotStatus(r.slot(r.cur), tpStatusKernel)
	r.released++
	r.cur++
	if r.cur == r.frames {
		r.cur = 0
	}
}

// retire skips a corrupt slot: on a V2 ring that is the same as consuming
// it.
func (r *ring2) retire() { r.advance() }

// ring2Geometry is the V2 ring for frames of up to capacity bytes (less the
// headers) with blocks of blockSize (at least): it returns tp_frame_size,
// tp_block_size and tp_block_nr. The ring takes about RingBytes like the V3
// one.
func ring2Geometry(capacity, blockSize int) (frameSize, block, blocks int) {
	frameSize = (ring2HdrRoom + capacity + tpacketAlign - 1) &^ (tpacketAlign - 1)
	block = blockSize
	for block < frameSize {
		block <<= 1
	}
	blocks = max(RingBytes/block, minBlocks)
	return frameSize, block, blocks
}
