package netstack

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/checksum"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/packetio/packetio"
)

// memRegion is a Region over a plain slice, frames of 2048 bytes.
type memRegion struct{ mem []byte }

func (r *memRegion) Bytes() []byte { return r.mem }
func (r *memRegion) Frame(d packetio.Desc) []byte {
	if d.Addr+uint64(d.Len) > uint64(len(r.mem)) {
		return nil
	}
	return r.mem[d.Addr : d.Addr+uint64(d.Len) : d.Addr+uint64(d.Len)]
}
func (r *memRegion) Writable(d packetio.Desc) []byte { return nil }
func (r *memRegion) FrameSize() int                  { return 2048 }
func (r *memRegion) NumFrames() int                  { return len(r.mem) / 2048 }

// regionQueue is just enough of an RxQueue for rxLoop.batch.
type regionQueue struct {
	packetio.RxQueue
	r *memRegion
}

func (q regionQueue) Region() packetio.Region { return q.r }

// capture records what reaches the stack.
type capture struct {
	protos []tcpip.NetworkProtocolNumber
	pkts   [][]byte
}

func (c *capture) DeliverNetworkPacket(p tcpip.NetworkProtocolNumber, pkt *stack.PacketBuffer) {
	c.protos = append(c.protos, p)
	c.pkts = append(c.pkts, pkt.Data().AsRange().ToSlice())
}
func (c *capture) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}

// rxHarness is an endpoint with one receive loop and no stack.
func rxHarness(t *testing.T, vlan uint16) (*rxLoop, *capture, *memRegion) {
	t.Helper()
	cfg, err := Config{Addr: mustPrefix("192.0.2.1/24"), MAC: macA, VLAN: vlan, NoGRO: true}.resolve(packetio.Capabilities{MaxFrameSize: 2048})
	if err != nil {
		t.Fatal(err)
	}
	e := &endpoint{cfg: &cfg}
	reg := &memRegion{mem: make([]byte, 64*2048)}
	r := &rxLoop{e: e, q: regionQueue{r: reg}}
	c := &capture{}
	r.disp = c
	r.gro.Init(false)
	r.gro.Dispatcher = c
	return r, c, reg
}

// udpFrame builds an Ethernet frame holding a UDP datagram with correct
// checksums, from src to dst.
func udpFrame(t *testing.T, dstMAC, srcMAC []byte, src, dst netip.Addr, payload []byte, vlan uint16) []byte {
	t.Helper()
	var l3 []byte
	udpLen := header.UDPMinimumSize + len(payload)
	if src.Is4() {
		l3 = make([]byte, header.IPv4MinimumSize+udpLen)
		ip := header.IPv4(l3)
		ip.Encode(&header.IPv4Fields{
			TotalLength: uint16(len(l3)), TTL: 64, Protocol: uint8(header.UDPProtocolNumber),
			SrcAddr: tcpip.AddrFrom4(src.As4()), DstAddr: tcpip.AddrFrom4(dst.As4()),
		})
		ip.SetChecksum(^ip.CalculateChecksum())
	} else {
		l3 = make([]byte, header.IPv6MinimumSize+udpLen)
		header.IPv6(l3).Encode(&header.IPv6Fields{
			PayloadLength: uint16(udpLen), TransportProtocol: header.UDPProtocolNumber, HopLimit: 64,
			SrcAddr: tcpip.AddrFrom16(src.As16()), DstAddr: tcpip.AddrFrom16(dst.As16()),
		})
	}
	off := len(l3) - udpLen
	u := header.UDP(l3[off:])
	u.Encode(&header.UDPFields{SrcPort: 1000, DstPort: 53, Length: uint16(udpLen)})
	copy(u.Payload(), payload)
	var addrs []byte
	if src.Is4() {
		addrs = l3[12:20]
	} else {
		addrs = l3[8:40]
	}
	sum := checksum.Checksum(u, pseudoSum(checksum.Checksum(addrs, 0), uint8(header.UDPProtocolNumber), udpLen))
	u.SetChecksum(^sum)
	return ethernet(dstMAC, srcMAC, src.Is4(), vlan, l3)
}

func ethernet(dst, src []byte, v4 bool, vlan uint16, l3 []byte) []byte {
	et := uint16(header.IPv6ProtocolNumber)
	if v4 {
		et = uint16(header.IPv4ProtocolNumber)
	}
	f := append(append([]byte(nil), dst...), src...)
	if vlan != 0 {
		f = binary.BigEndian.AppendUint16(f, etherTypeVLAN)
		f = binary.BigEndian.AppendUint16(f, vlan)
	}
	f = binary.BigEndian.AppendUint16(f, et)
	return append(f, l3...)
}

