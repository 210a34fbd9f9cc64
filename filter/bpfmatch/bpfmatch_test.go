package bpfmatch

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"golang.org/x/net/bpf"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/filter/bpfmatch/bpfmatchtest"
)

func TestErrors(t *testing.T) {
	ret := bpf.RetConstant{Val: 1}
	long := make([]bpf.Instruction, MaxInstructions+1)
	for i := range long {
		long[i] = ret
	}
	for _, tc := range []struct {
		name        string
		insns       []bpf.Instruction
		index       int
		want        string
		unsupported bool
	}{
		{"empty", nil, -1, "empty program", false},
		{"too long", long, -1, "4097 instructions, more than the 4096", true},
		{"ancillary protocol", []bpf.Instruction{bpf.LoadExtension{Num: bpf.ExtProto}, bpf.RetA{}}, 0,
			"loads at offset -4096 (SKF_AD_OFF+0, the ancillary value SKF_AD_PROTOCOL): a negative offset reads socket-buffer metadata, which XDP does not have", true},
		{"ancillary vlan tag present", []bpf.Instruction{bpf.LoadExtension{Num: bpf.ExtVLANTagPresent}, bpf.RetA{}}, 0, "SKF_AD_VLAN_TAG_PRESENT", true},
		{"raw ancillary load", []bpf.Instruction{ret, bpf.RawInstruction{Op: 0x30, K: 0xfffff000 + 44}, bpf.RetA{}}, 1, "SKF_AD_OFF+44, the ancillary value SKF_AD_VLAN_TAG", true},
		{"network header offset", []bpf.Instruction{bpf.LoadAbsolute{Off: 0xfff00000 + 9, Size: 1}, bpf.RetA{}}, 0, "SKF_NET_OFF+9", true},
		{"link-layer offset", []bpf.Instruction{bpf.LoadAbsolute{Off: 0xffe00000 + 12, Size: 2}, bpf.RetA{}}, 0, "SKF_LL_OFF+12", true},
		{"far negative offset", []bpf.Instruction{bpf.LoadAbsolute{Off: 0x80000000, Size: 1}, bpf.RetA{}}, 0, "below SKF_LL_OFF", true},
		{"negative indirect", []bpf.Instruction{bpf.LoadIndirect{Off: 0xfffff000 + 4, Size: 4}, bpf.RetA{}}, 0, "socket-buffer metadata", true},
		{"negative msh", []bpf.Instruction{bpf.LoadMemShift{Off: 0xfffff000}, bpf.RetA{}}, 0, "socket-buffer metadata", true},
		{"unknown opcode", []bpf.Instruction{bpf.RawInstruction{Op: 0xffff}, ret}, 0, "unrecognised cBPF opcode 0xffff", false},
		{"ldx abs", []bpf.Instruction{bpf.RawInstruction{Op: 0x21, K: 12}, ret}, 0, "unrecognised cBPF opcode 0x21", false},
		{"ldx len", []bpf.Instruction{bpf.RawInstruction{Op: 0x81}, ret}, 0, "unrecognised cBPF opcode 0x81", false},
		{"nil", []bpf.Instruction{nil, ret}, 0, "nil instruction", false},
		{"bad size", []bpf.Instruction{bpf.LoadAbsolute{Off: 12, Size: 3}, ret}, 0, "does not assemble", false},
		{"bad scratch", []bpf.Instruction{bpf.LoadScratch{Dst: bpf.RegA, N: 16}, ret}, 0, "does not assemble", false},
		{"jump past end", []bpf.Instruction{bpf.Jump{Skip: 1}, ret}, 0, "past the end", false},
		{"huge jump", []bpf.Instruction{bpf.Jump{Skip: 0xffffffff}, ret}, 0, "past the end", false},
		{"cond past end", []bpf.Instruction{bpf.JumpIf{Cond: bpf.JumpEqual, SkipFalse: 1}, ret}, 0, "past the end", false},
		{"x cond past end", []bpf.Instruction{bpf.JumpIfX{Cond: bpf.JumpEqual, SkipTrue: 2}, ret, ret}, 0, "past the end", false},
		{"divide by 0", []bpf.Instruction{bpf.ALUOpConstant{Op: bpf.ALUOpDiv}, ret}, 0, "divides by the constant 0", false},
		{"modulo 0", []bpf.Instruction{ret, bpf.ALUOpConstant{Op: bpf.ALUOpMod}, ret}, 1, "divides by the constant 0", false},
		{"shift 32", []bpf.Instruction{bpf.ALUOpConstant{Op: bpf.ALUOpShiftLeft, Val: 32}, ret}, 0, "shifts by the constant 32", false},
		{"shift 40", []bpf.Instruction{bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: 40}, ret}, 0, "shifts by the constant 40", false},
		{"no return", []bpf.Instruction{bpf.LoadAbsolute{Off: 12, Size: 2}}, 0, "the last instruction must be a return", false},
		{"ends in a jump", []bpf.Instruction{ret, bpf.JumpIf{Cond: bpf.JumpEqual}}, 1, "past the end", false},
		{"translation too long", repeat(bpf.LoadIndirect{Off: 1, Size: 4}, 4000, ret), -1, "the translation is", true},
		{"panicking instruction", []bpf.Instruction{panicky{}, ret}, 0, "its Assemble method panicked: boom", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile("rule", tc.insns)
			if err == nil {
				t.Fatal("Compile accepted it")
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%v is not an *Error", err)
			}
			if e.Label != "rule" || e.Index != tc.index {
				t.Errorf("Label %q, Index %d; want rule, %d", e.Label, e.Index, tc.index)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "bpfmatch: rule: ") {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
			if errors.Is(err, packetio.ErrUnsupported) != tc.unsupported {
				t.Errorf("errors.Is(ErrUnsupported) = %v, want %v", !tc.unsupported, tc.unsupported)
			}
			// Match carries the same error, and Open (here
			// NewClassifier, which assembles first) reports it
			// without loading anything.
			m := Match("rule", tc.insns)
			if m.Err() == nil || !strings.Contains(m.Err().Error(), tc.want) {
				t.Errorf("Match().Err() = %v", m.Err())
			}
			if _, err := filter.NewClassifier(filter.Program{Matches: []filter.Match{m}}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewClassifier: %v", err)
			}
		})
	}
}

