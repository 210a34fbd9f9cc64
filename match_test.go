package packetio

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func ports(proto uint8, ps ...uint16) []Match {
	var ms []Match
	for _, p := range ps {
		ms = append(ms, MatchDstPort(proto, p)...)
	}
	return ms
}

func TestRulesExpansion(t *testing.T) {
	pfx := netip.MustParsePrefix
	mac1, mac2 := [6]byte{2, 0, 0, 0, 0, 1}, [6]byte{2, 0, 0, 0, 0, 2}
	many := func() []Match {
		var ms []Match
		for i := 0; i < 300; i++ {
			ms = append(ms, MatchVLAN(uint16(i)), MatchEtherType(uint16(0x8000+i)))
		}
		return ms
	}
	for _, tc := range []struct {
		name    string
		match   []Match
		want    int
		refused bool
		check   func(t *testing.T, rs []Rule)
	}{
		{"vlan and two ports", append([]Match{MatchVLAN(2053)}, ports(IPProtoUDP, 9001, 9005)...), 2, false, func(t *testing.T, rs []Rule) {
			for i, want := range []uint16{9001, 9005} {
				r := rs[i]
				if !r.VLANSet || r.VLAN != 2053 || !r.IPProtoSet || r.IPProto != IPProtoUDP || !r.DstPortSet || r.DstPort != want {
					t.Errorf("rule %d = %+v", i, r)
				}
			}
		}},
		{"one port", ports(IPProtoTCP, 80), 1, false, func(t *testing.T, rs []Rule) {
			if r := rs[0]; r.IPProto != IPProtoTCP || !r.IPProtoSet || r.DstPort != 80 || !r.DstPortSet || r.SrcPortSet {
				t.Errorf("rule = %+v", r)
			}
		}},
		{"two ports by two source prefixes", append(ports(IPProtoUDP, 1, 2), MatchSrcIP(pfx("10.0.0.0/8")), MatchSrcIP(pfx("2001:db8::/32"))), 4, false, nil},
		{"two vlans", []Match{MatchVLAN(1), MatchVLAN(2)}, 2, false, nil},
		{"two macs", []Match{MatchDstMAC(mac1), MatchDstMAC(mac2)}, 2, false, func(t *testing.T, rs []Rule) {
			if rs[0].MAC != mac1 || rs[1].MAC != mac2 || !rs[0].MACSet {
				t.Errorf("rules = %+v", rs)
			}
		}},
		{"two ethertypes", []Match{MatchEtherType(0x0800), MatchEtherType(0x86dd)}, 2, false, nil},
		{"two vlans by two ports", append([]Match{MatchVLAN(10), MatchVLAN(20)}, ports(IPProtoUDP, 1, 2)...), 4, false, func(t *testing.T, rs []Rule) {
			seen := map[[2]uint16]bool{}
			for _, r := range rs {
				if r.IPProto != IPProtoUDP {
					t.Errorf("rule %+v is not UDP", r)
				}
				seen[[2]uint16{r.VLAN, r.DstPort}] = true
			}
			if len(seen) != 4 {
				t.Errorf("pairs %v, want 4 distinct", seen)
			}
		}},
		{"destination and source port", append(ports(IPProtoUDP, 9001), MatchSrcPort(IPProtoUDP, 5000)...), 1, false, func(t *testing.T, rs []Rule) {
			if r := rs[0]; r.DstPort != 9001 || r.SrcPort != 5000 || !r.SrcPortSet || !r.DstPortSet {
				t.Errorf("rule = %+v", r)
			}
		}},
		{"sixteen ports", ports(IPProtoUDP, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16), 16, false, nil},
		{"seventeen ports", ports(IPProtoUDP, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17), 0, true, nil},
		{"300 vlans by 300 ethertypes", many(), 0, true, nil},
		{"duplicates are not merged", []Match{MatchVLAN(10), MatchVLAN(10)}, 2, false, nil},
		{"2 vlans x 3 ports x 3 prefixes", append(append([]Match{MatchVLAN(1), MatchVLAN(2)}, ports(IPProtoUDP, 1, 2, 3)...),
			MatchDstIP(pfx("10.0.0.1/32")), MatchDstIP(pfx("10.0.0.2/32")), MatchDstIP(pfx("10.0.0.3/32"))), 0, true, nil},
		{"hand-built port with a protocol match", []Match{MatchIPProto(IPProtoTCP), {Kind: MatchKindDstPort, Port: 22}}, 1, false, func(t *testing.T, rs []Rule) {
			if r := rs[0]; r.IPProto != IPProtoTCP || r.DstPort != 22 {
				t.Errorf("rule = %+v", r)
			}
		}},
		{"hand-built port carrying its protocol", []Match{{Kind: MatchKindDstPort, IPProto: IPProtoUDP, Port: 53}}, 1, false, func(t *testing.T, rs []Rule) {
			if r := rs[0]; !r.IPProtoSet || r.IPProto != IPProtoUDP {
				t.Errorf("rule lost the port's protocol: %+v", r)
			}
		}},
		{"zero filter", nil, 1, false, func(t *testing.T, rs []Rule) {
			if rs[0] != (Rule{}) {
				t.Errorf("zero filter rule = %+v, want empty", rs[0])
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, err := SteeringFilter{Match: tc.match}.Rules()
			if tc.refused {
				if !errors.Is(err, ErrUnsupported) {
					t.Fatalf("Rules = %d rules, %v; want ErrUnsupported", len(rs), err)
				}
				return
			}
			if err != nil || len(rs) != tc.want {
				t.Fatalf("Rules = %d rules, %v; want %d", len(rs), err, tc.want)
			}
			if tc.check != nil {
				tc.check(t, rs)
			}
		})
	}
}

func TestRulesPromiscuous(t *testing.T) {
	rs, err := SteeringFilter{Promiscuous: true}.Rules()
	if err != nil || len(rs) != 1 || rs[0] != (Rule{Promiscuous: true}) {
		t.Fatalf("Rules = %+v, %v", rs, err)
	}
}

func TestValidateRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    SteeringFilter
	}{
		{"promiscuous with a match", SteeringFilter{Promiscuous: true, Match: []Match{MatchVLAN(1)}}},
		{"two protocols", SteeringFilter{Match: []Match{MatchIPProto(IPProtoTCP), MatchIPProto(IPProtoUDP)}}},
		{"port of another protocol", SteeringFilter{Match: append([]Match{MatchIPProto(IPProtoUDP)}, MatchDstPort(IPProtoTCP, 80)...)}},
		{"port of another protocol, port first", SteeringFilter{Match: append(MatchDstPort(IPProtoTCP, 80), MatchIPProto(IPProtoUDP))}},
		{"two port protocols", SteeringFilter{Match: append(MatchDstPort(IPProtoTCP, 80), MatchSrcPort(IPProtoUDP, 53)...)}},
		{"invalid source prefix", SteeringFilter{Match: []Match{MatchSrcIP(netip.Prefix{})}}},
		{"invalid destination prefix", SteeringFilter{Match: []Match{{Kind: MatchKindDstIP}}}},
		{"vlan above 4095", SteeringFilter{Match: []Match{MatchVLAN(4096)}}},
		{"ethertype 0", SteeringFilter{Match: []Match{MatchEtherType(0)}}},
		{"zero kind", SteeringFilter{Match: []Match{{}}}},
		{"unknown kind", SteeringFilter{Match: []Match{{Kind: 9}}}},
		{"bare port", SteeringFilter{Match: []Match{{Kind: MatchKindDstPort, Port: 9}}}},
		{"bare source port", SteeringFilter{Match: []Match{{Kind: MatchKindSrcPort, Port: 9}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.f.Validate(); !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Validate = %v, want ErrUnsupported", err)
			}
			if _, err := tc.f.Rules(); !errors.Is(err, ErrUnsupported) {
				t.Fatalf("Rules = %v, want ErrUnsupported", err)
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    SteeringFilter
	}{
		{"zero", SteeringFilter{}},
		{"any mac", SteeringFilter{Match: []Match{MatchDstMAC([6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})}}},
		{"port 0", SteeringFilter{Match: MatchDstPort(IPProtoUDP, 0)}},
		{"ipv6 prefix", SteeringFilter{Match: []Match{MatchDstIP(netip.MustParsePrefix("2001:db8::/32"))}}},
		{"unmasked prefix", SteeringFilter{Match: []Match{MatchDstIP(netip.MustParsePrefix("10.1.2.3/8"))}}},
		{"vlan 4095", SteeringFilter{Match: []Match{MatchVLAN(MaxVLAN)}}},
		{"odd protocol", SteeringFilter{Match: []Match{MatchIPProto(253)}}},
		{"same protocol twice", SteeringFilter{Match: append(MatchDstPort(IPProtoUDP, 1), MatchSrcPort(IPProtoUDP, 2)...)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.f.Validate(); err != nil {
				t.Fatalf("Validate = %v", err)
			}
		})
	}
}

func TestFilterString(t *testing.T) {
	for _, tc := range []struct {
		f    SteeringFilter
		want string
	}{
		{SteeringFilter{Promiscuous: true}, "every packet the port sees"},
		{SteeringFilter{}, "packets addressed to this interface"},
		{SteeringFilter{Match: append([]Match{MatchVLAN(2043)}, ports(IPProtoUDP, 9000, 9001)...)}, "vlan 2043 and proto udp and (udp port 9000 or udp port 9001)"},
		{SteeringFilter{Match: ports(IPProtoTCP, 80, 443)}, "proto tcp and (tcp port 80 or tcp port 443)"},
		{SteeringFilter{Match: []Match{MatchVLAN(1), MatchVLAN(2)}}, "vlan 1 or vlan 2"},
		{SteeringFilter{Match: []Match{MatchEtherType(0x88b5)}}, "ethertype 0x88b5"},
	} {
		if got := tc.f.String(); got != tc.want {
			t.Errorf("String = %q, want %q", got, tc.want)
		}
	}
}

func TestMatchString(t *testing.T) {
	for _, tc := range []struct {
		m    Match
		want string
	}{
		{MatchDstMAC([6]byte{0x02, 0xab, 0, 0, 0, 0x01}), "to 02:ab:00:00:00:01"},
		{MatchVLAN(7), "vlan 7"},
		{MatchEtherType(0x0800), "ethertype 0x0800"},
		{MatchIPProto(IPProtoTCP), "proto tcp"},
		{MatchIPProto(IPProtoUDP), "proto udp"},
		{MatchIPProto(47), "proto ip/47"},
		{MatchSrcIP(netip.MustParsePrefix("10.0.0.0/8")), "from 10.0.0.0/8"},
		{MatchDstIP(netip.MustParsePrefix("2001:db8::1/128")), "to 2001:db8::1/128"},
		{MatchSrcPort(IPProtoUDP, 53)[1], "udp src port 53"},
		{MatchDstPort(IPProtoTCP, 22)[1], "tcp port 22"},
		{Match{Kind: 42}, "unknown match"},
	} {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.m, got, tc.want)
		}
	}
}

