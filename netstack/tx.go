package netstack

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/spinwait"
)

// minFrame is the shortest Ethernet frame without its FCS; shorter packets
// are padded with zeros.
const minFrame = 60

// txQueue is one transmit queue. gVisor writes from many goroutines; the
// mutex makes them take turns, so the queue has one driver at a time.
type txQueue struct {
	e   *endpoint
	idx int
	q   packetio.TxQueue
	// off takes offload metadata: nil unless the device finishes
	// checksums (Capabilities().Offload or TxChecksumOffload). It is
	// handed segmentation only when the endpoint's segOffload says the
	// device segments; a checksum-only device gets segments cut here,
	// each with its checksum left for the device to finish.
	off packetio.OffloadTransmitter

	mu     sync.Mutex
	closed bool
	offs   []packetio.Offload // one per frame of the packet being sent
	hdr    [256]byte          // header template while segmenting
}

func newTxQueue(e *endpoint, i int, q packetio.TxQueue) *txQueue {
	t := &txQueue{e: e, idx: i, q: q, offs: make([]packetio.Offload, 1)}
	if o, ok := q.(packetio.OffloadTransmitter); ok && (e.caps.Offload || e.caps.TxChecksumOffload) {
		t.off = o
	}
	return t
}

// offloads returns q.offs with n zero entries (an ordinary frame each),
// growing it (once per new high mark, never per packet in the steady
// state).
func (q *txQueue) offloads(n int) []packetio.Offload {
	if cap(q.offs) < n {
		q.offs = make([]packetio.Offload, n)
	}
	clear(q.offs[:n])
	return q.offs[:n]
}

// WritePackets implements stack.LinkWriter. Each packet leaves on the
// transmit queue matching the receive queue its flow arrives on (or
// pkt.Hash's, for a flow not seen yet). A packet that finds its queue full
// waits up to Config.TxWait for room and is then dropped and counted; the
// error makes TCP schedule a retransmission.
func (e *endpoint) WritePackets(list stack.PacketBufferList) (int, tcpip.Error) {
	sent := 0
	for _, pkt := range list.AsSlice() {
		q := e.tx[e.pick(pkt)]
		q.mu.Lock()
		err := q.write(pkt)
		q.mu.Unlock()
		if err != nil {
			return sent, err
		}
		sent++
	}
	return sent, nil
}

func (e *endpoint) pick(pkt *stack.PacketBuffer) int {
	if len(e.tx) == 1 {
		return 0
	}
	if e.flows != nil {
		if h, ok := flowHashParts(pkt.NetworkHeader().Slice(), pkt.TransportHeader().Slice()); ok {
			if q := e.flows[h].Load(); q != 0 {
				return int(q-1) % len(e.tx)
			}
		}
	}
	return int(pkt.Hash % uint32(len(e.tx)))
}

