package afpacket

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/csum"
)

// l4Frame builds an Ethernet frame (optionally VLAN-tagged) carrying UDP or
// TCP over IPv4 or IPv6 with gopacket, checksums computed, and returns it
// with the L4 header offset and the checksum field's offset from there.
func l4Frame(t testing.TB, v6, tcp, vlan bool, payload int) (frame []byte, csumStart, csumOff int) {
	t.Helper()
	var ls []gopacket.SerializableLayer
	eth := &layers.Ethernet{SrcMAC: testSrc, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	csumStart = 14
	if vlan {
		eth.EthernetType = layers.EthernetTypeDot1Q
		csumStart += 4
	}
	ls = append(ls, eth)
	var nl gopacket.NetworkLayer
	proto := layers.IPProtocolUDP
	if tcp {
		proto = layers.IPProtocolTCP
	}
	if v6 {
		ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto,
			SrcIP: net.ParseIP("fd00::1"), DstIP: net.ParseIP("fd00::2")}
		nl, csumStart = ip, csumStart+40
		if vlan {
			ls = append(ls, &layers.Dot1Q{VLANIdentifier: 7, Type: layers.EthernetTypeIPv6})
		} else {
			eth.EthernetType = layers.EthernetTypeIPv6
		}
		ls = append(ls, ip)
	} else {
		ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto,
			SrcIP: net.IPv4(10, 0, 0, 1), DstIP: net.IPv4(10, 0, 0, 2)}
		nl, csumStart = ip, csumStart+20
		if vlan {
			ls = append(ls, &layers.Dot1Q{VLANIdentifier: 7, Type: layers.EthernetTypeIPv4})
		}
		ls = append(ls, ip)
	}
	body := make([]byte, payload)
	for i := range body {
		body[i] = byte(i*13 + 1)
	}
	if tcp {
		l := &layers.TCP{SrcPort: 1000, DstPort: 2000, Seq: 1, Window: 100, ACK: true, Ack: 5}
		_ = l.SetNetworkLayerForChecksum(nl)
		ls = append(ls, l)
		csumOff = 16
	} else {
		l := &layers.UDP{SrcPort: 1000, DstPort: 2000}
		_ = l.SetNetworkLayerForChecksum(nl)
		ls = append(ls, l)
		csumOff = 6
	}
	ls = append(ls, gopacket.Payload(body))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), csumStart, csumOff
}

var testSrc = net.HardwareAddr{2, 0, 0, 0, 0, 1}

// pseudoPartial is what a sender leaves in the checksum field with
// CHECKSUM_PARTIAL: the folded (uncomplemented) pseudo-header sum.
func pseudoPartial(frame []byte, ipOff, csumStart int, v6 bool, proto byte) uint16 {
	var ph []byte
	l4len := len(frame) - csumStart
	if end := l3End(frame); end <= len(frame) {
		l4len = end - csumStart
	}
	if v6 {
		ph = append(ph, frame[ipOff+8:ipOff+40]...)
		ph = binary.BigEndian.AppendUint32(ph, uint32(l4len))
		ph = append(ph, 0, 0, 0, proto)
	} else {
		ph = append(ph, frame[ipOff+12:ipOff+20]...)
		ph = append(ph, 0, proto)
		ph = binary.BigEndian.AppendUint16(ph, uint16(l4len))
	}
	return ones(ph)
}

func TestCompleteL4(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		for _, tcp := range []bool{false, true} {
			for _, vlan := range []bool{false, true} {
				for _, payload := range []int{0, 1, 2, 17, 100, 1001} {
					frame, cs, co := l4Frame(t, v6, tcp, vlan, payload)
					want := binary.BigEndian.Uint16(frame[cs+co:])
					// Pad runts as the wire does, with bytes that would
					// change the sum if they were counted.
					for len(frame) < 60 {
						frame = append(frame, 0xa5)
					}
					proto := byte(17)
					if tcp {
						proto = 6
					}
					ipOff := 14
					if vlan {
						ipOff = 18
					}
					binary.BigEndian.PutUint16(frame[cs+co:], pseudoPartial(frame, ipOff, cs, v6, proto))
					if !completeL4(frame, cs, co) {
						t.Fatalf("v6=%v tcp=%v vlan=%v payload=%d: refused", v6, tcp, vlan, payload)
					}
					got := binary.BigEndian.Uint16(frame[cs+co:])
					if got != want && !(want == 0 && got == 0xffff) && !(want == 0xffff && got == 0) {
						t.Errorf("v6=%v tcp=%v vlan=%v payload=%d: checksum %#04x, gopacket says %#04x", v6, tcp, vlan, payload, got, want)
					}
					// The result verifies: the L4 bytes sum to 0xffff with the pseudo-header.
					end := l3End(frame)
					full := []uint16{ones(frame[cs:end]), pseudoPartial(frame, ipOff, cs, v6, proto)}
					if s := ones(binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, full[0]), full[1])); s != 0xffff {
						t.Errorf("v6=%v tcp=%v vlan=%v payload=%d: does not verify (%#04x)", v6, tcp, vlan, payload, s)
					}
				}
			}
		}
	}
}