// put writes frames into the region, one per 2048-byte frame, split into
// pieces where pieces[i] > 1 (a chain of that many descriptors).
func put(reg *memRegion, frames [][]byte, pieces []int) []packetio.Desc {
	var descs []packetio.Desc
	slot := 0
	for i, f := range frames {
		n := 1
		if pieces != nil && pieces[i] > 1 {
			n = pieces[i]
		}
		per := (len(f) + n - 1) / n
		for k := 0; k < n; k++ {
			part := f[min(k*per, len(f)):min((k+1)*per, len(f))]
			addr := uint64(slot * 2048)
			copy(reg.mem[addr:], part)
			d := packetio.Desc{Addr: addr, Len: uint32(len(part))}
			if k < n-1 {
				d.Options = packetio.OptContinued
			}
			descs = append(descs, d)
			slot++
		}
	}
	return descs
}

var (
	peer4  = netip.MustParseAddr("192.0.2.2")
	self4  = netip.MustParseAddr("192.0.2.1")
	peer6  = netip.MustParseAddr("fd00::2")
	self6  = netip.MustParseAddr("fd00::1")
	other  = []byte{0x02, 0, 0, 0, 0, 0x99}
	bcast  = []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	hello  = []byte("hello, stack")
	bigMsg = bytes.Repeat([]byte("0123456789abcdef"), 200) // 3200 bytes: needs a chain
)

func TestReceiveChecks(t *testing.T) {
	good := func(t *testing.T) []byte { return udpFrame(t, macA, macB, peer4, self4, hello, 0) }
	for _, tc := range []struct {
		name    string
		frame   func(t *testing.T) []byte
		pieces  int
		opts    uint32
		vlan    uint16
		deliver bool
		counter func(Stats) uint64
	}{
		{name: "good v4", frame: good, deliver: true},
		{name: "good v6", frame: func(t *testing.T) []byte { return udpFrame(t, macA, macB, peer6, self6, hello, 0) }, deliver: true},
		{name: "broadcast", frame: func(t *testing.T) []byte { return udpFrame(t, bcast, macB, peer4, self4, hello, 0) }, deliver: true},
		{name: "chained 3 pieces", frame: func(t *testing.T) []byte { return udpFrame(t, macA, macB, peer4, self4, bigMsg, 0) },
			pieces: 3, deliver: true, counter: func(s Stats) uint64 { return s.RxChained }},
		{name: "big payload", frame: func(t *testing.T) []byte { return udpFrame(t, macA, macB, peer6, self6, bigMsg[:1400], 0) }, deliver: true},
		{name: "padded", frame: func(t *testing.T) []byte {
			return append(udpFrame(t, macA, macB, peer4, self4, []byte("x"), 0), 0, 0, 0, 0)
		}, deliver: true},
		{name: "bad UDP checksum", frame: func(t *testing.T) []byte { f := good(t); f[len(f)-1] ^= 1; return f },
			counter: func(s Stats) uint64 { return s.RxBadChecksum }},
		{name: "bad UDP checksum vouched by the device", frame: func(t *testing.T) []byte { f := good(t); f[len(f)-1] ^= 1; return f },
			opts: packetio.OptChecksumOK, deliver: true},
		{name: "bad IPv4 header checksum", frame: func(t *testing.T) []byte { f := good(t); f[14+8]--; return f },
			counter: func(s Stats) uint64 { return s.RxBadChecksum }},
		{name: "bad v6 UDP checksum", frame: func(t *testing.T) []byte {
			f := udpFrame(t, macA, macB, peer6, self6, hello, 0)
			f[len(f)-1] ^= 1
			return f
		}, counter: func(s Stats) uint64 { return s.RxBadChecksum }},
		{name: "zero v6 UDP checksum", frame: func(t *testing.T) []byte {
			f := udpFrame(t, macA, macB, peer6, self6, hello, 0)
			f[14+40+6], f[14+40+7] = 0, 0
			return f
		}, counter: func(s Stats) uint64 { return s.RxBadChecksum }},
		{name: "other host", frame: func(t *testing.T) []byte { return udpFrame(t, other, macB, peer4, self4, hello, 0) },
			counter: func(s Stats) uint64 { return s.RxOtherHost }},
		{name: "own echo", frame: func(t *testing.T) []byte { return udpFrame(t, bcast, macA, peer4, self4, hello, 0) },
			counter: func(s Stats) uint64 { return s.RxOwnEcho }},
		{name: "fragment", frame: func(t *testing.T) []byte {
			f := good(t)
			ip := header.IPv4(f[14:])
			ip.SetFlagsFragmentOffset(header.IPv4FlagMoreFragments, 0)
			ip.SetChecksum(0)
			ip.SetChecksum(^ip.CalculateChecksum())
			return f
		}, counter: func(s Stats) uint64 { return s.RxFragments }},
		{name: "truncated", frame: func(t *testing.T) []byte { f := good(t); return f[:len(f)-4] },
			counter: func(s Stats) uint64 { return s.RxRunt }},
		{name: "runt", frame: func(t *testing.T) []byte { return good(t)[:13] },
			counter: func(s Stats) uint64 { return s.RxRunt }},
		{name: "not IP", frame: func(t *testing.T) []byte { f := good(t); f[12], f[13] = 0x88, 0xb5; return f },
			counter: func(s Stats) uint64 { return s.RxNotIP }},
		{name: "tagged to untagged stack", frame: func(t *testing.T) []byte { return udpFrame(t, macA, macB, peer4, self4, hello, 5) },
			counter: func(s Stats) uint64 { return s.RxWrongVLAN }},
		{name: "untagged to tagged stack", frame: good, vlan: 5,
			counter: func(s Stats) uint64 { return s.RxWrongVLAN }},
		{name: "other VLAN", frame: func(t *testing.T) []byte { return udpFrame(t, macA, macB, peer4, self4, hello, 6) }, vlan: 5,
			counter: func(s Stats) uint64 { return s.RxWrongVLAN }},
		{name: "same VLAN", frame: func(t *testing.T) []byte { return udpFrame(t, macA, macB, peer4, self4, hello, 5) }, vlan: 5, deliver: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, c, reg := rxHarness(t, tc.vlan)
			f := tc.frame(t)
			descs := put(reg, [][]byte{f}, []int{tc.pieces})
			for i := range descs {
				descs[i].Options |= tc.opts
			}
			r.batch(descs, nil)
			st := r.e.stats.load()
			if got := len(c.pkts) == 1; got != tc.deliver {
				t.Fatalf("delivered %d packets, want delivered=%v; stats %+v", len(c.pkts), tc.deliver, st)
			}
			if tc.counter != nil && tc.counter(st) != 1 {
				t.Errorf("counter not 1: %+v", st)
			}
			if tc.deliver {
				hdr := 14
				if tc.vlan != 0 {
					hdr = 18
				}
				ipLen := len(f) - hdr
				if f[hdr]>>4 == 4 {
					ipLen = int(binary.BigEndian.Uint16(f[hdr+2:]))
				}
				if !bytes.Equal(c.pkts[0], f[hdr:hdr+ipLen]) {
					t.Errorf("delivered %d bytes differ from the %d-byte IP packet sent", len(c.pkts[0]), ipLen)
				}
			}
		})
	}
}