// write sends one packet: a single frame, a super-frame with offload
// metadata, or MSS-sized segments cut here; on a multi-buffer device with
// an MTU above a frame, a packet or segment longer than a frame leaves as
// a chain of frames. Called with q.mu held.
func (q *txQueue) write(pkt *stack.PacketBuffer) tcpip.Error {
	e := q.e
	st := &e.stats
	if q.closed {
		return &tcpip.ErrClosedForSend{}
	}
	gso := pkt.GSOOptions
	isTCPGSO := (gso.Type == stack.GSOTCPv4 || gso.Type == stack.GSOTCPv6) && gso.NeedsCsum
	dataLen := pkt.Data().Size()
	size := pkt.Size()
	segs, frames, chains := 1, 1, 0 // packets on the wire, frames they take, packets taking more than one
	if isTCPGSO && !e.segOffload && gso.MSS > 0 && dataLen > int(gso.MSS) {
		mss := int(gso.MSS)
		segs = (dataLen + mss - 1) / mss
		hl := size - dataLen
		full, last := e.framesFor(hl+mss), e.framesFor(hl+dataLen-(segs-1)*mss)
		frames = (segs-1)*full + last
		chains = (segs-1)*min(full-1, 1) + min(last-1, 1)
	} else if size > e.caps.MaxFrameSize {
		if size > maxPacketLen(e.caps) {
			st.txTooBig.Add(1)
			return &tcpip.ErrMessageTooLong{}
		}
		frames, chains = e.framesFor(size), 1
	}
	if !q.room(frames) {
		st.txDropped.Add(uint64(frames))
		if err := q.q.Err(); err != nil {
			return &tcpip.ErrClosedForSend{}
		}
		return &tcpip.ErrNoBufferSpace{}
	}
	descs := q.q.Alloc(frames)
	if len(descs) < frames {
		q.q.Free(descs)
		st.txDropped.Add(uint64(frames))
		return &tcpip.ErrNoBufferSpace{}
	}
	region := q.q.Region()
	l4 := e.cfg.hdrLen + len(pkt.NetworkHeader().Slice())
	var bytes uint64
	var offs []packetio.Offload // nil: an ordinary Transmit
	if q.off != nil {
		offs = q.offloads(frames)
	}
	if segs > 1 {
		// Cut here; a device that finishes checksums gets each
		// segment's pseudo-header sum and a checksum request.
		bytes = q.segment(pkt, descs, region, offs, packetio.Offload{Flags: packetio.OffloadNeedsCsum, CsumStart: uint16(l4), CsumOff: uint16(gso.CsumOffset)})
		st.gsoPackets.Add(1)
		st.gsoFrames.Add(uint64(segs))
	} else {
		bytes = q.whole(pkt, descs, region, offs, l4, isTCPGSO)
	}
	var accepted int
	if offs != nil {
		var err error
		accepted, err = q.off.TransmitOffload(descs, offs)
		if err != nil {
			q.q.Free(descs)
			st.txDropped.Add(uint64(segs))
			e.fail(fmt.Errorf("netstack: transmit queue %d: %w", q.idx, err))
			return &tcpip.ErrClosedForSend{}
		}
		for _, o := range offs[:accepted] {
			if o.Segmented() {
				st.offloadPackets.Add(1)
			} else if o.Flags&packetio.OffloadNeedsCsum != 0 {
				st.offloadChecksums.Add(1)
			}
		}
	} else {
		accepted = q.q.Transmit(descs)
	}
	if accepted < frames {
		q.q.Free(descs[accepted:])
		if accepted == 0 {
			st.txDropped.Add(uint64(frames))
			if err := q.q.Err(); err != nil {
				e.fail(fmt.Errorf("netstack: transmit queue %d: %w", q.idx, err))
				return &tcpip.ErrClosedForSend{}
			}
			return &tcpip.ErrNoBufferSpace{}
		}
		// Part of a segmented packet left: the packet counts as sent and
		// TCP retransmits the tail it does not see acknowledged.
		st.txPartial.Add(1)
		st.txDropped.Add(uint64(frames - accepted))
	}
	st.txChained.Add(uint64(chains))
	st.txPackets.Add(1)
	st.txFrames.Add(uint64(accepted))
	st.txBytes.Add(bytes)
	return nil
}

// room completes finished frames and waits, up to Config.TxWait, until the
// queue can take n frames. It reports false on timeout or a dead queue.
func (q *txQueue) room(n int) bool {
	var deadline time.Time
	var naps spinwait.Backoff
	for spins := 0; ; spins++ {
		q.q.Complete(q.q.NumCompleted())
		if min(q.q.NumFreeSlots(), q.q.NumFreeFrames()) >= n {
			return true
		}
		if err := q.q.Err(); err != nil {
			q.e.fail(fmt.Errorf("netstack: transmit queue %d: %w", q.idx, err))
			return false
		}
		now := time.Now()
		if deadline.IsZero() {
			q.e.stats.txWaits.Add(1)
			deadline = now.Add(q.e.cfg.TxWait)
		} else if now.After(deadline) {
			return false
		}
		if spins < 16 {
			runtime.Gosched()
		} else {
			spinwait.Sleep(naps.Next())
		}
	}
}

