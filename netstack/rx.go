package netstack

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	gsync "gvisor.dev/gvisor/pkg/sync"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/stack/gro"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/spinwait"
)

// offloadDataValid is VIRTIO_NET_HDR_F_DATA_VALID in Offload.Flags: the
// kernel verified the packet's checksums (CHECKSUM_UNNECESSARY).
const offloadDataValid uint8 = 2

const (
	rxBatch = 64
	// lazyBatch is the largest batch delivered with lazy wake-ups (unless
	// Config.EagerWake): a request or an ACK or two, after which the loop
	// is about to sleep, so the processor goroutine it wakes and the
	// reader that goroutine wakes run on this thread. A larger batch means
	// a busy queue, whose processing is better started on another CPU at
	// once (1,000 connections sinking at once took 15% longer over afxdp
	// with every batch lazy).
	lazyBatch = 4
	// pollInterval is how long a blocking Poll sleeps before the loop
	// looks at its stop channel: the most Close waits for a receive
	// goroutine on a quiet link.
	pollInterval = 20 * time.Millisecond
	// errInterval is how often a quiet spinning loop asks the queue
	// whether it is dead.
	errInterval = time.Second
)

// rxLoop drives one receive queue on its own goroutine.
type rxLoop struct {
	e     *endpoint
	idx   int
	q     packetio.RxQueue
	off   packetio.OffloadReceiver // nil unless the device delivers offload metadata
	gro   gro.GRO
	disp  stack.NetworkDispatcher
	chain []byte // a chained packet being put together
	// lazy marks the batch being delivered for lazy wake-ups
	// (PacketBuffer.WakeLazily): the loop yields or sleeps after it.
	lazy bool
}

func newRxLoop(e *endpoint, i int, q packetio.RxQueue) *rxLoop {
	r := &rxLoop{e: e, idx: i, q: q}
	if o, ok := q.(packetio.OffloadReceiver); ok && e.caps.Offload {
		r.off = o
	}
	return r
}

func (r *rxLoop) run(d stack.NetworkDispatcher, stop <-chan struct{}) {
	defer r.e.wg.Done()
	r.disp = d
	r.gro.Init(!r.e.cfg.NoGRO)
	r.gro.Dispatcher = d
	blocking := r.e.caps.BlockingPoll
	spin := rxSpin{d: r.e.cfg.RxSpin}
	if !blocking {
		spin.d = 0 // the loop below never sleeps in Poll anyway
	}
	idle := 0
	var naps spinwait.Backoff // idle, after 256 yields: naps from 20 µs, doubling to 0.5 ms
	lastCheck := time.Now()
	for {
		select {
		case <-stop:
			return
		default:
		}
		r.q.Fill(r.q.NumFreeFillSlots())
		timeout := time.Duration(0)
		if blocking && !spin.on(time.Now()) {
			timeout = pollInterval
		}
		n, err := r.q.Poll(timeout)
		if n > 0 && r.lazy {
			// The goroutines the last batch woke wait for this thread
			// to sleep or yield: they run first (cheap, and nothing to
			// do if Poll slept and they ran meanwhile).
			gsync.Goyield()
		}
		if err != nil {
			select {
			case <-stop:
			default:
				r.e.fail(fmt.Errorf("netstack: receive queue %d: %w", r.idx, err))
			}
			return
		}
		if n == 0 {
			if blocking && timeout == 0 {
				runtime.Gosched() // spinning: the stack's goroutines run meanwhile
			}
			if !blocking {
				idle++
				if idle > 256 {
					spinwait.Sleep(naps.Next())
				} else {
					runtime.Gosched()
				}
			}
			if now := time.Now(); now.Sub(lastCheck) > errInterval {
				lastCheck = now
				if err := r.q.Err(); err != nil {
					r.e.fail(fmt.Errorf("netstack: receive queue %d: %w", r.idx, err))
					return
				}
			}
			continue
		}
		idle = 0
		naps.Reset()
		spin.batch(time.Now())
		var descs []packetio.Desc
		var offs []packetio.Offload
		if r.off != nil {
			descs, offs = r.off.ReceiveOffload(rxBatch)
		} else {
			descs = r.q.Receive(rxBatch)
		}
		r.lazy = !r.e.cfg.EagerWake && len(descs) <= lazyBatch
		r.batch(descs, offs)
		r.gro.Flush()
		r.q.Recycle(descs)
	}
}