func TestCompleteL4NeverWritesZero(t *testing.T) {
	for payload := range 300 {
		frame, cs, co := l4Frame(t, false, false, false, payload)
		binary.BigEndian.PutUint16(frame[cs+co:], pseudoPartial(frame, 14, cs, false, 17))
		completeL4(frame, cs, co)
		if binary.BigEndian.Uint16(frame[cs+co:]) == 0 {
			t.Fatalf("payload %d: wrote checksum 0", payload)
		}
	}
}

func TestCompleteL4RefusesBadOffsets(t *testing.T) {
	frame, _, _ := l4Frame(t, false, false, false, 10)
	for _, c := range []struct{ start, off int }{
		{-1, 6}, {34, -1}, {len(frame) + 1, 0}, {len(frame) - 1, 0}, {34, len(frame) - 34 - 1},
		{1 << 30, 6}, {34, 1 << 30}, {len(frame), 0},
	} {
		orig := append([]byte(nil), frame...)
		if completeL4(frame, c.start, c.off) {
			t.Errorf("start %d off %d accepted", c.start, c.off)
		}
		if !bytes.Equal(orig, frame) {
			t.Errorf("start %d off %d changed the frame", c.start, c.off)
		}
	}
	if completeL4(nil, 0, 0) || completeL4([]byte{1}, 0, 0) {
		t.Error("tiny frame accepted")
	}
}