// panicky is a caller's instruction type whose methods panic.
type panicky struct{}

func (panicky) Assemble() (bpf.RawInstruction, error) { panic("boom") }
func (panicky) String() string                        { panic("boom") }

func repeat(ins bpf.Instruction, n int, last bpf.Instruction) []bpf.Instruction {
	out := make([]bpf.Instruction, n, n+1)
	for i := range out {
		out[i] = ins
	}
	return append(out, last)
}

func TestNames(t *testing.T) {
	p := []bpf.Instruction{bpf.RetConstant{Val: 1}}
	if got := Match("ssh", p).String(); got != "ssh" {
		t.Errorf("label: %q", got)
	}
	if got := Match("", p).String(); got != "bpf(1 insns)" {
		t.Errorf("no label: %q", got)
	}
	if got := Match("", nil).Err(); got == nil || !strings.Contains(got.Error(), "bpfmatch: bpf(0 insns): empty program") {
		t.Errorf("no label, error: %v", got)
	}
	if m := Match("x", p); m.Err() != nil {
		t.Errorf("a good program carries %v", m.Err())
	}
}

// emitFor runs the builder with a stand-in environment.
func emitFor(t *testing.T, insns []bpf.Instruction) asm.Instructions {
	t.Helper()
	p, err := translate(insns)
	if err != nil {
		t.Fatal(err)
	}
	code, err := p.emit(filter.MatchEnv{Next: "next", Redirect: "redirect", Data: filter.DataRegister, DataEnd: filter.DataEndRegister})
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// TestTranslationShape checks what makes the translation cheap per packet:
// it is a few eBPF instructions per classic one, bounds checks are hoisted
// to one per basic block at most (and fewer than there are absolute
// loads), unreachable code is left out, and the builder is deterministic.
func TestTranslationShape(t *testing.T) {
	for _, p := range pcapCorpus(t) {
		code := emitFor(t, p.insns)
		if len(code) > 5*len(p.insns)+20 {
			t.Errorf("%s: %d eBPF instructions for %d classic ones", p.name, len(code), len(p.insns))
		}
		checks, loads := dataChecks(code), 0
		for _, ins := range p.insns {
			switch ins.(bpf.RawInstruction).Disassemble().(type) {
			case bpf.LoadAbsolute, bpf.LoadMemShift:
				loads++
			}
		}
		if loads >= 4 && checks >= loads {
			t.Errorf("%s: %d bounds checks for %d absolute loads", p.name, checks, loads)
		}
		if again := emitFor(t, p.insns); fmt.Sprint(again) != fmt.Sprint(code) {
			t.Errorf("%s: the builder is not deterministic", p.name)
		}
	}
	// The loads at 14 and 12 are unreachable: neither may be emitted.
	code := emitFor(t, []bpf.Instruction{
		bpf.LoadAbsolute{Off: 23, Size: 1}, bpf.Jump{Skip: 2},
		bpf.LoadAbsolute{Off: 14, Size: 1}, bpf.RetA{},
		bpf.RetA{},
		bpf.LoadAbsolute{Off: 12, Size: 2}, bpf.RetA{},
	})
	for _, ins := range code {
		if ins.OpCode.Class().IsLoad() && ins.Src == filter.DataRegister && ins.Offset != 23 {
			t.Errorf("dead load emitted: %v\n%v", ins, code)
		}
	}
	// A guard proven on every path into a block is not repeated.
	code = emitFor(t, []bpf.Instruction{
		bpf.LoadAbsolute{Off: 30, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 1, SkipFalse: 2},
		bpf.LoadAbsolute{Off: 26, Size: 4}, bpf.RetA{},
		bpf.LoadAbsolute{Off: 12, Size: 2}, bpf.RetA{},
	})
	checks := dataChecks(code)
	if checks != 1 {
		t.Errorf("%d bounds checks, want 1:\n%v", checks, code)
	}
}

// dataChecks counts the bounds checks of absolute loads: R0 = R7 + n;
// if R0 > R6.
func dataChecks(code asm.Instructions) int {
	n := 0
	for i := 2; i < len(code); i++ {
		if code[i].OpCode.JumpOp() == asm.JGT && code[i].Src == filter.DataEndRegister &&
			code[i-2].OpCode.ALUOp() == asm.Mov && code[i-2].Src == filter.DataRegister && code[i-2].Dst == asm.R0 {
			n++
		}
	}
	return n
}

// TestLongPrograms loads the longest program classic BPF allows.
func TestLongPrograms(t *testing.T) {
	// 2047 basic blocks, each a load and a comparison, then ret A.
	insns := make([]bpf.Instruction, 0, MaxInstructions)
	for len(insns) < MaxInstructions-2 {
		insns = append(insns, bpf.LoadAbsolute{Off: uint32(len(insns) % 60), Size: 1}, bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x99})
	}
	insns = append(insns, bpf.LoadAbsolute{Off: 14, Size: 1}, bpf.RetA{})
	frames := bpfmatchtest.Frames()[:50]
	differ(t, named{name: fmt.Sprintf("%d instructions", len(insns)), insns: insns}, frames)
}

