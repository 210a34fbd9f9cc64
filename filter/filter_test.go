package filter

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"
	"github.com/google/gopacket/layers"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/testframe"
)

// classifier loads the filter for a test. A verifier rejection fails the
// test; a kernel that cannot load BPF at all stops it (a failure under
// PACKETIO_CONFORM_REQUIRED).
func classifier(t *testing.T, p Program) *Classifier {
	t.Helper()
	testenv.NeedBPF(t)
	_ = rlimit.RemoveMemlock()
	c, err := NewClassifier(p)
	if err != nil {
		if IsVerifierError(err) {
			t.Fatalf("verifier: %+v", err)
		}
		t.Fatalf("load the filter: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

type pkt = testframe.Spec

type verdict struct {
	name string
	p    pkt
	want bool
}

func runVerdicts(t *testing.T, c *Classifier, cases []verdict) {
	t.Helper()
	for _, v := range cases {
		got, err := c.Match(v.p.Build(t))
		if err != nil {
			t.Errorf("%s: %v", v.name, err)
			continue
		}
		if got != v.want {
			t.Errorf("%s: matched %v, want %v", v.name, got, v.want)
		}
	}
}

const (
	tcp  = layers.IPProtocolTCP
	udp  = layers.IPProtocolUDP
	icmp = layers.IPProtocolICMPv4
	icm6 = layers.IPProtocolICMPv6
)

// TestMatchers runs every built-in matcher against frames it must take and
// near misses it must leave: the other family, the other protocol, the
// neighbouring port, IPv4 with options, a later fragment, VLAN tags.
func TestMatchers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		m     Match
		cases []verdict
	}{
		{"UDPPort", MatchUDPPort(53, 443), []verdict{
			{"v4 53", pkt{DPort: 53}, true},
			{"v4 443", pkt{DPort: 443}, true},
			{"v6 53", pkt{V6: true, DPort: 53}, true},
			{"v4 54", pkt{DPort: 54}, false},
			{"v4 src 53", pkt{SPort: 53, DPort: 1000}, false},
			{"tcp 53", pkt{Proto: tcp, DPort: 53}, false},
			{"v4 options", pkt{DPort: 53, IPOpts: true}, false},
			{"later fragment", pkt{DPort: 53, FragOff: 100}, false},
			{"vlan", pkt{DPort: 53, VLAN: []uint16{7}}, true},
			{"qinq outer", pkt{DPort: 53, VLAN: []uint16{7}, QinQ: true}, true},
			{"two tags", pkt{DPort: 53, VLAN: []uint16{7, 8}}, false},
			{"v6 vlan", pkt{V6: true, DPort: 443, VLAN: []uint16{4095}}, true},
			{"port 13568 (53 byte-swapped)", pkt{DPort: 13568}, false},
		}},
		{"UDPAnyPort", MatchUDPPort(), []verdict{
			{"udp", pkt{DPort: 9}, true},
			{"udp6", pkt{V6: true, DPort: 9}, true},
			{"tcp", pkt{Proto: tcp, DPort: 9}, false},
		}},
		{"TCPPort", MatchTCPPort(22), []verdict{
			{"v4", pkt{Proto: tcp, DPort: 22}, true},
			{"v6", pkt{V6: true, Proto: tcp, DPort: 22}, true},
			{"udp", pkt{DPort: 22}, false},
			{"sport", pkt{Proto: tcp, SPort: 22, DPort: 5000}, false},
		}},
		{"UDPSrcPort", MatchUDPSrcPort(53), []verdict{
			{"reply", pkt{SPort: 53, DPort: 40000}, true},
			{"v6 reply", pkt{V6: true, SPort: 53, DPort: 40000}, true},
			{"query", pkt{SPort: 40000, DPort: 53}, false},
		}},
		{"TCPSrcPort", MatchTCPSrcPort(443), []verdict{
			{"v4", pkt{Proto: tcp, SPort: 443, DPort: 50000}, true},
			{"udp", pkt{SPort: 443, DPort: 50000}, false},
		}},
		{"IPv4Proto", MatchIPv4Proto(47), []verdict{
			{"gre", pkt{Proto: 47}, true},
			{"gre fragment", pkt{Proto: 47, FragOff: 3}, true},
			{"gre v6", pkt{V6: true, Proto: 47}, false},
			{"udp", pkt{}, false},
		}},
		{"IPv6NextHeader", MatchIPv6NextHeader(47), []verdict{
			{"gre v6", pkt{V6: true, Proto: 47}, true},
			{"gre v4", pkt{Proto: 47}, false},
		}},
		{"ICMPv4Echo", MatchICMPv4Echo(), []verdict{
			{"request", pkt{Proto: icmp, ICMPType: 8}, true},
			{"reply", pkt{Proto: icmp, ICMPType: 0}, false},
			{"with options", pkt{Proto: icmp, ICMPType: 8, IPOpts: true}, false},
		}},
		{"ICMPv6Echo", MatchICMPv6Echo(), []verdict{
			{"request", pkt{V6: true, Proto: icm6, ICMPType: 128}, true},
			{"reply", pkt{V6: true, Proto: icm6, ICMPType: 129}, false},
			{"v4 request", pkt{Proto: icmp, ICMPType: 8}, false},
		}},
		{"EtherType", MatchEtherType(EtherTypeARP), []verdict{
			{"arp", pkt{Ether: layers.EthernetTypeARP}, true},
			{"tagged arp", pkt{Ether: layers.EthernetTypeARP, VLAN: []uint16{3}}, true},
			{"ipv4", pkt{}, false},
		}},
		{"DstMAC", MatchDstMAC([6]byte{0xfe, 0x80, 0x01, 0x02, 0x03, 0xff}), []verdict{
			{"exact", pkt{DstMAC: []byte{0xfe, 0x80, 0x01, 0x02, 0x03, 0xff}}, true},
			{"last byte", pkt{DstMAC: []byte{0xfe, 0x80, 0x01, 0x02, 0x03, 0xfe}}, false},
			{"first byte", pkt{DstMAC: []byte{0x7e, 0x80, 0x01, 0x02, 0x03, 0xff}}, false},
		}},
		{"VLAN", MatchVLAN(100), []verdict{
			{"tag 100", pkt{VLAN: []uint16{100}}, true},
			{"s-tag 100", pkt{VLAN: []uint16{100, 5}, QinQ: true}, true},
			{"tag 101", pkt{VLAN: []uint16{101}}, false},
			{"inner 100", pkt{VLAN: []uint16{5, 100}}, false},
			{"untagged", pkt{}, false},
		}},
		{"SrcIPv4", MatchSrcIP("192.168.128.0/17"), []verdict{
			{"inside", pkt{Src: "192.168.200.1", Dst: "10.0.0.1"}, true},
			{"edge", pkt{Src: "192.168.128.0", Dst: "10.0.0.1"}, true},
			{"outside", pkt{Src: "192.168.127.255", Dst: "10.0.0.1"}, false},
			{"dst inside", pkt{Src: "10.0.0.1", Dst: "192.168.200.1"}, false},
			{"options", pkt{Src: "192.168.200.1", Dst: "10.0.0.1", IPOpts: true}, true},
			{"tagged", pkt{Src: "192.168.200.1", Dst: "10.0.0.1", VLAN: []uint16{9}}, true},
		}},
		{"DstIPv4HighBit", MatchDstIP("240.1.2.3"), []verdict{
			{"exact", pkt{Src: "10.0.0.1", Dst: "240.1.2.3"}, true},
			{"next", pkt{Src: "10.0.0.1", Dst: "240.1.2.4"}, false},
		}},
		{"DstIPv6", MatchDstIP("2001:db8:ffff::/48"), []verdict{
			{"inside", pkt{V6: true, Src: "2001:db8::1", Dst: "2001:db8:ffff:1::9"}, true},
			{"outside", pkt{V6: true, Src: "2001:db8::1", Dst: "2001:db8:fffe::9"}, false},
			{"v4", pkt{}, false},
		}},
		{"MappedHost", MatchDstIP("::ffff:10.0.0.1"), []verdict{
			{"v4 packet", pkt{Src: "10.0.0.2", Dst: "10.0.0.1"}, true},
			{"v4 other", pkt{Src: "10.0.0.2", Dst: "10.0.0.3"}, false},
		}},
		{"MappedPrefix", MatchDstIP("::ffff:10.0.0.0/104"), []verdict{
			{"v4 inside", pkt{Src: "192.168.0.2", Dst: "10.200.0.1"}, true},
			{"v4 outside", pkt{Src: "10.0.0.2", Dst: "11.0.0.1"}, false},
			{"v6 packet", pkt{V6: true, Src: "2001:db8::1", Dst: "::ffff:10.0.0.1"}, false},
		}},
		{"SrcIPv6Host", MatchSrcIP("fe80::1"), []verdict{
			{"exact", pkt{V6: true, Src: "fe80::1", Dst: "ff02::1"}, true},
			{"other", pkt{V6: true, Src: "fe80::2", Dst: "ff02::1"}, false},
		}},
		{"Flow", MatchFlow("10.0.0.1", "10.0.0.2/32"), []verdict{
			{"forward", pkt{Src: "10.0.0.1", Dst: "10.0.0.2"}, true},
			{"reverse", pkt{Src: "10.0.0.2", Dst: "10.0.0.1"}, false},
			{"half", pkt{Src: "10.0.0.1", Dst: "10.0.0.3"}, false},
		}},
		{"And", MatchAnd(MatchVLAN(20), MatchUDPPort(9000), MatchDstIP("10.9.0.0/16")), []verdict{
			{"all three", pkt{VLAN: []uint16{20}, DPort: 9000, Dst: "10.9.1.1", Src: "10.0.0.1"}, true},
			{"wrong vlan", pkt{VLAN: []uint16{21}, DPort: 9000, Dst: "10.9.1.1", Src: "10.0.0.1"}, false},
			{"wrong port", pkt{VLAN: []uint16{20}, DPort: 9001, Dst: "10.9.1.1", Src: "10.0.0.1"}, false},
			{"wrong net", pkt{VLAN: []uint16{20}, DPort: 9000, Dst: "10.8.1.1", Src: "10.0.0.1"}, false},
			{"untagged", pkt{DPort: 9000, Dst: "10.9.1.1", Src: "10.0.0.1"}, false},
		}},
		{"Any", MatchAny(MatchIPv4Proto(47), MatchIPv6NextHeader(47)), []verdict{
			{"gre v4", pkt{Proto: 47}, true},
			{"gre v6", pkt{V6: true, Proto: 47}, true},
			{"udp", pkt{}, false},
		}},
		{"AndOfAny", MatchAnd(MatchAny(MatchVLAN(5), MatchVLAN(6)), MatchUDPPort(53)), []verdict{
			{"vlan 5", pkt{VLAN: []uint16{5}, DPort: 53}, true},
			{"vlan 6", pkt{VLAN: []uint16{6}, DPort: 53}, true},
			{"vlan 7", pkt{VLAN: []uint16{7}, DPort: 53}, false},
			{"vlan 5 port 54", pkt{VLAN: []uint16{5}, DPort: 54}, false},
		}},
		{"L4PortIHL", MatchL4Port(17, false, 53, 5353), []verdict{
			{"v4", pkt{DPort: 53}, true},
			{"v4 options", pkt{DPort: 5353, IPOpts: true}, true},
			{"v4 options other port", pkt{DPort: 54, IPOpts: true}, false},
			{"later fragment", pkt{DPort: 53, FragOff: 100}, false},
			{"v6", pkt{V6: true, DPort: 53}, true},
			{"tcp", pkt{Proto: tcp, DPort: 53}, false},
			{"tagged options", pkt{DPort: 53, IPOpts: true, VLAN: []uint16{9}}, true},
		}},
		{"L4SrcPortIHL", MatchL4Port(6, true, 443), []verdict{
			{"v4", pkt{Proto: tcp, SPort: 443, DPort: 1}, true},
			{"v4 options", pkt{Proto: tcp, SPort: 443, DPort: 1, IPOpts: true}, true},
			{"dst 443", pkt{Proto: tcp, SPort: 1, DPort: 443}, false},
		}},
		{"All", MatchAll(), []verdict{{"udp", pkt{}, true}, {"arp", pkt{Ether: layers.EthernetTypeARP}, true}}},
		{"None", MatchNone(), []verdict{{"udp", pkt{}, false}, {"arp", pkt{Ether: layers.EthernetTypeARP}, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runVerdicts(t, classifier(t, Program{Matches: []Match{tc.m}}), tc.cases)
		})
	}
}

// TestMatchersOR: matches of one filter are alternatives.
func TestMatchersOR(t *testing.T) {
	c := classifier(t, Program{Matches: []Match{MatchUDPPort(4789), MatchTCPPort(179), MatchICMPv4Echo()}})
	runVerdicts(t, c, []verdict{
		{"vxlan", pkt{DPort: 4789}, true},
		{"bgp", pkt{Proto: tcp, DPort: 179}, true},
		{"ping", pkt{Proto: icmp, ICMPType: 8}, true},
		{"dns", pkt{DPort: 53}, false},
	})
}

// TestExceptWins: an exception passes what the filter would take.
func TestExceptWins(t *testing.T) {
	c := classifier(t, Program{Matches: []Match{MatchAll()}, Except: []Match{MatchSrcIP("192.0.2.10/32")}})
	runVerdicts(t, c, []verdict{
		{"noisy host", pkt{Src: "192.0.2.10", Dst: "10.0.0.1"}, false},
		{"neighbour", pkt{Src: "192.0.2.11", Dst: "10.0.0.1"}, true},
	})
	if _, err := NewClassifier(Program{Matches: []Match{MatchUDPPort(1)}, Except: []Match{MatchAll()}}); !errors.Is(err, packetio.ErrUnsupported) {
		t.Fatalf("MatchAll as an exception: %v, want ErrUnsupported", err)
	}
}

// TestKeepManagement (unscoped, as MatchPacket builds it): what keeps a
// host reachable stays with the kernel under MatchAll.
func TestKeepManagement(t *testing.T) {
	c := classifier(t, Program{Matches: []Match{MatchAll()}, Except: ManagementRules([]uint16{2222}, nil)})
	runVerdicts(t, c, []verdict{
		{"arp", pkt{Ether: layers.EthernetTypeARP}, false},
		{"tagged arp", pkt{Ether: layers.EthernetTypeARP, VLAN: []uint16{3}}, false},
		{"nd solicit", pkt{V6: true, Proto: icm6, ICMPType: 135}, false},
		{"nd redirect", pkt{V6: true, Proto: icm6, ICMPType: 137}, false},
		{"icmpv6 echo", pkt{V6: true, Proto: icm6, ICMPType: 128}, true},
		{"ssh in", pkt{Proto: tcp, SPort: 50000, DPort: 22}, false},
		{"ssh return", pkt{Proto: tcp, SPort: 22, DPort: 50000}, false},
		{"ssh v6", pkt{V6: true, Proto: tcp, SPort: 50000, DPort: 22}, false},
		{"extra port", pkt{Proto: tcp, SPort: 50000, DPort: 2222}, false},
		{"dns reply", pkt{SPort: 53, DPort: 40000}, false},
		{"dns tcp reply", pkt{Proto: tcp, SPort: 53, DPort: 40000}, false},
		{"dns query", pkt{SPort: 40000, DPort: 53}, true},
		{"udp 22", pkt{DPort: 22}, true},
		{"plain udp", pkt{DPort: 9}, true},
	})
}

// TestKeepManagementScoped: port rules hold only for this host's addresses.
func TestKeepManagementScoped(t *testing.T) {
	testenv.NeedBPF(t)
	local := mustPrefixes(t, "10.0.0.2/32", "2001:db8::2/128")
	c := classifier(t, Program{Matches: []Match{MatchAll()}, Except: ManagementRules(nil, local)})
	runVerdicts(t, c, []verdict{
		{"ssh to us", pkt{Proto: tcp, SPort: 50000, DPort: 22, Src: "10.0.0.1", Dst: "10.0.0.2"}, false},
		{"ssh to us v6", pkt{V6: true, Proto: tcp, SPort: 50000, DPort: 22, Src: "2001:db8::1", Dst: "2001:db8::2"}, false},
		{"transit ssh", pkt{Proto: tcp, SPort: 50000, DPort: 22, Src: "10.0.0.1", Dst: "10.0.0.3"}, true},
		{"arp", pkt{Ether: layers.EthernetTypeARP}, false},
	})
	c2 := classifier(t, Program{Matches: []Match{MatchAll()}, Except: ManagementRules(nil, mustPrefixes(t))})
	runVerdicts(t, c2, []verdict{
		{"no address: ssh taken", pkt{Proto: tcp, SPort: 50000, DPort: 22}, true},
		{"no address: arp kept", pkt{Ether: layers.EthernetTypeARP}, false},
	})
}

// TestCustomMatch: the seed's reimplementation of MatchUDPPort(5000) through
// NewMatch, with near misses.
func TestCustomMatch(t *testing.T) {
	udp5000 := NewMatch("udp/5000", func(e MatchEnv) (asm.Instructions, error) {
		ins, frame := e.FrameBase()
		ins = append(ins, e.Bounds(frame, 36+2)...)
		return append(ins,
			asm.LoadMem(asm.R3, frame, OffEtherType, asm.Half),
			asm.JNE.Imm(asm.R3, NetShort(EtherTypeIPv4), e.Next),
			asm.LoadMem(asm.R3, frame, 23, asm.Byte),
			asm.JNE.Imm(asm.R3, 17, e.Next),
			asm.LoadMem(asm.R3, frame, 36, asm.Half),
			asm.JEq.Imm(asm.R3, NetShort(5000), e.Redirect),
		), nil
	})
	runVerdicts(t, classifier(t, Program{Matches: []Match{udp5000}}), []verdict{
		{"5000", pkt{DPort: 5000}, true},
		{"5001", pkt{DPort: 5001}, false},
		{"tagged", pkt{DPort: 5000, VLAN: []uint16{1}}, true},
		{"tcp", pkt{Proto: tcp, DPort: 5000}, false},
	})
	if got := udp5000.String(); got != "udp/5000" {
		t.Errorf("name %q", got)
	}
}

// TestBlockContract: what a custom block may not do is refused before the
// verifier, with a message that says why.
func TestBlockContract(t *testing.T) {
	for _, tc := range []struct {
		name string
		code asm.Instructions
		want string
	}{
		{"reads R8", asm.Instructions{asm.Mov.Reg(asm.R1, asm.R8)}, "R8"},
		{"writes R8", asm.Instructions{asm.Mov.Imm(asm.R8, 1)}, "R8"},
		{"writes R6", asm.Instructions{asm.Add.Imm(asm.R6, 4)}, "R6"},
		{"writes R7", asm.Instructions{asm.LoadMem(asm.R7, asm.R6, 0, asm.Byte)}, "R7"},
		{"writes R9", asm.Instructions{asm.Mov.Imm(asm.R9, 0)}, "R9"},
		{"returns", asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}, "returns"},
		{"stack outside", asm.Instructions{storeImm64(asm.R10, -72, 0)}, "stack"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := tc.code
			m := NewMatch("bad", func(MatchEnv) (asm.Instructions, error) { return code, nil })
			_, err := Program{Matches: []Match{m}, Verdict: VerdictTX}.Instructions()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("assemble: %v, want an error naming %q", err, tc.want)
			}
		})
	}
	// Inside the block's stack area is fine, and so is reading R6/R7/R9.
	ok := NewMatch("ok", func(e MatchEnv) (asm.Instructions, error) {
		return asm.Instructions{
			storeImm64(asm.R10, -BlockStack, 0),
			asm.Mov.Reg(asm.R1, asm.R9),
			asm.Mov.Reg(asm.R2, asm.R6),
		}, nil
	})
	if _, err := (Program{Matches: []Match{ok}, Verdict: VerdictTX}).Instructions(); err != nil {
		t.Fatalf("a block inside the contract: %v", err)
	}
}

