package netstack

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/packetio/packetio"
)

// endpoint is gVisor's link endpoint over every queue of one packetio
// device. Receive runs one goroutine per receive queue (rx.go); transmit runs
// on whichever goroutine gVisor writes from, one at a time per queue (tx.go).
type endpoint struct {
	dev    packetio.Device
	caps   packetio.Capabilities
	cfg    *resolved
	mac    tcpip.LinkAddress
	mtu    atomic.Uint32
	gsoMax uint32
	gso    stack.SupportedGSO
	// segOffload is true when every transmit queue takes a 64 KiB TCP
	// packet as one frame and the device cuts the segments.
	segOffload bool
	// chunk is how many bytes of a packet one frame carries (even, for
	// checksums summed frame by frame); a longer packet leaves as a chain
	// of frames (OptContinued), where the device has MultiBuffer and the
	// MTU is above a frame.
	chunk int

	tx []*txQueue
	rx []*rxLoop

	// flows remembers which receive queue a flow last arrived on, indexed
	// by a hash that is the same for both directions, so replies leave on
	// the queue matching the one the flow arrives on. Entries hold queue+1;
	// 0 means unknown. Only used with more than one transmit queue.
	flows []atomic.Uint32

	mu         sync.Mutex
	dispatcher stack.NetworkDispatcher
	stop       chan struct{} // closed to stop the receive goroutines
	wg         sync.WaitGroup
	onClose    func()
	closed     bool

	fail  func(error) // reports a dead queue to the Stack
	stats counters
}

const flowTableSize = 4096

var (
	_ stack.LinkEndpoint = (*endpoint)(nil)
	_ stack.GSOEndpoint  = (*endpoint)(nil)
)

func newEndpoint(dev packetio.Device, cfg *resolved, fail func(error)) *endpoint {
	e := &endpoint{
		dev:  dev,
		caps: dev.Capabilities(),
		cfg:  cfg,
		mac:  tcpip.LinkAddress(cfg.mac),
		fail: fail,
	}
	e.mtu.Store(uint32(cfg.mtu))
	e.chunk = e.caps.MaxFrameSize &^ 1
	for i := 0; i < dev.NumTxQueues(); i++ {
		e.tx = append(e.tx, newTxQueue(e, i, dev.TxQueue(i)))
	}
	for i := 0; i < dev.NumRxQueues(); i++ {
		e.rx = append(e.rx, newRxLoop(e, i, dev.RxQueue(i)))
	}
	if len(e.tx) > 1 {
		e.flows = make([]atomic.Uint32, flowTableSize)
	}
	e.segOffload = e.allOffload()
	e.gso, e.gsoMax = e.chooseGSO()
	return e
}

// chooseGSO decides whether the stack may hand down TCP packets of up to
// 64 KiB. Every queue must be able to take the frames of the largest one at
// once: one frame each where the device segments (segOffload), else one per
// MSS-sized segment, with half of the smallest queue as the limit.
func (e *endpoint) chooseGSO() (stack.SupportedGSO, uint32) {
	if e.cfg.NoGSO {
		return stack.GSONotSupported, 0
	}
	if e.segOffload {
		return stack.HostGSOSupported, uint32(e.offloadGSOSize())
	}
	budget := 1 << 30
	for _, q := range e.tx {
		budget = min(budget, q.q.NumFreeSlots(), q.q.NumFreeFrames())
	}
	budget /= 2
	// The smallest MSS the stack uses is the IPv6 one: MTU less 60 bytes
	// of IPv6 and TCP headers, less up to 40 of TCP options.
	mss := e.cfg.mtu - 100
	size := min(1<<16, budget/e.framesFor(e.cfg.hdrLen+e.cfg.mtu)*mss)
	if budget < 2 || size <= e.cfg.mtu {
		return stack.GSONotSupported, 0
	}
	return stack.HostGSOSupported, uint32(size)
}

// gsoSlack is how far the largest TCP packet the stack builds for a GSO
// size G can exceed G, before the link header: gVisor's TCP takes at most
// G - 61 bytes of payload (header.TCPTotalHeaderMaximumSize + 1 below G)
// and adds up to 60 of TCP header and 60 of IP header.
const gsoSlack = 60 + 60 - (header.TCPTotalHeaderMaximumSize + 1)

// minOffloadGSO is the smallest GSO size worth handing a segmenting
// device; with frames too small for it the endpoint cuts segments itself.
const minOffloadGSO = 16 << 10