func TestL3End(t *testing.T) {
	v4, _, _ := l4Frame(t, false, false, false, 4)
	v6t, _, _ := l4Frame(t, true, true, true, 4)
	padded := append(append([]byte(nil), v4...), make([]byte, 20)...)
	for _, c := range []struct {
		name  string
		frame []byte
		want  int
	}{
		{"ipv4 (gopacket pads to 60)", v4, 14 + 20 + 8 + 4},
		{"ipv4 padded more", padded, 14 + 20 + 8 + 4},
		{"ipv6 in vlan", v6t, len(v6t)},
		{"not ip", []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x88, 0xb5, 1, 2}, 16},
		{"truncated vlan", []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x81, 0x00, 1}, 15},
		{"three tags", append([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0x81, 0, 0, 1, 0x81, 0, 0, 1, 0x81, 0, 0, 1, 8, 0, 0, 0, 0, 0), 30},
		{"empty", nil, 0},
	} {
		if got := l3End(c.frame); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

func TestCheckOffload(t *testing.T) {
	const n = 1000
	for _, c := range []struct {
		name string
		o    packetio.Offload
		n    int
		ok   bool
	}{
		{"zero", packetio.Offload{}, n, true},
		{"csum fits", packetio.Offload{Flags: 1, CsumStart: 34, CsumOff: 6}, n, true},
		{"csum field at the very end", packetio.Offload{Flags: 1, CsumStart: 998, CsumOff: 0}, n, true},
		{"csum field straddles the end", packetio.Offload{Flags: 1, CsumStart: 998, CsumOff: 1}, n, false},
		{"csum start past the end", packetio.Offload{Flags: 1, CsumStart: 1001}, n, false},
		{"csum that would wrap", packetio.Offload{Flags: 1, CsumStart: 65535, CsumOff: 65535}, n, false},
		{"csum offsets ignored without the flag", packetio.Offload{CsumStart: 65535, CsumOff: 65535}, n, true},
		{"tcp4 gso", packetio.Offload{Flags: 1, GSOType: packetio.OffloadGSOTCPv4, HdrLen: 54, GSOSize: 1400, CsumStart: 34, CsumOff: 16}, n, true},
		{"tcp6 gso with ECN", packetio.Offload{Flags: 1, GSOType: packetio.OffloadGSOTCPv6 | packetio.OffloadGSOECN, HdrLen: 74, GSOSize: 1400, CsumStart: 54, CsumOff: 16}, n, true},
		{"udp gso", packetio.Offload{Flags: 1, GSOType: packetio.OffloadGSOUDP, HdrLen: 42, GSOSize: 1400, CsumStart: 34, CsumOff: 6}, n, true},
		{"gso size 0", packetio.Offload{GSOType: packetio.OffloadGSOTCPv4, HdrLen: 54}, n, false},
		{"hdr len past the packet", packetio.Offload{GSOType: packetio.OffloadGSOTCPv4, HdrLen: 1001, GSOSize: 100}, n, false},
		{"unknown gso type", packetio.Offload{GSOType: 2, GSOSize: 100}, n, false},
		{"ECN alone", packetio.Offload{GSOType: packetio.OffloadGSOECN}, n, false},
		{"empty packet", packetio.Offload{Flags: 1}, 0, false},
	} {
		if err := checkOffload(c.o, c.n); (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

func TestRxOffload(t *testing.T) {
	hdr := make([]byte, vnetLen)
	o := packetio.Offload{Flags: 1, GSOType: 1, HdrLen: 54, GSOSize: 1400, CsumStart: 34, CsumOff: 16}
	o.Marshal(hdr)
	if got := rxOffload(hdr, false); got != o {
		t.Fatalf("untagged: %+v, want %+v", got, o)
	}
	want := o
	want.HdrLen, want.CsumStart = 58, 38
	if got := rxOffload(hdr, true); got != want {
		t.Fatalf("tagged: %+v, want %+v", got, want)
	}
	// Nothing moves without NEEDS_CSUM or a header length.
	packetio.Offload{CsumStart: 34}.Marshal(hdr)
	if got := rxOffload(hdr, true); got.CsumStart != 34 || got.HdrLen != 0 {
		t.Fatalf("moved offsets that mean nothing: %+v", got)
	}
	// Saturates instead of wrapping.
	packetio.Offload{Flags: 1, HdrLen: 0xfffe, CsumStart: 0xfffd}.Marshal(hdr)
	if got := rxOffload(hdr, true); got.CsumStart != 0xffff || got.HdrLen != 0xffff {
		t.Fatalf("wrapped: %+v", got)
	}
	if got := rxOffload(hdr[:9], true); got != (packetio.Offload{}) {
		t.Fatal("short header decoded")
	}
}

func TestOptionsResolve(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []Option
		ok   bool
		chk  func(r resolved) bool
	}{
		{"defaults", nil, true, func(r resolved) bool {
			return r.txQueues == 1 && r.rxQueues == 1 && r.frames == DefaultFrames && r.frameSize == DefaultFrameSize && r.perQueue == DefaultFrames/2
		}},
		{"gso defaults", []Option{WithGSO()}, true, func(r resolved) bool {
			return r.frameSize == 65536 && r.frames == DefaultGSOFrames && r.blockSize == DefaultGSOBlockSize
		}},
		{"gso order does not matter", []Option{WithFrameSize(65536), WithGSO()}, true, func(r resolved) bool { return r.frames == DefaultGSOFrames }},
		{"explicit frames win", []Option{WithGSO(), WithFrames(64)}, true, func(r resolved) bool { return r.frames == 64 }},
		{"queues", []Option{WithQueues(4)}, true, func(r resolved) bool { return r.txQueues == 4 && r.rxQueues == 4 }},
		{"rx only", []Option{WithTxQueues(0)}, true, func(r resolved) bool { return r.txQueues == 0 && r.perQueue == DefaultFrames }},
		{"no queues", []Option{WithQueues(0)}, false, nil},
		{"negative", []Option{WithRxQueues(-1)}, false, nil},
		{"too many", []Option{WithTxQueues(MaxQueues + 1)}, false, nil},
		{"frame size not a power of two", []Option{WithFrameSize(3000)}, false, nil},
		{"frame size too small", []Option{WithFrameSize(64)}, false, nil},
		{"frame size too big", []Option{WithFrameSize(1 << 17)}, false, nil},
		{"gso with small frames", []Option{WithGSO(), WithFrameSize(2048)}, false, nil},
		{"gso tx only with small frames", []Option{WithGSO(), WithFrameSize(2048), WithRxQueues(0)}, true, nil},
		{"block size odd", []Option{WithBlockSize(5000)}, false, nil},
		{"block size small", []Option{WithBlockSize(2048)}, false, nil},
		{"gso block too small", []Option{WithGSO(), WithBlockSize(1 << 16)}, false, nil},
		{"too few frames per queue", []Option{WithQueues(8), WithFrames(100)}, false, nil},
		{"zero frames", []Option{WithFrames(0)}, false, nil},
		{"region too big", []Option{WithFrameSize(65536), WithFrames(1 << 14)}, false, nil},
		{"gso with multi-buffer keeps small frames", []Option{WithGSO(), WithMultiBuffer()}, true, func(r resolved) bool {
			return r.frameSize == DefaultFrameSize && r.frames == DefaultFrames && r.multiBuffer
		}},
		{"gso multi-buffer needs a 64 KiB packet per queue", []Option{WithGSO(), WithMultiBuffer(), WithFrameSize(256), WithFrames(512)}, false, nil},
	} {
		var cfg config
		for _, o := range c.opts {
			o(&cfg)
		}
		r, err := cfg.resolve()
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok=%v", c.name, err, c.ok)
			continue
		}
		if err != nil && !errors.Is(err, packetio.ErrInvalid) {
			t.Errorf("%s: %v does not wrap ErrInvalid", c.name, err)
		}
		if err == nil && c.chk != nil && !c.chk(r) {
			t.Errorf("%s: resolved to %+v", c.name, r)
		}
	}
}

func TestDescValidation(t *testing.T) {
	const fs = 2048
	r := newRegion(make([]byte, 4*fs), fs)
	for _, c := range []struct {
		name string
		d    packetio.Desc
		ok   bool
	}{
		{"whole frame", packetio.Desc{Addr: fs, Len: fs}, true},
		{"after headroom", packetio.Desc{Addr: fs + 64, Len: fs - 64}, true},
		{"one byte at the end", packetio.Desc{Addr: 4*fs - 1, Len: 1}, true},
		{"empty", packetio.Desc{Addr: fs, Len: 0}, false},
		{"into the next frame", packetio.Desc{Addr: fs + 64, Len: fs - 63}, false},
		{"past the region", packetio.Desc{Addr: 4 * fs, Len: 64}, false},
		{"address wraps", packetio.Desc{Addr: ^uint64(0), Len: 64}, false},
		{"huge length", packetio.Desc{Addr: 0, Len: ^uint32(0)}, false},
	} {
		if got := r.descOK(c.d); got != c.ok {
			t.Errorf("%s: %v, want %v", c.name, got, c.ok)
		}
	}
	if r.Frame(packetio.Desc{Addr: 1 << 40, Len: 64}) != nil || r.Writable(packetio.Desc{Addr: 1 << 40}) != nil {
		t.Error("Frame or Writable outside the region is not nil")
	}
	if w := r.Writable(packetio.Desc{Addr: fs + 100}); len(w) != fs-100 || cap(w) != fs-100 {
		t.Errorf("Writable %d/%d bytes, want %d", len(w), cap(w), fs-100)
	}
	if f := r.Frame(packetio.Desc{Addr: 4*fs - 10, Len: 11}); f != nil {
		t.Error("Frame past the region end")
	}
}

// FuzzCompleteL4 must never panic and never write outside the checksum field.
func FuzzCompleteL4(f *testing.F) {
	frame, cs, co := l4Frame(f, false, true, true, 40)
	f.Add(frame, cs, co)
	f.Add([]byte{1, 2, 3}, 0, 1)
	f.Fuzz(func(t *testing.T, frame []byte, start, off int) {
		orig := append([]byte(nil), frame...)
		if !completeL4(frame, start, off) {
			if !bytes.Equal(orig, frame) {
				t.Fatal("refused but changed the frame")
			}
			return
		}
		at := start + off
		if !bytes.Equal(orig[:at], frame[:at]) || !bytes.Equal(orig[at+2:], frame[at+2:]) {
			t.Fatal("wrote outside the checksum field")
		}
	})
}

// FuzzOffload: an Offload checkOffload accepts fits its packet, and
// decoding a received header never panics.
func FuzzOffload(f *testing.F) {
	f.Add([]byte{1, 1, 54, 0, 0x78, 5, 34, 0, 16, 0}, 1000, true)
	f.Fuzz(func(t *testing.T, hdr []byte, n int, tagged bool) {
		o := rxOffload(hdr, tagged)
		if n < 0 || n > 1<<17 {
			return
		}
		if checkOffload(o, n) != nil {
			return
		}
		if o.Flags&packetio.OffloadNeedsCsum != 0 && int(o.CsumStart)+int(o.CsumOff)+2 > n {
			t.Fatalf("accepted a checksum field outside the packet: %+v n=%d", o, n)
		}
		if int(o.HdrLen) > n || (o.Segmented() && o.GSOSize == 0) {
			t.Fatalf("accepted %+v for n=%d", o, n)
		}
	})
}

// ones is the folded one's-complement sum of b.
func ones(b []byte) uint16 { return csum.Fold(csum.Sum(b, 0)) }
