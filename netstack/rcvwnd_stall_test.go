package netstack

import (
	"context"
	"sync"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/link/channel"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// TestRcvWindowBelowScaleUnitStall drives one gVisor stack by hand into the
// state that stalled 64 MiB echoes over afxdp for good (README, "An echo
// could stall for good"): the stack's remaining receive window (RcvAcc -
// RcvNxt) is below one window-scale unit, so its ACK advertises a window
// of 0, while the peer still has bytes in flight inside the window the
// stack offered earlier, and the stack has data of its own unacknowledged.
// Then it sends the peer's pure ACK of the stack's data (its sequence
// number is the peer's SND.NXT, past RcvNxt by the bytes in flight) and the
// in-flight bytes, and checks the stack takes both: SndUna and RcvNxt move.
//
// Unpatched gVisor (third_party/gvisor/patches/0001-*) rounds the remaining
// window down to whole scale units in receiver.acceptable, finds it zero,
// and drops both: RcvNxt and SndUna stay where they are, and on a real
// connection both ends back off their retransmission timers for good.
func TestRcvWindowBelowScaleUnitStall(t *testing.T) {
	h := newRcvWndHarness(t, false)
	defer h.close()

	// The stack has 1,000 bytes of its own in flight, unacknowledged.
	h.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := h.conn.Write(make([]byte, 1000)); err != nil {
		t.Fatalf("write: %v", err)
	}
	stackData := h.expectData(t)
	if stackData != 1000 {
		t.Fatalf("stack sent %d bytes, want 1000", stackData)
	}

	// The peer sends as a sender would, MSS-sized segments inside the
	// window it was offered, never acknowledging the stack's data, until
	// the stack's remaining window is below one scale unit with some of
	// the offered window still unused by the peer.
	unit := seqnum.Size(1) << h.wndScale
	h.sendAck(t, h.peerNxt, h.peerAck) // a first segment for the probe to record
	var st rcvWndState
	for i := 0; ; i++ {
		st = h.state(t)
		rem := st.RcvNxt.Size(st.RcvAcc)
		avail := h.peerNxt.Size(h.peerEdge)
		if h.peerEdge.LessThanEq(h.peerNxt) {
			avail = 0
		}
		if rem > 0 && rem < unit && avail > 0 && h.lastWnd == 0 {
			break
		}
		if i == 2000 || avail <= 1 {
			t.Fatalf("setup: after %d segments the stack's remaining window is %d (unit %d), the peer may still send %d, last advertised window field %d: the state under test was not reached",
				i, rem, unit, avail, h.lastWnd)
		}
		n := min(avail-1, 1400)
		h.sendData(t, int(n))
		h.waitAck(t, h.peerNxt)
	}
	rem := st.RcvNxt.Size(st.RcvAcc)
	inFlight := min(h.peerNxt.Size(h.peerEdge), rem)
	t.Logf("stack: RcvNxt+%d = RcvAcc (unit %d), advertised window field 0; peer: %d bytes in flight, the stack's %d unacknowledged",
		rem, unit, inFlight, stackData)

	// The bytes in flight are the peer's; the stack has not seen them yet
	// (lost, or crossing its ACK). First the peer's pure ACK of the
	// stack's data, which carries the peer's SND.NXT.
	flightSeq := h.peerNxt
	h.peerNxt = h.peerNxt.Add(inFlight)
	h.sendAck(t, h.peerNxt, h.stackNxt)
	st = h.waitState(t, func(s rcvWndState) bool { return s.SndUna == h.stackNxt })
	if st.SndUna != h.stackNxt {
		t.Errorf("pure ACK with seq RcvNxt+%d inside the advertised window was dropped: SndUna = %d, want %d", inFlight, st.SndUna, h.stackNxt)
	}

	// Then the bytes in flight themselves (a retransmission, say).
	h.send(t, flightSeq, h.stackNxt, header.TCPFlagAck|header.TCPFlagPsh, make([]byte, inFlight))
	want := flightSeq.Add(inFlight)
	st = h.waitState(t, func(s rcvWndState) bool { return s.RcvNxt == want })
	if st.RcvNxt != want {
		t.Errorf("%d bytes inside the advertised window were dropped: RcvNxt = %d, want %d", inFlight, st.RcvNxt, want)
	}
}

const (
	rcvWndStackAddr = "\x0a\x00\x00\x01"
	rcvWndPeerAddr  = "\x0a\x00\x00\x02"
	rcvWndPort      = 80
	rcvWndPeerPort  = 40000
)

// rcvWndState is what the test reads of the connection's TCP state.
type rcvWndState struct {
	RcvNxt, RcvAcc, SndUna seqnum.Value
}

// rcvWndHarness is one gVisor stack on a channel link endpoint with an
// accepted connection whose peer the test plays by hand.
type rcvWndHarness struct {
	s    *stack.Stack
	ch   *channel.Endpoint
	l    *gonet.TCPListener
	conn *gonet.TCPConn

	mu     sync.Mutex
	last   rcvWndState
	seen   bool
	update chan struct{}

	wndScale uint8
	peerNxt  seqnum.Value // the peer's SND.NXT
	peerEdge seqnum.Value // the right edge the stack advertised, largest seen
	stackNxt seqnum.Value // the stack's SND.NXT, as the peer saw it
	peerAck  seqnum.Value // what the peer acknowledges while it fills the window
	lastWnd  uint16       // window field of the stack's last segment
}

// newRcvWndHarness builds the stack, with host GSO on its link when gso is
// set (segments of up to 32 KiB, the channel endpoint's limit), applies
// opts to its TCP, and accepts one connection from the hand-played peer.
func newRcvWndHarness(t *testing.T, gso bool, opts ...tcpip.SettableTransportProtocolOption) *rcvWndHarness {
	t.Helper()
	h := &rcvWndHarness{update: make(chan struct{}, 1)}
	h.s = stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocolProbe(h.probe)},
	})
	// A 64 MiB maximum makes the window scale 10 (1 KiB units), as the
	// stack's 4 MiB buffers with auto-tuning do; the connection itself
	// starts, and stays (its application does not read), at 64 KiB.
	rng := tcpip.TCPReceiveBufferSizeRangeOption{Min: 4096, Default: 64 << 10, Max: 64 << 20}
	mod := tcpip.TCPModerateReceiveBufferOption(true)
	for _, opt := range append([]tcpip.SettableTransportProtocolOption{&rng, &mod}, opts...) {
		if err := h.s.SetTransportProtocolOption(tcp.ProtocolNumber, opt); err != nil {
			t.Fatalf("SetTransportProtocolOption(%T): %v", opt, err)
		}
	}
	h.ch = channel.New(1024, 1500, "")
	if gso {
		h.ch.SupportedGSOKind = stack.HostGSOSupported
	}
	if err := h.s.CreateNIC(1, h.ch); err != nil {
		t.Fatalf("CreateNIC: %v", err)
	}
	addr := tcpip.AddrFromSlice([]byte(rcvWndStackAddr))
	if err := h.s.AddProtocolAddress(1, tcpip.ProtocolAddress{
		Protocol:          ipv4.ProtocolNumber,
		AddressWithPrefix: addr.WithPrefix(),
	}, stack.AddressProperties{}); err != nil {
		t.Fatalf("AddProtocolAddress: %v", err)
	}
	h.s.SetRouteTable([]tcpip.Route{{Destination: header.IPv4EmptySubnet, NIC: 1}})
	l, err := gonet.ListenTCP(h.s, tcpip.FullAddress{NIC: 1, Addr: addr, Port: rcvWndPort}, ipv4.ProtocolNumber)
	if err != nil {
		h.s.Close()
		t.Fatalf("ListenTCP: %v", err)
	}
	h.l = l

	// Handshake: SYN with MSS 1460 and window scale 7, then the SYN-ACK.
	iss := seqnum.Value(1000)
	synOpts := make([]byte, 8)
	header.EncodeMSSOption(1460, synOpts)
	synOpts[4] = header.TCPOptionNOP
	header.EncodeWSOption(7, synOpts[5:])
	h.sendOpts(t, iss, 0, header.TCPFlagSyn, synOpts, nil)
	synAck := h.read(t)
	if synAck.Flags() != header.TCPFlagSyn|header.TCPFlagAck {
		h.close()
		t.Fatalf("want SYN-ACK, got flags %v", synAck.Flags())
	}
	syn := header.ParseSynOptions(synAck.Options(), true)
	if syn.WS < 10 {
		h.close()
		t.Fatalf("stack's window scale %d, want at least 10", syn.WS)
	}
	h.wndScale = uint8(syn.WS)
	h.peerNxt = iss + 1
	h.stackNxt = seqnum.Value(synAck.SequenceNumber()) + 1
	h.peerAck = h.stackNxt
	h.peerEdge = h.peerNxt.Add(seqnum.Size(synAck.WindowSize())) // unscaled in a SYN
	h.sendAck(t, h.peerNxt, h.stackNxt)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan struct{})
	var conn *gonet.TCPConn
	var aerr error
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err == nil {
			conn = c.(*gonet.TCPConn)
		}
		aerr = err
	}()
	select {
	case <-done:
	case <-ctx.Done():
		h.close()
		<-done
		t.Fatal("accept timed out")
	}
	if aerr != nil {
		h.close()
		t.Fatalf("accept: %v", aerr)
	}
	h.conn = conn
	return h
}

