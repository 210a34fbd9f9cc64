package afpacket

// The PACKET_TX_RING, TPACKET_V2 (linux/if_packet.h): slots of txr.frameSize
// bytes, each a struct tpacket2_hdr (its status word first, tp_len at 4) and
// the frame at txDataOff. The program fills slots in order from head and
// marks each TP_STATUS_SEND_REQUEST; one send(2) makes the kernel walk them
// from its own head (tpacket_snd in net/packet/af_packet.c), which is always
// ours: both start at slot 0, both advance one slot per frame the kernel
// takes, and the kernel stops at the first slot it does not take, leaving
// its head there. A slot it took is TP_STATUS_SENDING until the skb is freed
// and TP_STATUS_AVAILABLE after; one whose frame it refused is
// TP_STATUS_WRONG_FORMAT (PACKET_LOSS is off), with its head still on it.
const (
	// txDataOff is where the kernel reads a slot's frame without
	// PACKET_TX_HAS_OFF: TPACKET2_HDRLEN less the sockaddr_ll.
	txDataOff = 32

	tpStatusAvailable   = 0 // TP_STATUS_AVAILABLE: ours to fill
	tpStatusSendRequest = 1 // TP_STATUS_SEND_REQUEST: filled, for the kernel
	tpStatusSending     = 2 // TP_STATUS_SENDING: the kernel's, in an skb
	tpStatusWrongFormat = 4 // TP_STATUS_WRONG_FORMAT: refused, ours again

	// txRingBytes bounds one transmit ring; txRingSlots is its slot
	// count where frames are small; txMinSlots keeps a jumbo ring useful.
	txRingBytes   = 4 << 20
	txRingSlots   = 1024
	txMinSlots    = 64
	txMinSlotSize = 2048
	txBlockSize   = 1 << 16
)

// txRing is the program's side of one transmit ring. One goroutine owns it;
// only the status words are shared with the kernel, through the atomics in
// ring_unsafe.go, and the kernel reads slots only inside our send(2).
type txRing struct {
	mem       []byte // slots*frameSize bytes: the mapping, or a forged ring in tests
	frameSize uint32
	slots     uint32
	head      uint32 // the next slot to fill; the kernel's head between sends
	// off is where a slot's frame starts: txDataOff, or past a
	// virtio_net_hdr with linear.
	off uint32
	// linear is PACKET_VNET_HDR on the ring's socket: every slot carries
	// a virtio_net_hdr whose hdr_len is the whole frame, so the kernel
	// copies the frame into the skb instead of pinning the slot's page
	// as a fragment, which costs more than the copy for small frames.
	linear bool
}

// txRingGeometry is the slot size and count of a ring for frames of up to
// maxLen bytes: a power of two slot of at least txMinSlotSize, txRingSlots
// of them, fewer when that passes txRingBytes (never fewer than txMinSlots),
// and the block size the kernel cuts them from.
func txRingGeometry(maxLen int) (frameSize, slots, blockSize int) {
	frameSize = txMinSlotSize
	for frameSize < maxLen+txDataOff {
		frameSize <<= 1
	}
	slots = max(min(txRingSlots, txRingBytes/frameSize), txMinSlots)
	blockSize = max(txBlockSize, frameSize)
	slots = (slots*frameSize + blockSize - 1) / blockSize * (blockSize / frameSize) // whole blocks
	return frameSize, slots, blockSize
}

func newTxRing(mem []byte, frameSize, slots int, linear bool) *txRing {
	r := &txRing{mem: mem, frameSize: uint32(frameSize), slots: uint32(slots), off: txDataOff, linear: linear}
	if linear {
		r.off += vnetLen
	}
	return r
}

// slot returns the k-th slot after head.
func (r *txRing) slot(k int) []byte {
	i := r.head + uint32(k)
	if i >= r.slots {
		i -= r.slots
	}
	off := i * r.frameSize
	return r.mem[off : off+r.frameSize : off+r.frameSize]
}

// room is how many frame bytes a slot holds.
func (r *txRing) room() int { return int(r.frameSize - r.off) }

// frame is the frame part of slot s, room bytes.
func (r *txRing) frame(s []byte) []byte { return s[r.off:] }

// free counts the slots from head that are ours to fill, up to max.
func (r *txRing) free(max int) int {
	max = min(max, int(r.slots))
	for k := range max {
		if loadSlotStatus(r.slot(k)) != tpStatusAvailable {
			return k
		}
	}
	return max
}

// post hands slot s, holding an n-byte frame, to the kernel's next send.
func (r *txRing) post(s []byte, n int) {
	r.setLen(s, n)
	storeSlotStatus(s, tpStatusSendRequest)
}

// setLen writes the length of slot s's n-byte frame: tp_len, and with
// linear a virtio_net_hdr asking for all n bytes in the skb's head (no
// offloads: flags, gso_type, gso_size and the checksum fields zero).
func (r *txRing) setLen(s []byte, n int) {
	if r.linear {
		h := s[txDataOff : txDataOff+vnetLen]
		clear(h)
		h[2], h[3] = byte(n), byte(n>>8) // hdr_len, little-endian (virtio 1.0)
		n += vnetLen
	}
	ne.PutUint32(s[h2Len:], uint32(n))
}

// frameLen is the frame length post wrote into slot s.
func (r *txRing) frameLen(s []byte) int { return int(ne.Uint32(s[h2Len:]) - (r.off - txDataOff)) }

// taken is how many of the k slots from head the kernel took in the last
// send: they are in order, so when the last one is taken all are.
func (r *txRing) taken(k int) int {
	if k == 0 || !pendingStatus(loadSlotStatus(r.slot(k-1))) {
		return k
	}
	for i := range k {
		if pendingStatus(loadSlotStatus(r.slot(i))) {
			return i
		}
	}
	return k
}

// pendingStatus is true for a slot the kernel has not taken: still a
// request, or refused.
func pendingStatus(st uint32) bool {
	return st == tpStatusSendRequest || st == tpStatusWrongFormat
}

// advance moves head past k slots the kernel took.
func (r *txRing) advance(k int) {
	r.head += uint32(k)
	if r.head >= r.slots {
		r.head -= r.slots
	}
}

// drop removes the head slot (refused by the kernel) from the k posted
// slots from head: the frames behind it move down one slot, still posted,
// and the last slot is ours again. The kernel's head stays where it is, on
// the slot that now holds the next frame.
func (r *txRing) drop(k int) {
	for i := 1; i < k; i++ {
		dst, src := r.slot(i-1), r.slot(i)
		n := r.frameLen(src)
		copy(r.frame(dst), r.frame(src)[:n])
		r.post(dst, n)
	}
	storeSlotStatus(r.slot(k-1), tpStatusAvailable)
}

// unpost takes back the k posted slots from head that the kernel did not
// take (back-pressure, a dead device): between sends nothing of the kernel
// reads them, and the kernel's head is at head.
func (r *txRing) unpost(k int) {
	for i := range k {
		storeSlotStatus(r.slot(i), tpStatusAvailable)
	}
}