// offloadGSOSize is the GSO size for a segmenting device: the largest
// packet the stack then builds fits one frame.
func (e *endpoint) offloadGSOSize() int {
	return min(1<<16, e.caps.MaxFrameSize-e.cfg.hdrLen-gsoSlack)
}

// allOffload reports whether every transmit queue takes a TCP super-frame
// of the GSO size as one frame, with segmentation and checksum metadata. A
// device with checksum offload only (Capabilities().TxChecksumOffload
// without Offload, such as afxdp) does not: it refuses segmentation, and
// gets segments cut here with their checksums left to it.
func (e *endpoint) allOffload() bool {
	if !e.caps.Offload || e.offloadGSOSize() < minOffloadGSO {
		return false
	}
	for _, q := range e.tx {
		if q.off == nil {
			return false
		}
	}
	return len(e.tx) > 0
}

// MTU implements stack.LinkEndpoint.
func (e *endpoint) MTU() uint32 { return e.mtu.Load() }

// SetMTU implements stack.LinkEndpoint. It clamps to what a frame carries,
// or a chain of frames on a multi-buffer device.
func (e *endpoint) SetMTU(mtu uint32) {
	e.mtu.Store(min(mtu, uint32(maxPacketLen(e.caps)-e.cfg.hdrLen)))
}

// maxPacketLen is the longest packet, link header included, the stack may
// send on a device: a frame's worth, or on a multi-buffer device what the
// link carries (a chain of frames).
func maxPacketLen(caps packetio.Capabilities) int {
	if caps.MultiBuffer && caps.MaxTxLen > caps.MaxFrameSize {
		return caps.MaxTxLen
	}
	return caps.MaxFrameSize
}

// framesFor is how many frames a packet of n bytes, link header included,
// takes.
func (e *endpoint) framesFor(n int) int {
	if n <= e.caps.MaxFrameSize {
		return 1
	}
	return (n + e.chunk - 1) / e.chunk
}

// MaxHeaderLength implements stack.LinkEndpoint.
func (e *endpoint) MaxHeaderLength() uint16 { return uint16(e.cfg.hdrLen) }

// LinkAddress implements stack.LinkEndpoint.
func (e *endpoint) LinkAddress() tcpip.LinkAddress { return e.mac }

// SetLinkAddress implements stack.LinkEndpoint. The address is fixed by
// Config.MAC, so it does nothing.
func (e *endpoint) SetLinkAddress(tcpip.LinkAddress) {}

// Capabilities implements stack.LinkEndpoint. Receive checksums are
// verified by the endpoint before the stack sees a packet (or vouched for by
// the device), so the stack is told not to check them again; transmit
// checksums are finished by the endpoint or the device.
func (e *endpoint) Capabilities() stack.LinkEndpointCapabilities {
	return stack.CapabilityResolutionRequired | stack.CapabilityRXChecksumOffload
}

// GSOMaxSize implements stack.GSOEndpoint.
func (e *endpoint) GSOMaxSize() uint32 { return e.gsoMax }

// SupportedGSO implements stack.GSOEndpoint.
func (e *endpoint) SupportedGSO() stack.SupportedGSO { return e.gso }

// ARPHardwareType implements stack.LinkEndpoint.
func (e *endpoint) ARPHardwareType() header.ARPHardwareType { return header.ARPHardwareEther }

// Attach implements stack.LinkEndpoint: a dispatcher starts one receive
// goroutine per receive queue, nil stops them.
func (e *endpoint) Attach(d stack.NetworkDispatcher) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if d == nil {
		e.stopLocked()
		return
	}
	if e.closed || e.dispatcher != nil {
		return
	}
	e.dispatcher = d
	e.stop = make(chan struct{})
	for _, r := range e.rx {
		// The first Fill happens here, before Attach returns, so frames
		// that arrive as soon as the stack is up find buffers. The
		// goroutine takes the queue over from this one.
		r.q.Fill(r.q.NumFreeFillSlots())
		e.wg.Add(1)
		go r.run(d, e.stop)
	}
}

func (e *endpoint) stopLocked() {
	if e.dispatcher != nil {
		close(e.stop)
		e.dispatcher = nil
	}
}

// IsAttached implements stack.LinkEndpoint.
func (e *endpoint) IsAttached() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dispatcher != nil
}

// Wait implements stack.LinkEndpoint. It does not wait: gVisor calls it
// holding the stack's lock, which a receive goroutine may need to finish
// delivering a packet. Stack.Close waits for the receive goroutines with
// waitRx once the stack is torn down.
func (e *endpoint) Wait() {}