func (h *rcvWndHarness) close() {
	if h.conn != nil {
		h.conn.Close()
	}
	h.l.Close()
	h.s.Close()
	h.s.Wait()
	h.ch.Close()
}

// probe records the connection's state after every segment it handles.
func (h *rcvWndHarness) probe(st *tcp.TCPEndpointState) {
	if st.ID.LocalPort != rcvWndPort || st.ID.RemotePort != rcvWndPeerPort {
		return
	}
	h.mu.Lock()
	h.last = rcvWndState{RcvNxt: st.Receiver.RcvNxt, RcvAcc: st.Receiver.RcvAcc, SndUna: st.Sender.SndUna}
	h.seen = true
	h.mu.Unlock()
	select {
	case h.update <- struct{}{}:
	default:
	}
}

func (h *rcvWndHarness) state(t *testing.T) rcvWndState {
	t.Helper()
	deadline := time.After(time.Second)
	for {
		h.mu.Lock()
		st, seen := h.last, h.seen
		h.mu.Unlock()
		if seen {
			return st
		}
		select {
		case <-h.update:
		case <-deadline:
			t.Fatal("no state recorded for the connection")
		}
	}
}

// waitState waits up to a second for the connection's state to satisfy ok
// and returns the last state seen.
func (h *rcvWndHarness) waitState(t *testing.T, ok func(rcvWndState) bool) rcvWndState {
	t.Helper()
	deadline := time.After(time.Second)
	for {
		st := h.state(t)
		if ok(st) {
			return st
		}
		select {
		case <-h.update:
		case <-deadline:
			return h.state(t)
		}
	}
}