func TestPortConstructorsAddTheProtocol(t *testing.T) {
	for _, ms := range [][]Match{MatchDstPort(IPProtoUDP, 9), MatchSrcPort(IPProtoUDP, 9)} {
		if len(ms) != 2 || ms[0] != MatchIPProto(IPProtoUDP) || ms[1].IPProto != IPProtoUDP || ms[1].Port != 9 {
			t.Errorf("constructor returned %+v", ms)
		}
	}
}

// FuzzRules checks that Rules never panics, never exceeds MaxRules, and that
// every rule it returns carries a condition of every kind the filter names.
func FuzzRules(f *testing.F) {
	f.Add([]byte{1, 2, 3, 8, 8, 8})
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		var ms []Match
		for i := 0; i+1 < len(b) && len(ms) < 40; i += 2 {
			k := MatchKind(b[i] % 10)
			v := b[i+1]
			m := Match{Kind: k, VLAN: uint16(v) * 20, EtherType: uint16(v), IPProto: v % 3 * 11, Port: uint16(v)}
			if v%2 == 0 {
				m.Prefix = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, v, 0, 0}), 16)
			}
			ms = append(ms, m)
		}
		rs, err := SteeringFilter{Match: ms}.Rules()
		if err != nil {
			if !errors.Is(err, ErrUnsupported) {
				t.Fatalf("error %v does not wrap ErrUnsupported", err)
			}
			return
		}
		if len(rs) == 0 || len(rs) > MaxRules {
			t.Fatalf("%d rules", len(rs))
		}
		for _, r := range rs {
			for _, m := range ms {
				switch m.Kind {
				case MatchKindVLAN:
					if !r.VLANSet {
						t.Fatalf("rule %+v lost a VLAN condition", r)
					}
				case MatchKindDstPort:
					if !r.DstPortSet || !r.IPProtoSet {
						t.Fatalf("rule %+v lost a port condition", r)
					}
				case MatchKindSrcIP:
					if !r.SrcPrefix.IsValid() {
						t.Fatalf("rule %+v lost a source prefix", r)
					}
				case MatchKindEtherType:
					if r.EtherType == 0 {
						t.Fatalf("rule %+v lost an EtherType", r)
					}
				}
			}
		}
	})
}

