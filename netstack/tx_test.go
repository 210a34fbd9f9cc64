package netstack

import (
	"bytes"
	"testing"

	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/packetio/packetio"
)

// gsoPacket builds what the stack hands the endpoint for a TCP send of
// data with host GSO: headers pushed, the TCP checksum holding only the
// pseudo-header sum, GSOOptions set.
func gsoPacket(t testing.TB, data []byte, mss uint16, flags header.TCPFlags, v6 bool) *stack.PacketBuffer {
	t.Helper()
	pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{
		ReserveHeaderBytes: 128,
		Payload:            buffer.MakeWithData(data),
	})
	tcp := header.TCP(pkt.TransportHeader().Push(header.TCPMinimumSize))
	tcp.Encode(&header.TCPFields{SrcPort: 7, DstPort: 4000, SeqNum: 1000, AckNum: 5, DataOffset: header.TCPMinimumSize, Flags: flags, WindowSize: 1000})
	pkt.TransportProtocolNumber = header.TCPProtocolNumber
	tcpLen := uint16(header.TCPMinimumSize + len(data))
	gso := stack.GSO{NeedsCsum: true, CsumOffset: header.TCPChecksumOffset, MSS: mss}
	if v6 {
		src, dst := tcpip.AddrFrom16(self6.As16()), tcpip.AddrFrom16(peer6.As16())
		header.IPv6(pkt.NetworkHeader().Push(header.IPv6MinimumSize)).Encode(&header.IPv6Fields{
			PayloadLength: tcpLen, TransportProtocol: header.TCPProtocolNumber, HopLimit: 64, SrcAddr: src, DstAddr: dst,
		})
		tcp.SetChecksum(header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, tcpLen))
		pkt.NetworkProtocolNumber = header.IPv6ProtocolNumber
		gso.Type, gso.L3HdrLen = stack.GSOTCPv6, header.IPv6MinimumSize
	} else {
		src, dst := tcpip.AddrFrom4(self4.As4()), tcpip.AddrFrom4(peer4.As4())
		ip := header.IPv4(pkt.NetworkHeader().Push(header.IPv4MinimumSize))
		ip.Encode(&header.IPv4Fields{TotalLength: header.IPv4MinimumSize + tcpLen, ID: 77, TTL: 64, Protocol: uint8(header.TCPProtocolNumber), SrcAddr: src, DstAddr: dst})
		ip.SetChecksum(^ip.CalculateChecksum())
		tcp.SetChecksum(header.PseudoHeaderChecksum(header.TCPProtocolNumber, src, dst, tcpLen))
		pkt.NetworkProtocolNumber = header.IPv4ProtocolNumber
		gso.Type, gso.L3HdrLen = stack.GSOTCPv4, header.IPv4MinimumSize
	}
	pkt.GSOOptions = gso
	pkt.EgressRoute.RemoteLinkAddress = tcpip.LinkAddress(macB)
	return pkt
}

// checkSegment checks segment i of a packet gsoPacket built, p from its
// Ethernet header on: lengths, IPv4 header checksum and ID, sequence
// number, flags, and the TCP checksum (with csum, the checksum request in
// offs[0] and the pseudo-header sum in the field). It returns the payload.
func checkSegment(t *testing.T, i int, p []byte, offs []packetio.Offload, v6, csum bool, seq uint32, flags header.TCPFlags) []byte {
	t.Helper()
	var tcp header.TCP
	var addrSum uint16
	if v6 {
		ip := header.IPv6(p[14:])
		tcp = header.TCP(ip.Payload())
		addrSum = checksum.Checksum(p[14+8:14+40], 0)
		if 14+40+int(ip.PayloadLength()) != len(p) {
			t.Errorf("packet %d: payload length %d in %d bytes", i, ip.PayloadLength(), len(p))
		}
	} else {
		ip := header.IPv4(p[14:])
		if n := 14 + int(ip.TotalLength()); n < len(p) && len(p) == minFrame {
			p = p[:n] // padded to the minimum frame
		}
		if !ip.IsChecksumValid() || int(ip.TotalLength())+14 != len(p) || ip.ID() != uint16(77+i) {
			t.Errorf("packet %d: IPv4 header checksum valid %v, total length %d in %d bytes, ID %d (want %d)", i, ip.IsChecksumValid(), ip.TotalLength(), len(p), ip.ID(), 77+i)
		}
		tcp = header.TCP(p[14+20:])
		addrSum = checksum.Checksum(p[14+12:14+20], 0)
	}
	sum := pseudoSum(addrSum, uint8(header.TCPProtocolNumber), len(tcp))
	if csum {
		o := offs[0]
		if o.Flags&packetio.OffloadNeedsCsum == 0 || int(o.CsumStart) != len(p)-len(tcp) || o.CsumOff != header.TCPChecksumOffset || tcp.Checksum() != sum {
			t.Errorf("packet %d: offload %+v, checksum field %#x (pseudo-header sum %#x); want a request at the TCP header", i, o, tcp.Checksum(), sum)
		}
	} else if checksum.Checksum(tcp, sum) != 0xffff {
		t.Errorf("packet %d: bad TCP checksum", i)
	}
	if tcp.SequenceNumber() != seq {
		t.Errorf("packet %d: seq %d, want %d", i, tcp.SequenceNumber(), seq)
	}
	if fl := tcp.Flags(); fl != flags {
		t.Errorf("packet %d: flags %v, want %v", i, fl, flags)
	}
	return tcp.Payload()
}