// The intent tests check that filters do what a person means by them,
// which the differential test cannot: a corpus program that is
// consistently wrong agrees with the VM.

// tcpPorts decodes frame as a person reads it: an untagged IPv4 packet
// (first or only fragment, any header length) or IPv6 packet (TCP
// directly after the header) carrying TCP, and its ports.
func tcpPorts(frame []byte) (src net.IP, sport, dport uint16, ok bool) {
	var eth layers.Ethernet
	if eth.DecodeFromBytes(frame, gopacket.NilDecodeFeedback) != nil {
		return nil, 0, 0, false
	}
	var payload []byte
	switch eth.EthernetType {
	case layers.EthernetTypeIPv4:
		var ip layers.IPv4
		if ip.DecodeFromBytes(eth.Payload, gopacket.NilDecodeFeedback) != nil || ip.FragOffset != 0 || ip.Protocol != layers.IPProtocolTCP {
			return nil, 0, 0, false
		}
		src, payload = ip.SrcIP, ip.Payload
	case layers.EthernetTypeIPv6:
		var ip layers.IPv6
		if ip.DecodeFromBytes(eth.Payload, gopacket.NilDecodeFeedback) != nil || ip.NextHeader != layers.IPProtocolTCP {
			return nil, 0, 0, false
		}
		src, payload = ip.SrcIP, ip.Payload
	default:
		return nil, 0, 0, false
	}
	var tcp layers.TCP
	if tcp.DecodeFromBytes(payload, gopacket.NilDecodeFeedback) != nil {
		return nil, 0, 0, false
	}
	return src, uint16(tcp.SrcPort), uint16(tcp.DstPort), true
}