// offloadFor describes a TCP packet to a device that finishes checksums
// and, when segment is true, cuts segments. The checksum field holds the
// pseudo-header sum the stack put there.
func offloadFor(gso stack.GSO, l4, hdrLen, dataLen int, segment bool) packetio.Offload {
	o := packetio.Offload{
		Flags:     packetio.OffloadNeedsCsum,
		HdrLen:    uint16(hdrLen),
		CsumStart: uint16(l4),
		CsumOff:   uint16(gso.CsumOffset),
	}
	if segment && dataLen > int(gso.MSS) {
		o.GSOType = packetio.OffloadGSOTCPv4
		if gso.Type == stack.GSOTCPv6 {
			o.GSOType = packetio.OffloadGSOTCPv6
		}
		o.GSOSize = gso.MSS
	}
	return o
}

// segment cuts a TCP packet bigger than its MSS into segments, straight
// into descs (a frame each, or a chain of frames for a segment longer than
// a frame), and returns the bytes built. Each segment gets its own IP
// length (and IPv4 ID and header checksum), sequence number and TCP
// checksum; FIN and PSH stay on the last segment only, CWR on the first.
// With offs (one per descriptor, zeroed) the TCP checksum field gets only
// the pseudo-header sum and the first descriptor of each segment req, for
// the device to finish (CHECKSUM_PARTIAL).
func (q *txQueue) segment(pkt *stack.PacketBuffer, descs []packetio.Desc, region packetio.Region, offs []packetio.Offload, req packetio.Offload) uint64 {
	e := q.e
	lh := e.cfg.hdrLen
	nh := len(pkt.NetworkHeader().Slice())
	th := len(pkt.TransportHeader().Slice())
	hl := lh + nh + th
	v6 := pkt.GSOOptions.Type == stack.GSOTCPv6
	mss := int(pkt.GSOOptions.MSS)

	c := newCursor(pkt)
	hdr := q.hdr[:hl]
	c.read(hdr)
	ip := hdr[lh : lh+nh]
	tcp := header.TCP(hdr[lh+nh:])
	seq := tcp.SequenceNumber()
	flags := tcp.Flags()
	var id uint16
	if !v6 {
		id = binary.BigEndian.Uint16(ip[4:])
	}
	addrSum := ipAddrSum(ip, v6)

	left := pkt.Data().Size()
	var bytes uint64
	for i, d := 0, 0; left > 0; i++ {
		chunk := min(mss, left)
		left -= chunk
		n := hl + chunk
		chain := descs[d : d+e.framesFor(n)]
		frame := region.Writable(chain[0])
		copy(frame, hdr)
		e.spread(&c, chain, region, hl, n)
		fip := frame[lh : lh+nh]
		if v6 {
			binary.BigEndian.PutUint16(fip[4:], uint16(th+chunk))
		} else {
			binary.BigEndian.PutUint16(fip[2:], uint16(nh+th+chunk))
			binary.BigEndian.PutUint16(fip[4:], id+uint16(i))
			fip[10], fip[11] = 0, 0
			binary.BigEndian.PutUint16(fip[10:], ^checksum.Checksum(fip, 0))
		}
		ft := header.TCP(frame[lh+nh : hl])
		ft.SetSequenceNumber(seq + uint32(i*mss))
		f := flags
		if left > 0 {
			f &^= header.TCPFlagFin | header.TCPFlagPsh
		}
		if i > 0 {
			f &^= header.TCPFlagCwr
		}
		ft.SetFlags(uint8(f))
		sum := pseudoSum(addrSum, uint8(header.TCPProtocolNumber), th+chunk)
		if offs != nil {
			ft.SetChecksum(sum)
			offs[d] = req
		} else {
			ft.SetChecksum(0)
			ft.SetChecksum(^chainSum(chain, region, lh+nh, sum))
		}
		if n < minFrame {
			clear(frame[n:minFrame])
			n = minFrame
			chain[0].Len = uint32(n)
		}
		bytes += uint64(n)
		d += len(chain)
	}
	return bytes
}