// txHarness is an endpoint on one end of a pipe, without a stack; the
// other end's receive queue is filled and returned.
func txHarness(t *testing.T, cfg Config) (*endpoint, packetio.RxQueue) {
	t.Helper()
	da, db := devices(t)
	r, err := cfg.resolve(da.Capabilities())
	if err != nil {
		t.Fatal(err)
	}
	e := newEndpoint(da, &r, func(err error) { t.Errorf("endpoint failed: %v", err) })
	rx := db.RxQueue(0)
	rx.Fill(rx.NumFreeFillSlots())
	return e, rx
}

func TestSegmentation(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		name := map[bool]string{false: "v4", true: "v6"}[v6]
		t.Run(name, func(t *testing.T) {
			e, rx := txHarness(t, Config{Addr: mustPrefix("192.0.2.1/24"), Addr6: mustPrefix("fd00::1/64"), MAC: macA})
			data := randomBytes(t, 10000)
			const mss = 1448
			pkt := gsoPacket(t, data, mss, header.TCPFlagAck|header.TCPFlagPsh|header.TCPFlagFin, v6)
			defer pkt.DecRef()
			writeOne(t, e, pkt)
			descs := rx.Receive(64)
			want := (len(data) + mss - 1) / mss
			if len(descs) != want {
				t.Fatalf("%d frames, want %d", len(descs), want)
			}
			var got []byte
			for i, d := range descs {
				last := i == len(descs)-1
				fl := header.TCPFlags(header.TCPFlagAck)
				if last {
					fl |= header.TCPFlagPsh | header.TCPFlagFin
				}
				payload := checkSegment(t, i, rx.Region().Frame(d), nil, v6, false, uint32(1000+i*mss), fl)
				if !last && len(payload) != mss {
					t.Errorf("segment %d: %d bytes, want %d", i, len(payload), mss)
				}
				got = append(got, payload...)
			}
			if !bytes.Equal(got, data) {
				t.Error("segments do not add up to the data")
			}
			rx.Recycle(descs)
			st := e.stats.load()
			if st.GSOPackets != 1 || st.GSOFrames != uint64(want) || st.TxPackets != 1 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// writeOne hands pkt to e as the stack would, link header added, and
// fails the test unless it is taken.
func writeOne(t *testing.T, e *endpoint, pkt *stack.PacketBuffer) {
	t.Helper()
	e.AddHeader(pkt)
	var list stack.PacketBufferList
	list.PushBack(pkt)
	if n, err := e.WritePackets(list); n != 1 || err != nil {
		t.Fatalf("WritePackets: %d, %v", n, err)
	}
}

// writeAllocs is the allocations of one write of pkt on q, the frames then
// taken off rx and handed back.
func writeAllocs(t *testing.T, q *txQueue, rx packetio.RxQueue, pkt *stack.PacketBuffer) float64 {
	t.Helper()
	return testing.AllocsPerRun(100, func() {
		q.mu.Lock()
		err := q.write(pkt)
		q.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		rx.Recycle(rx.Receive(64))
		rx.Fill(rx.NumFreeFillSlots())
	})
}

// Transmit allocates nothing per packet: the packet is built straight into
// device frames.
func TestTransmitAllocations(t *testing.T) {
	e, rx := txHarness(t, Config{Addr: mustPrefix("192.0.2.1/24"), MAC: macA})
	pkt := gsoPacket(t, randomBytes(t, 30000), 1448, header.TCPFlagAck, false)
	defer pkt.DecRef()
	e.AddHeader(pkt)
	q := e.tx[0]
	allocs := writeAllocs(t, q, rx, pkt)
	if allocs > 0 && !raceEnabled { // the race detector's sync.Pool drops items at random
		t.Errorf("%.1f allocations per 21-segment packet", allocs)
	}
}
