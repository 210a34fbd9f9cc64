package flow

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/packetio/packetio"
)

var own = [6]byte{2, 0, 0, 0, 0, 1}

func compile(t *testing.T, m ...packetio.Match) []Spec {
	t.Helper()
	s, err := Compile(packetio.SteeringFilter{Match: m}, own)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDefaultIsOwnMAC(t *testing.T) {
	s, err := Compile(packetio.SteeringFilter{}, own)
	if err != nil || len(s) != 1 || s[0].DstMAC != own || s[0].DstMACMask != fullMAC || s[0].IP != 0 {
		t.Fatalf("%+v %v", s, err)
	}
}

func TestPromiscuous(t *testing.T) {
	s, err := Compile(packetio.SteeringFilter{Promiscuous: true}, own)
	if err != nil || len(s) != 1 || !s[0].Promiscuous || s[0].String() != "every packet" {
		t.Fatalf("%+v %v", s, err)
	}
}

func TestSpecs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		match []packetio.Match
		want  []string
	}{
		{"vlan and ethertype", []packetio.Match{packetio.MatchVLAN(2043), packetio.MatchEtherType(0x88b5)}, []string{"vlan 2043 ethertype 0x88b5"}},
		{"ipv4 prefix, host bits masked", []packetio.Match{packetio.MatchDstIP(netip.MustParsePrefix("10.1.2.3/16"))}, []string{"ip4 to 10.1.0.0/16"}},
		{"ipv6 prefix", []packetio.Match{packetio.MatchSrcIP(netip.MustParsePrefix("2001:db8::1/32"))}, []string{"ip6 from 2001:db8::/32"}},
		{"udp port on both versions", packetio.MatchDstPort(packetio.IPProtoUDP, 9000), []string{"ip4 proto 17 dport 9000", "ip6 proto 17 dport 9000"}},
		{"udp port, v4 by ethertype", append(packetio.MatchDstPort(packetio.IPProtoUDP, 53), packetio.MatchEtherType(0x0800)), []string{"ethertype 0x0800 ip4 proto 17 dport 53"}},
		{"tcp src port and v6 dst", append(packetio.MatchSrcPort(packetio.IPProtoTCP, 443), packetio.MatchDstIP(netip.MustParsePrefix("fe80::1/128"))), []string{"ip6 to fe80::1/128 proto 6 sport 443"}},
		{"two ports are two rules", append(packetio.MatchDstPort(packetio.IPProtoUDP, 1), packetio.MatchDstPort(packetio.IPProtoUDP, 2)[1], packetio.MatchEtherType(0x0800)), []string{"ethertype 0x0800 ip4 proto 17 dport 1", "ethertype 0x0800 ip4 proto 17 dport 2"}},
		{"mac", []packetio.Match{packetio.MatchDstMAC([6]byte{1, 2, 3, 4, 5, 6})}, []string{"dst 01:02:03:04:05:06"}},
		{"icmp on v4", []packetio.Match{packetio.MatchIPProto(1), packetio.MatchSrcIP(netip.MustParsePrefix("192.0.2.0/24"))}, []string{"ip4 from 192.0.2.0/24 proto 1"}},
	} {
		s := compile(t, tc.match...)
		if len(s) != len(tc.want) {
			t.Errorf("%s: %d specs %v, want %d", tc.name, len(s), s, len(tc.want))
			continue
		}
		for i := range s {
			if s[i].String() != tc.want[i] {
				t.Errorf("%s: spec %d = %q, want %q", tc.name, i, s[i].String(), tc.want[i])
			}
		}
	}
}

func TestMasks(t *testing.T) {
	s := compile(t, packetio.MatchSrcIP(netip.MustParsePrefix("10.0.0.0/12")))[0]
	if [4]byte(s.SrcMask[:4]) != [4]byte{255, 240, 0, 0} || [4]byte(s.Src[:4]) != [4]byte{10, 0, 0, 0} {
		t.Fatalf("v4 mask %v addr %v", s.SrcMask[:4], s.Src[:4])
	}
	s = compile(t, packetio.MatchVLAN(4095))[0]
	if s.VLANMask != 0x0fff {
		t.Fatal("VLAN mask covers more than the ID")
	}
}

func TestRefusals(t *testing.T) {
	for name, m := range map[string][]packetio.Match{
		"v4 and v6 addresses": {packetio.MatchSrcIP(netip.MustParsePrefix("10.0.0.0/8")), packetio.MatchDstIP(netip.MustParsePrefix("::1/128"))},
		"arp and an address":  {packetio.MatchEtherType(0x0806), packetio.MatchDstIP(netip.MustParsePrefix("10.0.0.0/8"))},
		"v6 type, v4 address": {packetio.MatchEtherType(0x86dd), packetio.MatchDstIP(netip.MustParsePrefix("10.0.0.0/8"))},
		"ports on icmp":       {packetio.MatchIPProto(1), {Kind: packetio.MatchKindDstPort, IPProto: 1, Port: 7}},
		"port without proto":  {{Kind: packetio.MatchKindDstPort, Port: 7}},
	} {
		if _, err := Compile(packetio.SteeringFilter{Match: m}, own); !errors.Is(err, packetio.ErrUnsupported) {
			t.Errorf("%s: %v, want ErrUnsupported", name, err)
		}
	}
}