// rxSpin decides when a receive loop on a blocking device looks at its
// queue again instead of sleeping in Poll: for up to d after a batch that
// came less than d after the one before it. Packets arriving that close
// together mean a busy queue, whose next batch is likely within d, found
// without the sleep and the wake-up (a context switch each); a lone packet
// (a request, a keepalive) ends no spin, so a quiet or request/response
// queue sleeps at once.
type rxSpin struct {
	d    time.Duration // Config.RxSpin; 0 never spins
	last time.Time     // when the last batch came
	busy bool          // it came less than d after the one before
}

// batch notes a batch received at now.
func (s *rxSpin) batch(now time.Time) {
	if s.d <= 0 {
		return
	}
	s.busy = now.Sub(s.last) < s.d
	s.last = now
}

// on reports whether the loop should look again at now without sleeping.
func (s *rxSpin) on(now time.Time) bool {
	return s.busy && now.Sub(s.last) < s.d
}

// maxPacket is the longest packet taken: a 64 KiB IP packet with an
// 802.1Q-tagged Ethernet header.
const maxPacket = 1<<16 + 18

// batch delivers one Receive's worth of frames. A packet spread over
// several frames (OptContinued) is copied together first; the device
// delivers chains whole, so one never spans two batches.
func (r *rxLoop) batch(descs []packetio.Desc, offs []packetio.Offload) {
	region := r.q.Region()
	st := &r.e.stats
	inChain, chainBad := false, false
	var chainOpts uint32
	var chainOff packetio.Offload
	for i, d := range descs {
		var off packetio.Offload
		if offs != nil {
			off = offs[i]
		}
		frame := region.Frame(d)
		if d.Options&packetio.OptContinued != 0 || inChain {
			if !inChain {
				inChain, chainBad = true, false
				chainOpts, chainOff = d.Options, off
				r.chain = r.chain[:0]
			}
			if frame == nil || len(r.chain)+len(frame) > maxPacket {
				chainBad = true
			} else if !chainBad {
				r.chain = append(r.chain, frame...)
			}
			if d.Options&packetio.OptContinued != 0 {
				continue
			}
			inChain = false
			if chainBad {
				st.rxTooLong.Add(1)
				continue
			}
			st.rxChained.Add(1)
			r.deliver(r.chain, chainOpts&^packetio.OptContinued, chainOff)
			continue
		}
		if frame == nil {
			st.rxRunt.Add(1)
			continue
		}
		r.deliver(frame, d.Options, off)
	}
	if inChain {
		st.rxTooLong.Add(1) // a chain cut short: never delivered half
	}
}