// whole sends one packet uncut: one frame, a super-frame with offload
// metadata, or a chain of frames for a packet longer than a frame. A TCP
// packet's checksum is left to the device (offs, zeroed, one per
// descriptor: the request rides the first) or finished here. It returns
// the bytes built.
func (q *txQueue) whole(pkt *stack.PacketBuffer, descs []packetio.Desc, region packetio.Region, offs []packetio.Offload, l4 int, tcpGSO bool) uint64 {
	e := q.e
	c := newCursor(pkt)
	n := pkt.Size()
	e.spread(&c, descs, region, 0, n)
	first := region.Writable(descs[0])
	if tcpGSO {
		if offs != nil {
			offs[0] = offloadFor(pkt.GSOOptions, l4, pkt.HeaderSize(), pkt.Data().Size(), e.segOffload)
		} else {
			v6 := pkt.GSOOptions.Type == stack.GSOTCPv6
			t := header.TCP(first[l4:])
			t.SetChecksum(0)
			sum := pseudoSum(ipAddrSum(first[e.cfg.hdrLen:l4], v6), uint8(header.TCPProtocolNumber), n-l4)
			t.SetChecksum(^chainSum(descs, region, l4, sum))
		}
	}
	if n < minFrame {
		clear(first[n:minFrame])
		n = minFrame
		descs[0].Len = uint32(n)
	}
	return uint64(n)
}

// spread reads bytes start to n of a packet from c into chain, e.chunk
// bytes a frame (the last takes the rest), and sets each descriptor's Len
// and OptContinued on all but the last. Bytes before start are the
// caller's, already in the first frame.
func (e *endpoint) spread(c *cursor, chain []packetio.Desc, region packetio.Region, start, n int) {
	for j := range chain {
		lo, hi := j*e.chunk, n
		chain[j].Options &^= packetio.OptContinued
		if j < len(chain)-1 {
			hi = lo + e.chunk
			chain[j].Options |= packetio.OptContinued
		}
		f := region.Writable(chain[j])
		c.read(f[max(lo, start)-lo : hi-lo])
		chain[j].Len = uint32(hi - lo)
	}
}

// chainSum adds to sum the bytes of chain from offset from in its first
// frame to its end. Every frame but the last carries an even count
// (e.chunk, and from is even), so the frames' sums add up.
func chainSum(chain []packetio.Desc, region packetio.Region, from int, sum uint16) uint16 {
	for j, d := range chain {
		f := region.Writable(d)[:d.Len]
		if j == 0 {
			f = f[from:]
		}
		sum = checksum.Checksum(f, sum)
	}
	return sum
}

// ipAddrSum is the checksum of an IP header's addresses, for the TCP
// pseudo-header.
func ipAddrSum(ip []byte, v6 bool) uint16 {
	if v6 {
		return checksum.Checksum(ip[8:40], 0)
	}
	return checksum.Checksum(ip[12:20], 0)
}

// cursor reads a packet's bytes view by view without gathering them.
type cursor struct {
	v   *buffer.View
	off int
}

func newCursor(pkt *stack.PacketBuffer) cursor {
	vl, skip := pkt.AsViewList()
	v := vl.Front()
	for v != nil && skip >= v.Size() {
		skip -= v.Size()
		v = v.Next()
	}
	return cursor{v: v, off: skip}
}

func (c *cursor) read(dst []byte) int {
	n := 0
	for n < len(dst) && c.v != nil {
		s := c.v.AsSlice()
		k := copy(dst[n:], s[c.off:])
		n += k
		c.off += k
		if c.off >= len(s) {
			c.v, c.off = c.v.Next(), 0
		}
	}
	return n
}