// A chain that is too long, or cut short, is dropped whole and counted;
// packets around it still arrive.
func TestReceiveBadChains(t *testing.T) {
	r, c, reg := rxHarness(t, 0)
	a := udpFrame(t, macA, macB, peer4, self4, hello, 0)
	descs := put(reg, [][]byte{a, a}, nil)
	// 40 frames of 2000 bytes chained: 80 kB, over any IP packet.
	long := make([]packetio.Desc, 40)
	for i := range long {
		long[i] = packetio.Desc{Addr: uint64((10 + i) % 60 * 2048), Len: 2000, Options: packetio.OptContinued}
	}
	long[len(long)-1].Options = 0
	all := append(append(append([]packetio.Desc{}, descs[0]), long...), descs[1])
	cut := packetio.Desc{Addr: 62 * 2048, Len: 100, Options: packetio.OptContinued}
	all = append(all, cut)
	r.batch(all, nil)
	st := r.e.stats.load()
	if len(c.pkts) != 2 || st.RxTooLong != 2 {
		t.Errorf("delivered %d (want 2), RxTooLong %d (want 2)", len(c.pkts), st.RxTooLong)
	}
}

// Receiving allocates only gVisor's own buffers: nothing per packet on the
// endpoint's side beyond the packet buffer and its view.
func TestReceiveAllocations(t *testing.T) {
	r, _, reg := rxHarness(t, 0)
	r.disp = discard{}
	r.gro.Dispatcher = discard{}
	f := udpFrame(t, macA, macB, peer4, self4, hello, 0)
	big := udpFrame(t, macA, macB, peer4, self4, bigMsg[:1400], 0) // headers and payload in two views
	descs := put(reg, [][]byte{f, big, f, big}, nil)
	allocs := testing.AllocsPerRun(200, func() { r.batch(descs, nil) })
	if allocs > 4 && !raceEnabled { // the race detector's sync.Pool drops items at random
		t.Errorf("%.1f allocations for 4 packets", allocs)
	}
	t.Logf("%.1f allocations per 4-packet batch", allocs)
}

type discard struct{}

func (discard) DeliverNetworkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer) {}
func (discard) DeliverLinkPacket(tcpip.NetworkProtocolNumber, *stack.PacketBuffer)    {}