// deliver checks one frame, copies it into a gVisor buffer and hands it to
// the stack (through GRO for IP).
func (r *rxLoop) deliver(frame []byte, opts uint32, off packetio.Offload) {
	e := r.e
	st := &e.stats
	if len(frame) < 14 {
		st.rxRunt.Add(1)
		return
	}
	var pktType tcpip.PacketType
	switch {
	case [6]byte(frame[0:6]) == [6]byte(e.cfg.mac):
		pktType = tcpip.PacketHost
	case [6]byte(frame[0:6]) == [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}:
		pktType = tcpip.PacketBroadcast
	case frame[0]&1 != 0:
		pktType = tcpip.PacketMulticast
	default:
		st.rxOtherHost.Add(1)
		return
	}
	if [6]byte(frame[6:12]) == [6]byte(e.cfg.mac) {
		st.rxOwnEcho.Add(1)
		return
	}
	hdrLen := 14
	etype := binary.BigEndian.Uint16(frame[12:])
	if etype == etherTypeVLAN {
		if len(frame) < 18 || e.cfg.VLAN == 0 || binary.BigEndian.Uint16(frame[14:])&0xfff != e.cfg.VLAN {
			st.rxWrongVLAN.Add(1)
			return
		}
		hdrLen = 18
		etype = binary.BigEndian.Uint16(frame[16:])
	} else if e.cfg.VLAN != 0 {
		st.rxWrongVLAN.Add(1)
		return
	}
	proto := tcpip.NetworkProtocolNumber(etype)
	l3 := frame[hdrLen:]
	split := 0
	// Trusted: the device checked the checksums, or the packet never
	// crossed a wire as it is: the kernel built it and left its checksum
	// to be finished (NEEDS_CSUM), vouched for it (DATA_VALID), or merged
	// it from segments it had checked (a super-frame, whose checksum field
	// is not recomputed).
	trusted := opts&packetio.OptChecksumOK != 0 ||
		off.Flags&(packetio.OffloadNeedsCsum|offloadDataValid) != 0 || off.Segmented()
	switch proto {
	case header.IPv4ProtocolNumber:
		n, l4, ok := r.checkIPv4(l3, trusted || opts&packetio.OptL3ChecksumOK != 0, trusted)
		if !ok {
			return
		}
		l3 = l3[:n]
		split = payloadStart(l3, l3[9], l4)
	case header.IPv6ProtocolNumber:
		n, l4, next, ok := r.checkIPv6(l3, trusted)
		if !ok {
			return
		}
		l3 = l3[:n]
		split = payloadStart(l3, next, l4)
	case header.ARPProtocolNumber:
	default:
		st.rxNotIP.Add(1)
		return
	}
	if off.Segmented() {
		st.rxSuperFrames.Add(1)
	}
	if e.flows != nil && proto != header.ARPProtocolNumber {
		if h, ok := flowHash(l3); ok {
			e.flows[h].Store(uint32(r.idx) + 1)
		}
	}
	n := hdrLen + len(l3)
	st.rxPackets.Add(1)
	st.rxBytes.Add(uint64(n))

	// The one copy: from the device's frame into pooled gVisor views. A
	// packet with a sizeable payload gets its headers and its payload in
	// two views: gVisor clones the whole chunk holding the network header
	// when it reads that header while it holds another reference to it,
	// which would copy a 64 KiB super-frame a second time.
	var payload buffer.Buffer
	if split > 0 && len(l3)-split >= splitMin {
		payload = buffer.MakeWithView(buffer.NewViewWithData(frame[:hdrLen+split]))
		payload.Append(buffer.NewViewWithData(frame[hdrLen+split : n]))
	} else {
		payload = buffer.MakeWithView(buffer.NewViewWithData(frame[:n]))
	}
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: payload})
	pkt.LinkHeader().Consume(hdrLen)
	pkt.NetworkProtocolNumber = proto
	pkt.PktType = pktType
	pkt.Hash = uint32(r.idx)
	pkt.RXChecksumValidated = true
	pkt.WakeLazily = r.lazy
	if proto == header.ARPProtocolNumber {
		r.disp.DeliverNetworkPacket(proto, pkt)
	} else {
		r.gro.Enqueue(pkt)
	}
	pkt.DecRef()
}

// checkIPv4 validates an IPv4 packet and its TCP or UDP checksum and
// returns its length without Ethernet padding. Fragments are dropped: their
// transport checksum cannot be checked here, and the stack is told every
// packet it gets was checked.
func (r *rxLoop) checkIPv4(p []byte, l3ok, l4ok bool) (total, l4 int, ok bool) {
	st := &r.e.stats
	if len(p) < header.IPv4MinimumSize || p[0]>>4 != 4 {
		st.rxRunt.Add(1)
		return 0, 0, false
	}
	ihl := int(p[0]&0xf) * 4
	total = int(binary.BigEndian.Uint16(p[2:]))
	if ihl < header.IPv4MinimumSize || total < ihl || total > len(p) {
		st.rxRunt.Add(1)
		return 0, 0, false
	}
	if binary.BigEndian.Uint16(p[6:])&0x3fff != 0 {
		st.rxFragments.Add(1)
		return 0, 0, false
	}
	if !l3ok && checksum.Checksum(p[:ihl], 0) != 0xffff {
		st.rxBadCsum.Add(1)
		return 0, 0, false
	}
	if !l4ok && !l4Valid(p[9], p[ihl:total], checksum.Checksum(p[12:20], 0), false) {
		st.rxBadCsum.Add(1)
		return 0, 0, false
	}
	return total, ihl, true
}

