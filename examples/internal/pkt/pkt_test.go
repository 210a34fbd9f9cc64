package pkt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/google/gopacket/layers"

	"github.com/packetio/packetio/internal/csum"
	"github.com/packetio/packetio/internal/testframe"
)

func udp(s testframe.Spec) testframe.Spec {
	s.Proto = layers.IPProtocolUDP
	if s.SPort == 0 {
		s.SPort = 1111
	}
	if s.DPort == 0 {
		s.DPort = 9000
	}
	return s
}

// TestParse: the datagram is found behind one tag of either TPID and IPv4
// options, in both families; what is not a whole, unfragmented UDP
// datagram is refused with the reason.
func TestParse(t *testing.T) {
	payload := []byte("twelve bytes")
	for _, tc := range []struct {
		name        string
		spec        testframe.Spec
		l3, payload int
		v6          bool
	}{
		{"ipv4", udp(testframe.Spec{Payload: payload}), 14, 42, false},
		{"ipv4 options", udp(testframe.Spec{Payload: payload, IPOpts: true}), 14, 46, false},
		{"802.1Q", udp(testframe.Spec{Payload: payload, VLAN: []uint16{5}}), 18, 46, false},
		{"802.1ad", udp(testframe.Spec{Payload: payload, VLAN: []uint16{5}, QinQ: true}), 18, 46, false},
		{"ipv6", udp(testframe.Spec{Payload: payload, V6: true}), 14, 62, true},
		{"ipv6 tagged", udp(testframe.Spec{Payload: payload, V6: true, VLAN: []uint16{5}}), 18, 66, true},
	} {
		f := tc.spec.Build(t)
		d, err := Parse(f)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if d.L3 != tc.l3 || d.Payload != tc.payload || d.V6 != tc.v6 || d.SrcPort != 1111 || d.DstPort != 9000 || !bytes.Equal(d.Body(f), payload) {
			t.Errorf("%s: %+v", tc.name, d)
		}
		src, dst := "10.0.0.1", "10.0.0.2"
		if tc.v6 {
			src, dst = "2001:db8::1", "2001:db8::2"
		}
		if d.Src(f).String() != src || d.Dst(f).String() != dst {
			t.Errorf("%s: %s > %s", tc.name, d.Src(f), d.Dst(f))
		}
	}
	good := udp(testframe.Spec{}).Build(t)
	badIHL := bytes.Clone(good)
	badIHL[14] = 0x44
	longUDP := bytes.Clone(good)
	binary.BigEndian.PutUint16(longUDP[14+20+4:], 200)
	longIP := bytes.Clone(good)
	binary.BigEndian.PutUint16(longIP[14+2:], 400)
	mf := bytes.Clone(good)
	mf[14+6] |= 0x20
	hop := udp(testframe.Spec{V6: true}).Build(t)
	hop[14+6] = 0
	for _, tc := range []struct {
		name  string
		frame []byte
		want  error
	}{
		{"runt", good[:13], ErrShort},
		{"ip header cut", good[:30], ErrShort},
		{"arp", testframe.Spec{Ether: layers.EthernetTypeARP}.Build(t), ErrNotIP},
		{"tcp", testframe.Spec{Proto: layers.IPProtocolTCP}.Build(t), ErrNotUDP},
		{"later fragment", udp(testframe.Spec{FragOff: 10}).Build(t), ErrFragment},
		{"first fragment", mf, ErrFragment},
		{"ihl 4", badIHL, ErrBadHeader},
		{"udp longer than ip", longUDP, ErrBadHeader},
		{"ip longer than frame", longIP, ErrBadHeader},
		{"ipv6 hop-by-hop", hop, ErrIPv6ExtHdrs},
	} {
		if _, err := Parse(tc.frame); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestReplyIsWhatGopacketBuilds: the reply written in place is, byte for
// byte, the frame gopacket builds for it (addresses and ports swapped, TTL
// 64, IPv4 options gone, both checksums computed, padded to 60), in both
// families, tagged or not, with a correct or a partial (offload-pending)
// UDP checksum in the request.
func TestReplyIsWhatGopacketBuilds(t *testing.T) {
	for _, req := range []testframe.Spec{
		udp(testframe.Spec{Payload: []byte("hi")}),
		udp(testframe.Spec{Payload: bytes.Repeat([]byte("0123456789"), 30)}),
		udp(testframe.Spec{Payload: []byte("odd"), IPOpts: true}),
		udp(testframe.Spec{Payload: []byte("tagged"), VLAN: []uint16{99}}),
		udp(testframe.Spec{Payload: []byte("ad"), VLAN: []uint16{99}, QinQ: true}),
		udp(testframe.Spec{Payload: []byte("v6"), V6: true}),
		udp(testframe.Spec{Payload: bytes.Repeat([]byte{0xff}, 101), V6: true, VLAN: []uint16{7}}),
	} {
		for _, partial := range []bool{false, true} {
			f := req.Build(t)
			d, err := Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			if partial {
				// What a veth delivers from a local sender: only
				// the pseudo-header sum, never completed.
				binary.BigEndian.PutUint16(f[d.L4+6:], 0x1234)
			}
			buf := append(f, make([]byte, 64)...)
			n := Reply(buf, d, d.PayloadLen)
			want := req
			want.Src, want.Dst = req.Dst, req.Src
			if want.Src == "" {
				want.Src, want.Dst = "10.0.0.2", "10.0.0.1"
				if req.V6 {
					want.Src, want.Dst = "2001:db8::2", "2001:db8::1"
				}
			}
			want.SPort, want.DPort = req.DPort, req.SPort
			want.SrcMAC, want.DstMAC = testframe.MACB, testframe.MACA
			want.IPOpts = false
			exp := want.Build(t)
			for len(exp) < MinFrame {
				exp = append(exp, 0)
			}
			if !bytes.Equal(buf[:n], exp) {
				t.Errorf("reply to %+v (partial %v):\n got %x\nwant %x", req, partial, buf[:n], exp)
			}
		}
	}
}

// TestReplyWithANewPayload: a reply longer than the request, written into
// the room after it, has the lengths and checksums of its own size; one
// that does not fit is refused with 0 and the frame untouched.
func TestReplyWithANewPayload(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		f := udp(testframe.Spec{V6: v6, IPOpts: !v6, Payload: []byte("q")}).Build(t)
		d, _ := Parse(f)
		room := make([]byte, 300)
		copy(room, f)
		answer := bytes.Repeat([]byte("answer!"), 20)
		copy(room[d.Payload:], answer)
		n := Reply(room, d, len(answer))
		r, err := Parse(room[:n])
		if err != nil {
			t.Fatalf("v6 %v: the reply does not parse: %v", v6, err)
		}
		if !bytes.Equal(r.Body(room[:n]), answer) || r.SrcPort != 9000 || r.DstPort != 1111 {
			t.Fatalf("v6 %v: %+v", v6, r)
		}
		if !v6 && csum.Checksum(room[r.L3:r.L3+20], 0) != 0 {
			t.Fatal("IPv4 header checksum wrong")
		}
		if !validUDP(room[:n], r) {
			t.Fatalf("v6 %v: UDP checksum wrong", v6)
		}
		small := bytes.Clone(f)
		if Reply(small, d, len(answer)) != 0 || !bytes.Equal(small, f) {
			t.Fatalf("v6 %v: a reply too big for the frame was written", v6)
		}
	}
}

// TestNoChecksumStaysNone: an IPv4 datagram sent without a checksum is
// answered without one.
func TestNoChecksumStaysNone(t *testing.T) {
	f := udp(testframe.Spec{}).Build(t)
	d, _ := Parse(f)
	f[d.L4+6], f[d.L4+7] = 0, 0
	n := Reply(f, d, d.PayloadLen)
	if f[d.L4+6] != 0 || f[d.L4+7] != 0 || n == 0 {
		t.Fatalf("checksum %#x", f[d.L4+6:d.L4+8])
	}
}

func validUDP(f []byte, d Datagram) bool {
	var sum uint32
	if d.V6 {
		sum = csum.Sum(f[d.L3+8:d.L3+40], 0)
	} else {
		sum = csum.Sum(f[d.L3+12:d.L3+20], 0)
	}
	sum += ProtoUDP + uint32(8+d.PayloadLen)
	return csum.Checksum(f[d.L4:d.Payload+d.PayloadLen], sum) == 0
}

// TestNoAllocations: parsing and replying allocate nothing.
func TestNoAllocations(t *testing.T) {
	f := udp(testframe.Spec{Payload: make([]byte, 100)}).Build(t)
	orig := bytes.Clone(f)
	n := testing.AllocsPerRun(100, func() {
		copy(f, orig)
		d, err := Parse(f)
		if err != nil || Reply(f, d, d.PayloadLen) == 0 {
			t.Fatal("reply failed")
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per reply", n)
	}
}

// TestDescribe: the line names what an example wants to see.
func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		spec testframe.Spec
		want []string
	}{
		{testframe.Spec{Proto: layers.IPProtocolTCP, SPort: 1, DPort: 443, TCPFlags: "SA", VLAN: []uint16{7}}, []string{"vlan 7", "10.0.0.1 > 10.0.0.2", "tcp 1 > 443 [S.]"}},
		{udp(testframe.Spec{V6: true}), []string{"2001:db8::1 > 2001:db8::2 udp 1111 > 9000"}},
		{testframe.Spec{Ether: layers.EthernetTypeARP}, []string{"ethertype 0x0806"}},
		{udp(testframe.Spec{FragOff: 3}), []string{"fragment"}},
	} {
		got := Describe(tc.spec.Build(t))
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q lacks %q", got, w)
			}
		}
	}
	if got := Describe([]byte{1, 2, 3}); !strings.Contains(got, "runt") {
		t.Errorf("runt: %q", got)
	}
}