// wellFormed are the corpus frames a person can reason about: not cut,
// mutated or random.
func wellFormed() []bpfmatchtest.Frame {
	var out []bpfmatchtest.Frame
	for _, f := range bpfmatchtest.Frames() {
		if !strings.HasPrefix(f.Name, "runt") && !strings.HasPrefix(f.Name, "mutant") && !strings.HasPrefix(f.Name, "random") && !strings.Contains(f.Name, "bogus") {
			out = append(out, f)
		}
	}
	return out
}

func corpusProgram(t testing.TB, expr string) []bpf.Instruction {
	t.Helper()
	for _, p := range pcapCorpus(t) {
		if p.name == expr {
			return p.insns
		}
	}
	t.Fatalf("no corpus program for %q", expr)
	return nil
}

func TestIntentTCPPort(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want func(src net.IP, sport, dport uint16) bool
	}{
		{"tcp port 22", func(_ net.IP, s, d uint16) bool { return s == 22 || d == 22 }},
		{"tcp port 22 and not src host 192.0.2.1", func(src net.IP, s, d uint16) bool {
			return (s == 22 || d == 22) && !src.Equal(net.IPv4(192, 0, 2, 1))
		}},
		{"ip6 and tcp dst port 443", func(src net.IP, _, d uint16) bool { return src.To4() == nil && d == 443 }},
	} {
		c := bpfmatchtest.Classifier(t, filter.Program{Matches: []filter.Match{Match(tc.expr, corpusProgram(t, tc.expr))}})
		hits := 0
		for _, f := range wellFormed() {
			src, s, d, ok := tcpPorts(f.Data)
			want := ok && tc.want(src, s, d)
			got, err := c.Match(f.Data)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s: %s: matched %v, a person would say %v", tc.expr, f.Name, got, want)
			}
			if want {
				hits++
			}
		}
		if hits < 2 {
			t.Errorf("%s: only %d frames should match; the corpus tests nothing", tc.expr, hits)
		}
	}
}