// TestCanonicalPrefix: every backend compiles one reading of a prefix; an
// IPv4-mapped prefix shorter than /96 spans both families and is refused
// (it used to compile as IPv4 in one place and IPv6 in another).
func TestCanonicalPrefix(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "" means refused
	}{
		{"10.1.2.3/8", "10.0.0.0/8"},
		{"2001:db8::1/32", "2001:db8::/32"},
		{"::ffff:10.1.2.3/104", "10.0.0.0/8"},
		{"::ffff:10.1.2.3/128", "10.1.2.3/32"},
		{"::ffff:0.0.0.0/96", "0.0.0.0/0"},
		{"::ffff:0.0.0.0/80", ""},
		{"::ffff:10.0.0.1/95", ""},
		{"::/80", "::/80"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := CanonicalPrefix(netip.MustParsePrefix(tc.in))
			if tc.want == "" {
				if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tc.in) {
					t.Fatalf("CanonicalPrefix(%s) = %v, %v; want ErrUnsupported naming it", tc.in, got, err)
				}
				f := SteeringFilter{Match: []Match{MatchDstIP(netip.MustParsePrefix(tc.in))}}
				if _, err := f.Rules(); !errors.Is(err, ErrUnsupported) {
					t.Fatalf("Rules accepted %s: %v", tc.in, err)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Fatalf("CanonicalPrefix(%s) = %v, %v; want %s", tc.in, got, err, tc.want)
			}
			rules, err := SteeringFilter{Match: []Match{MatchSrcIP(netip.MustParsePrefix(tc.in))}}.Rules()
			if err != nil || len(rules) != 1 || rules[0].SrcPrefix.String() != tc.want {
				t.Fatalf("Rules(%s) = %v, %v; want source %s", tc.in, rules, err, tc.want)
			}
		})
	}
	if _, err := CanonicalPrefix(netip.Prefix{}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("zero prefix: %v", err)
	}
}