// read returns the stack's next TCP segment and notes its window.
func (h *rcvWndHarness) read(t *testing.T) header.TCP {
	t.Helper()
	seg := h.readWithin(2 * time.Second)
	if seg == nil {
		t.Fatal("the stack sent nothing within 2 s")
	}
	return seg
}

// readWithin returns the stack's next TCP segment, or nil if it sends
// nothing within d, and notes its window.
func (h *rcvWndHarness) readWithin(d time.Duration) header.TCP {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	pkt := h.ch.ReadContext(ctx)
	if pkt == nil {
		return nil
	}
	defer pkt.DecRef()
	v := stack.PayloadSince(pkt.NetworkHeader())
	defer v.Release()
	ip := header.IPv4(append([]byte(nil), v.AsSlice()...))
	seg := header.TCP(ip.Payload())
	h.lastWnd = seg.WindowSize()
	if seg.Flags()&header.TCPFlagSyn == 0 {
		edge := seqnum.Value(seg.AckNumber()).Add(seqnum.Size(seg.WindowSize()) << h.wndScale)
		if h.peerEdge.LessThan(edge) {
			h.peerEdge = edge
		}
	}
	return seg
}

// expectData reads segments until one carries data and returns its length.
func (h *rcvWndHarness) expectData(t *testing.T) seqnum.Size {
	t.Helper()
	for {
		seg := h.read(t)
		if n := seqnum.Size(len(seg.Payload())); n > 0 {
			h.stackNxt = seqnum.Value(seg.SequenceNumber()).Add(n)
			return n
		}
	}
}