// TestMatchErrors: bad arguments and broken builders surface as errors from
// the filter's construction, never as panics.
func TestMatchErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Match
	}{
		{"zero", Match{}},
		{"bad cidr", MatchSrcIP("10.0.0.0/33")},
		{"bad address", MatchDstIP("not-an-ip")},
		{"mixed flow", MatchFlow("10.0.0.1", "::1")},
		{"mapped /80", MatchDstIP("::ffff:0.0.0.0/80")},
		{"mapped /80 flow", MatchFlow("::ffff:10.0.0.0/80", "::1")},
		{"vlan 4096", MatchVLAN(4096)},
		{"nil builder", NewMatch("x", nil)},
		{"builder error", NewMatch("x", func(MatchEnv) (asm.Instructions, error) { return nil, errors.New("nope") })},
		{"builder panic", NewMatch("x", func(MatchEnv) (asm.Instructions, error) { panic("boom") })},
		{"empty and", MatchAnd()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := (Program{Matches: []Match{tc.m}, Verdict: VerdictTX}).Instructions(); err == nil {
				t.Fatal("accepted")
			}
		})
	}
	if _, err := (Program{Verdict: VerdictTX}).Instructions(); !errors.Is(err, packetio.ErrUnsupported) || !strings.Contains(err.Error(), "MatchAll") {
		t.Fatalf("no filter: %v", err)
	}
}

