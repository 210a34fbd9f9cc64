package frame

import (
	"net"
	"net/netip"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

var (
	macA = net.HardwareAddr{0x02, 0, 0, 0, 0, 0xaa}
	macB = net.HardwareAddr{0x02, 0, 0, 0, 0, 0xbb}
)

func TestBuildAgreesWithGopacket(t *testing.T) {
	for _, s := range []Spec{
		{SrcMAC: macA, DstMAC: macB, SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"), SrcPort: 1024, DstPort: 9, Size: 60},
		{SrcMAC: macA, DstMAC: macB, VLAN: 2053, SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"), SrcPort: 5, DstPort: 9000, Size: 1514},
		{SrcMAC: macA, DstMAC: macB, SrcIP: netip.MustParseAddr("2001:db8::1"), DstIP: netip.MustParseAddr("2001:db8::2"), SrcPort: 7, DstPort: 8, Size: 60},
		{SrcMAC: macA, DstMAC: macB, VLAN: 7, SrcIP: netip.MustParseAddr("2001:db8::1"), DstIP: netip.MustParseAddr("2001:db8::2"), SrcPort: 7, DstPort: 8, Size: 200},
	} {
		if err := s.Check(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 2048)
		n := Build(buf, s)
		if n != s.Len() || n < MinFrame {
			t.Fatalf("%+v: built %d bytes, want %d", s, n, s.Len())
		}
		p := gopacket.NewPacket(buf[:n], layers.LayerTypeEthernet, gopacket.Default)
		if p.ErrorLayer() != nil {
			t.Fatalf("%+v: gopacket: %v", s, p.ErrorLayer().Error())
		}
		udp, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if udp == nil || uint16(udp.SrcPort) != s.SrcPort || uint16(udp.DstPort) != s.DstPort {
			t.Fatalf("%+v: UDP layer %+v", s, udp)
		}
		if s.VLAN != 0 {
			if d, _ := p.Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q); d == nil || d.VLANIdentifier != s.VLAN {
				t.Fatalf("%+v: VLAN layer %+v", s, d)
			}
		}
		// gopacket recomputes checksums; ours must equal its.
		var ipLayer gopacket.NetworkLayer
		if s.SrcIP.Is4() {
			ip := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
			want := ip.Checksum
			ip.Checksum = 0
			sb := gopacket.NewSerializeBuffer()
			if err := ip.SerializeTo(sb, gopacket.SerializeOptions{ComputeChecksums: true}); err != nil {
				t.Fatal(err)
			}
			if got := uint16(sb.Bytes()[10])<<8 | uint16(sb.Bytes()[11]); got != want {
				t.Fatalf("IPv4 checksum %#x, gopacket %#x", want, got)
			}
			ipLayer = ip
		} else {
			ipLayer = p.Layer(layers.LayerTypeIPv6).(*layers.IPv6)
			want := udp.Checksum
			udp.SetNetworkLayerForChecksum(ipLayer)
			sb := gopacket.NewSerializeBuffer()
			if err := gopacket.SerializeLayers(sb, gopacket.SerializeOptions{ComputeChecksums: true}, udp, gopacket.Payload(udp.Payload)); err != nil {
				t.Fatal(err)
			}
			if got := uint16(sb.Bytes()[6])<<8 | uint16(sb.Bytes()[7]); got != want {
				t.Fatalf("UDP/IPv6 checksum %#x, gopacket %#x", want, got)
			}
		}
		in, ok := Parse(buf[:n])
		if !ok || in.SrcIP != s.SrcIP || in.DstIP != s.DstIP || in.SrcPort != s.SrcPort || in.DstPort != s.DstPort || in.VLAN != s.VLAN || in.Proto != 17 {
			t.Fatalf("Parse = %+v, %v", in, ok)
		}
	}
}

func TestBuildRefusesShortBuffer(t *testing.T) {
	s := Spec{SrcMAC: macA, DstMAC: macB, SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"), Size: 100}
	if n := Build(make([]byte, 99), s); n != 0 {
		t.Fatalf("built %d bytes into 99", n)
	}
}

func TestCheck(t *testing.T) {
	good := Spec{SrcMAC: macA, DstMAC: macB, SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2")}
	for _, mut := range []func(*Spec){
		func(s *Spec) { s.SrcMAC = nil },
		func(s *Spec) { s.DstIP = netip.Addr{} },
		func(s *Spec) { s.DstIP = netip.MustParseAddr("::1") },
		func(s *Spec) { s.VLAN = 4095 },
		func(s *Spec) { s.Size = 1 << 20 },
	} {
		s := good
		mut(&s)
		if s.Check() == nil {
			t.Errorf("Check accepted %+v", s)
		}
	}
	if err := good.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestBuildDoesNotAllocate(t *testing.T) {
	s := Spec{SrcMAC: macA, DstMAC: macB, SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"), Size: 64}
	buf := make([]byte, 2048)
	if a := testing.AllocsPerRun(100, func() { Build(buf, s) }); a != 0 {
		t.Fatalf("Build allocates %.0f times", a)
	}
}

func FuzzParse(f *testing.F) {
	buf := make([]byte, 2048)
	f.Add(buf[:Build(buf, Spec{SrcMAC: macA, DstMAC: macB, VLAN: 3, SrcIP: netip.MustParseAddr("10.0.0.1"), DstIP: netip.MustParseAddr("10.0.0.2"), Size: 80})])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		in, ok := Parse(b)
		if ok && (in.L3 > len(b) || in.L4 > len(b)) {
			t.Fatalf("offsets past the frame: %+v", in)
		}
	})
}