// waitRx waits for the receive goroutines to stop. Call it without any of
// gVisor's locks held, after Attach(nil) or Close.
func (e *endpoint) waitRx() { e.wg.Wait() }

// AddHeader implements stack.LinkEndpoint: an Ethernet header, 802.1Q
// tagged when Config.VLAN is set.
func (e *endpoint) AddHeader(pkt *stack.PacketBuffer) {
	dst := pkt.EgressRoute.RemoteLinkAddress
	if len(dst) != 6 {
		dst = header.EthernetBroadcastAddress
		e.stats.unknownMAC.Add(1)
	}
	h := pkt.LinkHeader().Push(e.cfg.hdrLen)
	copy(h[0:6], dst)
	copy(h[6:12], e.mac)
	if e.cfg.VLAN != 0 {
		binary.BigEndian.PutUint16(h[12:], etherTypeVLAN)
		binary.BigEndian.PutUint16(h[14:], e.cfg.VLAN)
		binary.BigEndian.PutUint16(h[16:], uint16(pkt.NetworkProtocolNumber))
		return
	}
	binary.BigEndian.PutUint16(h[12:], uint16(pkt.NetworkProtocolNumber))
}

// ParseHeader implements stack.LinkEndpoint.
func (e *endpoint) ParseHeader(pkt *stack.PacketBuffer) bool {
	h, ok := pkt.LinkHeader().Consume(e.cfg.hdrLen)
	if !ok {
		return false
	}
	pkt.NetworkProtocolNumber = tcpip.NetworkProtocolNumber(binary.BigEndian.Uint16(h[e.cfg.hdrLen-2:]))
	return true
}

// Close implements stack.LinkEndpoint. It stops receive and refuses further
// transmits; it never closes the device.
func (e *endpoint) Close() {
	e.mu.Lock()
	e.stopLocked()
	already := e.closed
	e.closed = true
	onClose := e.onClose
	e.mu.Unlock()
	if already {
		return
	}
	for _, q := range e.tx {
		q.mu.Lock()
		q.closed = true
		q.mu.Unlock()
	}
	if onClose != nil {
		onClose()
	}
}

// SetOnCloseAction implements stack.LinkEndpoint.
func (e *endpoint) SetOnCloseAction(f func()) {
	e.mu.Lock()
	e.onClose = f
	e.mu.Unlock()
}

// flowHash hashes an IP packet's addresses and ports so that both
// directions of one flow give the same value. It returns false for anything
// but TCP and UDP over IPv4, or over IPv6 without extension headers.
func flowHash(l3 []byte) (uint32, bool) {
	if len(l3) >= header.IPv4MinimumSize && l3[0]>>4 == 4 {
		ihl := int(l3[0]&0xf) * 4
		if ihl < header.IPv4MinimumSize || len(l3) < ihl {
			return 0, false
		}
		return flowHashParts(l3[:ihl], l3[ihl:])
	}
	if len(l3) >= header.IPv6MinimumSize {
		return flowHashParts(l3[:header.IPv6MinimumSize], l3[header.IPv6MinimumSize:])
	}
	return 0, false
}

// flowHashParts is flowHash on a network header and what follows it.
func flowHashParts(nh, l4 []byte) (uint32, bool) {
	var h uint32
	var proto uint8
	switch {
	case len(nh) >= header.IPv4MinimumSize && nh[0]>>4 == 4:
		proto = nh[9]
		h = binary.BigEndian.Uint32(nh[12:]) ^ binary.BigEndian.Uint32(nh[16:])
	case len(nh) >= header.IPv6MinimumSize && nh[0]>>4 == 6:
		proto = nh[6]
		for i := 8; i < 40; i += 4 {
			h ^= binary.BigEndian.Uint32(nh[i:])
		}
	default:
		return 0, false
	}
	if len(l4) < 4 || proto != uint8(header.TCPProtocolNumber) && proto != uint8(header.UDPProtocolNumber) {
		return 0, false
	}
	h ^= uint32(binary.BigEndian.Uint16(l4) ^ binary.BigEndian.Uint16(l4[2:]))
	h ^= uint32(proto)
	h *= 0x9e3779b1
	return h >> 20, true // 12 bits: flowTableSize entries
}

// etherTypeVLAN is the 802.1Q tag protocol identifier.
const etherTypeVLAN = 0x8100