// checkIPv6 is checkIPv4 for IPv6: it walks the extension headers to the
// transport header and drops fragments.
func (r *rxLoop) checkIPv6(p []byte, l4ok bool) (total, l4 int, next uint8, ok bool) {
	st := &r.e.stats
	if len(p) < header.IPv6MinimumSize || p[0]>>4 != 6 {
		st.rxRunt.Add(1)
		return 0, 0, 0, false
	}
	total = header.IPv6MinimumSize + int(binary.BigEndian.Uint16(p[4:]))
	if total > len(p) || total == header.IPv6MinimumSize && p[6] == 0 {
		st.rxRunt.Add(1) // includes jumbograms, which the stack does not take
		return 0, 0, 0, false
	}
	next, off := p[6], header.IPv6MinimumSize
	for {
		switch next {
		case 0, 43, 60: // hop-by-hop, routing, destination options
			if off+8 > total {
				st.rxRunt.Add(1)
				return 0, 0, 0, false
			}
			next, off = p[off], off+(int(p[off+1])+1)*8
			continue
		case 44: // fragment
			st.rxFragments.Add(1)
			return 0, 0, 0, false
		}
		break
	}
	if off > total {
		st.rxRunt.Add(1)
		return 0, 0, 0, false
	}
	if !l4ok && !l4Valid(next, p[off:total], checksum.Checksum(p[8:40], 0), true) {
		st.rxBadCsum.Add(1)
		return 0, 0, 0, false
	}
	return total, off, next, true
}

// splitMin is the smallest transport payload that gets a view of its own.
const splitMin = 1024

// payloadStart returns where the TCP or UDP payload of an IP packet starts,
// or 0 when the packet is neither or its header does not fit.
func payloadStart(l3 []byte, proto uint8, l4 int) int {
	switch tcpip.TransportProtocolNumber(proto) {
	case header.TCPProtocolNumber:
		if l4+header.TCPMinimumSize > len(l3) {
			return 0
		}
		end := l4 + int(l3[l4+12]>>4)*4
		if end < l4+header.TCPMinimumSize || end > len(l3) {
			return 0
		}
		return end
	case header.UDPProtocolNumber:
		if l4+header.UDPMinimumSize > len(l3) {
			return 0
		}
		return l4 + header.UDPMinimumSize
	}
	return 0
}

// l4Valid checks a TCP or UDP checksum; other protocols pass (the stack
// checks ICMP itself). addrSum is the sum of the source and destination
// addresses.
func l4Valid(proto uint8, l4 []byte, addrSum uint16, v6 bool) bool {
	switch tcpip.TransportProtocolNumber(proto) {
	case header.TCPProtocolNumber:
		if len(l4) < header.TCPMinimumSize {
			return false
		}
	case header.UDPProtocolNumber:
		if len(l4) < header.UDPMinimumSize {
			return false
		}
		if binary.BigEndian.Uint16(l4[6:]) == 0 {
			return !v6 // no checksum: allowed on IPv4 only
		}
	default:
		return true
	}
	return checksum.Checksum(l4, pseudoSum(addrSum, proto, len(l4))) == 0xffff
}

// pseudoSum adds the protocol and length of the pseudo-header to the sum of
// its addresses.
func pseudoSum(addrSum uint16, proto uint8, length int) uint16 {
	s := checksum.Combine(addrSum, uint16(proto))
	return checksum.Combine(s, uint16(length))
}
