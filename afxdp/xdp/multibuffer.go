package xdp

import "golang.org/x/sys/unix"

// maxRxSegs bounds a received chain. The kernel builds none longer than
// MAX_SKB_FRAGS+1 (18); a longer run of XDP_PKT_CONTD is not a packet and is
// dropped and counted rather than held for ever.
const maxRxSegs = 64

// Packet is one received packet as its chain of descriptors, in wire order:
// every descriptor but the last carries XDP_PKT_CONTD. Without
// WithMultiBuffer every Packet has one descriptor.
type Packet []Desc

// Len is the packet's length: the sum of its descriptors' lengths.
func (p Packet) Len() int {
	n := 0
	for _, d := range p {
		n += int(d.Len)
	}
	return n
}

// ReceivePackets receives up to maxFrames descriptors and returns them
// grouped into whole packets. A chain whose last descriptor has not arrived
// is held inside the socket and returned whole by a later call, never
// truncated. The slices belong to the socket and are reused by the next
// receive call; recycle with RecyclePackets or Recycle.
func (s *Socket) ReceivePackets(maxFrames int) []Packet {
	if maxFrames <= 0 || s.r.ring.ents == nil || !s.enterRx() {
		return nil
	}
	defer s.exitRx()
	descs := s.receive(maxFrames)
	// The held partial chain comes first, then the new descriptors, in
	// one of two buffers taken in turn: the packets of the previous call
	// stay intact until this one returns.
	s.r.mbi ^= 1
	buf := append(s.r.mbuf[s.r.mbi][:0], s.r.held[:s.r.nheld]...)
	buf = append(buf, descs...)
	s.r.mbuf[s.r.mbi] = buf
	s.r.pkts = s.r.pkts[:0]
	start := 0
	for i, d := range buf {
		if d.Options&unix.XDP_PKT_CONTD != 0 {
			if i+1-start >= maxRxSegs {
				s.dropChain(buf[start : i+1])
				start = i + 1
			}
			continue
		}
		s.r.pkts = append(s.r.pkts, Packet(buf[start:i+1:i+1]))
		start = i + 1
	}
	s.r.nheld = copy(s.r.held[:], buf[start:])
	return s.r.pkts
}

// dropChain recycles a run of descriptors that never ended.
func (s *Socket) dropChain(chain []Desc) {
	for _, d := range chain {
		s.r.pool.Push(s.umem.base(d.Addr))
	}
	s.r.st.rejected.Add(uint64(len(chain)))
}

// RecyclePackets returns the frames of received packets to the receive
// pool.
func (s *Socket) RecyclePackets(pkts []Packet) {
	for _, p := range pkts {
		s.Recycle(p)
	}
}

// CopyOut copies packet p into dst and returns the bytes copied: all of
// them, or len(dst) when dst is shorter.
func (s *Socket) CopyOut(p Packet, dst []byte) int {
	n := 0
	for _, d := range p {
		b := s.GetFrame(d)
		if b == nil {
			break
		}
		k := copy(dst[n:], b)
		n += k
		if k < len(b) {
			break
		}
	}
	return n
}