// waitAck reads the stack's segments until one acknowledges ack.
func (h *rcvWndHarness) waitAck(t *testing.T, ack seqnum.Value) {
	t.Helper()
	for {
		seg := h.read(t)
		if seg.Flags()&header.TCPFlagAck != 0 && seqnum.Value(seg.AckNumber()) == ack {
			return
		}
	}
}

// sendData sends n bytes at the peer's SND.NXT, acknowledging nothing new.
func (h *rcvWndHarness) sendData(t *testing.T, n int) {
	t.Helper()
	h.send(t, h.peerNxt, h.peerAck, header.TCPFlagAck, make([]byte, n))
	h.peerNxt = h.peerNxt.Add(seqnum.Size(n))
}

func (h *rcvWndHarness) sendAck(t *testing.T, seq, ack seqnum.Value) {
	t.Helper()
	h.send(t, seq, ack, header.TCPFlagAck, nil)
}

func (h *rcvWndHarness) send(t *testing.T, seq, ack seqnum.Value, flags header.TCPFlags, payload []byte) {
	t.Helper()
	h.sendOpts(t, seq, ack, flags, nil, payload)
}

// sendOpts injects one IPv4 TCP segment from the peer, checksums and all.
// The peer's window is 65535 << 7: it never limits the stack.
func (h *rcvWndHarness) sendOpts(t *testing.T, seq, ack seqnum.Value, flags header.TCPFlags, opts, payload []byte) {
	t.Helper()
	tcpLen := header.TCPMinimumSize + len(opts)
	b := make([]byte, header.IPv4MinimumSize+tcpLen+len(payload))
	ip := header.IPv4(b)
	src := tcpip.AddrFromSlice([]byte(rcvWndPeerAddr))
	dst := tcpip.AddrFromSlice([]byte(rcvWndStackAddr))
	ip.Encode(&header.IPv4Fields{
		TotalLength: uint16(len(b)),
		TTL:         64,
		Protocol:    uint8(header.TCPProtocolNumber),
		SrcAddr:     src,
		DstAddr:     dst,
	})
	ip.SetChecksum(^ip.CalculateChecksum())
	seg := header.TCP(b[header.IPv4MinimumSize:])
	seg.Encode(&header.TCPFields{
		SrcPort:    rcvWndPeerPort,
		DstPort:    rcvWndPort,
		SeqNum:     uint32(seq),
		AckNum:     uint32(ack),
		DataOffset: uint8(tcpLen),
		Flags:      flags,
		WindowSize: 65535,
	})
	copy(seg[header.TCPMinimumSize:], opts)
	copy(seg[tcpLen:], payload)
	sum := header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, uint16(len(seg)))
	sum = checksum.Checksum(seg[tcpLen:], sum)
	seg.SetChecksum(^seg.CalculateChecksum(sum))
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: buffer.MakeWithData(b)})
	h.ch.InjectInbound(ipv4.ProtocolNumber, pkt)
	pkt.DecRef()
}