// vxlan builds a VXLAN frame for the VNI test.
func vxlan(vni uint32, dport uint16, optWords int, vlan bool) []byte {
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: bpfmatchtest.IPv4s[0], DstIP: bpfmatchtest.IPv4s[1]}
	for range optWords * 4 {
		ip.Options = append(ip.Options, layers.IPv4Option{OptionType: 1})
	}
	udp := &layers.UDP{SrcPort: 40000, DstPort: layers.UDPPort(dport)}
	_ = udp.SetNetworkLayerForChecksum(ip)
	inner := bpfmatchtest.Serialize(&layers.Ethernet{SrcMAC: bpfmatchtest.MACs[0], DstMAC: bpfmatchtest.MACs[1], EthernetType: layers.EthernetTypeIPv4},
		&layers.IPv4{Version: 4, TTL: 1, Protocol: 253, SrcIP: bpfmatchtest.IPv4s[2], DstIP: bpfmatchtest.IPv4s[3]})
	hdr := []byte{0x08, 0, 0, 0, byte(vni >> 16), byte(vni >> 8), byte(vni), 0}
	eth := &layers.Ethernet{SrcMAC: bpfmatchtest.MACs[0], DstMAC: bpfmatchtest.MACs[1], EthernetType: layers.EthernetTypeIPv4}
	if vlan {
		eth.EthernetType = layers.EthernetTypeDot1Q
		return bpfmatchtest.Serialize(eth, &layers.Dot1Q{VLANIdentifier: 7, Type: layers.EthernetTypeIPv4}, ip, udp, gopacket.Payload(append(hdr, inner...)))
	}
	return bpfmatchtest.Serialize(eth, ip, udp, gopacket.Payload(append(hdr, inner...)))
}

func TestIntentVNI(t *testing.T) {
	const expr = "udp dst port 4789 and udp[8] & 0x08 != 0 and udp[11:4] & 0x00ffffff = 4242"
	c := bpfmatchtest.Classifier(t, filter.Program{Matches: []filter.Match{Match("vni 4242", corpusProgram(t, expr))}})
	for _, tc := range []struct {
		name  string
		frame []byte
		want  bool
	}{
		{"vni 4242", vxlan(4242, 4789, 0, false), true},
		{"vni 4242, IPv4 options", vxlan(4242, 4789, 2, false), true},
		{"vni 4243", vxlan(4243, 4789, 0, false), false},
		{"vni 4242 << 8", vxlan(4242<<8, 4789, 0, false), false},
		{"vni 4242 on port 4790", vxlan(4242, 4790, 0, false), false},
		{"vni 4242 behind a VLAN tag", vxlan(4242, 4789, 0, true), false},
	} {
		got, err := c.Match(tc.frame)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%s: matched %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, f := range wellFormed() {
		got, err := c.Match(f.Data)
		if err != nil {
			t.Fatal(err)
		}
		if want := f.Name == "v4 vxlan vni 4242"; got != want {
			t.Errorf("%s: matched %v, want %v", f.Name, got, want)
		}
	}
}

// TestWithOtherMatches splices translated blocks among built-in ones
// (first, middle, last, and as an exception), where label clashes or
// register misuse would show: the combined filter must give exactly the
// verdict the matches give one by one.
func TestWithOtherMatches(t *testing.T) {
	ssh := Match("ssh", corpusProgram(t, "tcp port 22"))
	dns := Match("dns", corpusProgram(t, "udp port 53"))
	ex := Match("10/8 to 53", corpusProgram(t, "src net 10.0.0.0/8 and dst port 53"))
	ms := []filter.Match{filter.MatchEtherType(filter.EtherTypeARP), ssh, filter.MatchUDPPort(4789), dns}
	c := bpfmatchtest.Classifier(t, filter.Program{Matches: ms, Except: []filter.Match{ex}})
	alone := make([]*filter.Classifier, len(ms))
	for i, m := range ms {
		alone[i] = bpfmatchtest.Classifier(t, filter.Program{Matches: []filter.Match{m}})
	}
	exc := bpfmatchtest.Classifier(t, filter.Program{Matches: []filter.Match{ex}})
	run := func(c *filter.Classifier, f []byte) bool {
		ok, err := c.Match(f)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	hits := 0
	for _, f := range bpfmatchtest.Frames() {
		want := false
		for _, a := range alone {
			want = want || run(a, f.Data)
		}
		want = want && !run(exc, f.Data)
		if got := run(c, f.Data); got != want {
			t.Errorf("%s: matched %v, the matches one by one say %v", f.Name, got, want)
		}
		if want {
			hits++
		}
	}
	if hits < 10 {
		t.Errorf("only %d frames match", hits)
	}
}