// TestVerifierRejectionIsTyped: a block that reads the packet without a
// bounds check gets through our checks and is refused by the kernel's
// verifier, as a *ebpf.VerifierError.
func TestVerifierRejectionIsTyped(t *testing.T) {
	testenv.NeedBPF(t)
	_ = rlimit.RemoveMemlock()
	m := NewMatch("unbounded", func(e MatchEnv) (asm.Instructions, error) {
		return asm.Instructions{
			asm.LoadMem(asm.R1, asm.R7, 40, asm.Byte),
			asm.JEq.Imm(asm.R1, 1, e.Redirect),
		}, nil
	})
	_, err := NewClassifier(Program{Matches: []Match{m}})
	if !IsVerifierError(err) {
		t.Fatalf("unbounded load: %v, want a verifier error", err)
	}
}

// TestShortFrame: the kernel refuses frames under 14 bytes; MatchPacket
// says why instead of passing on a bare EINVAL.
func TestShortFrame(t *testing.T) {
	_, err := MatchPacket(make([]byte, 13), Program{Matches: []Match{MatchAll()}})
	if !errors.Is(err, packetio.ErrBadLength) {
		t.Fatalf("13-byte frame: %v", err)
	}
}

// TestFiltersVerifyWithFrags: every matcher also loads as a multi-buffer
// program.
func TestFiltersVerifyWithFrags(t *testing.T) {
	c := classifier(t, Program{Frags: true, Except: ManagementRules(nil, nil), Matches: []Match{MatchUDPPort(1), MatchTCPSrcPort(2), MatchIPv4Proto(3), MatchIPv6NextHeader(4),
		MatchICMPv4Echo(), MatchICMPv6Echo(), MatchEtherType(5), MatchDstMAC([6]byte{1}), MatchVLAN(6),
		MatchSrcIP("10.0.0.0/8"), MatchDstIP("::/0"), MatchFlow("1.1.1.1", "2.2.2.2")}})
	runVerdicts(t, c, []verdict{{"udp 1", pkt{DPort: 1}, true}, {"arp", pkt{Ether: layers.EthernetTypeARP}, false}})
}

func mustPrefixes(t *testing.T, ss ...string) []netip.Prefix {
	t.Helper()
	out := []netip.Prefix{}
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}
