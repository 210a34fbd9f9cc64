package bpfmatchtest

import (
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"golang.org/x/net/bpf"
)

func TestFrames(t *testing.T) {
	fs := Frames()
	if len(fs) < 300 {
		t.Errorf("%d frames, want a few hundred", len(fs))
	}
	seen := map[string]bool{}
	for _, f := range fs {
		if seen[f.Name] {
			t.Errorf("duplicate name %q", f.Name)
		}
		seen[f.Name] = true
		if len(f.Data) < 14 {
			t.Errorf("%s: %d bytes, shorter than an Ethernet header", f.Name, len(f.Data))
		}
	}
	// Spot checks that the builders made what the names say.
	for name, want := range map[string][]gopacket.LayerType{
		"v4 options 3 words tcp 1000>22 S":         {layers.LayerTypeEthernet, layers.LayerTypeIPv4, layers.LayerTypeTCP},
		"vlan 0x8100/100 v4 udp 1000>53":           {layers.LayerTypeEthernet, layers.LayerTypeDot1Q, layers.LayerTypeIPv4, layers.LayerTypeUDP},
		"v6 hop-by-hop udp 53>1000":                {layers.LayerTypeEthernet, layers.LayerTypeIPv6, layers.LayerTypeIPv6HopByHop, layers.LayerTypeUDP},
		"vlan 0x88a8/100 0x8100/10 v6 udp 53>1000": {layers.LayerTypeEthernet, layers.LayerTypeDot1Q, layers.LayerTypeDot1Q, layers.LayerTypeIPv6, layers.LayerTypeUDP},
		"v4 vxlan vni 4242":                        {layers.LayerTypeEthernet, layers.LayerTypeIPv4, layers.LayerTypeUDP, layers.LayerTypeVXLAN, layers.LayerTypeEthernet},
	} {
		if !seen[name] {
			t.Errorf("no frame %q", name)
			continue
		}
		for _, f := range fs {
			if f.Name != name {
				continue
			}
			p := gopacket.NewPacket(f.Data, layers.LayerTypeEthernet, gopacket.Default)
			for i, lt := range want {
				if i >= len(p.Layers()) || p.Layers()[i].LayerType() != lt {
					t.Errorf("%s: layers %v, want %v first", name, p.Layers(), want)
					break
				}
			}
		}
	}
	if &Frames()[0] != &fs[0] {
		t.Error("Frames built twice")
	}
}

func TestOracleNegate(t *testing.T) {
	// A = -(5) = 0xfffffffb; the jump over the NegateA must still land.
	prog := []bpf.Instruction{
		bpf.LoadConstant{Dst: bpf.RegA, Val: 5},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 5, SkipTrue: 0, SkipFalse: 2},
		bpf.NegateA{},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0xfffffffb, SkipTrue: 1},
		bpf.RetConstant{Val: 0},
		bpf.RetConstant{Val: 1},
	}
	o, err := NewOracle(prog)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := o.Match(make([]byte, 14)); err != nil || !ok {
		t.Fatalf("Match = %v, %v; want true", ok, err)
	}
}

// A NegateA runs as one instruction, so a program full of them keeps its
// jumps however far they reach (libpcap's unoptimised programs do this).
func TestOracleNegateKeepsJumps(t *testing.T) {
	prog := []bpf.Instruction{
		bpf.LoadConstant{Dst: bpf.RegA, Val: 0x80000000},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x80000000, SkipFalse: 255},
	}
	for range 255 {
		prog = append(prog, bpf.NegateA{}) // odd count: A = -A
	}
	// -(0x80000000) is 0x80000000 in 32 bits; -(1) would be 0xffffffff.
	prog = append(prog,
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x80000000, SkipTrue: 1},
		bpf.RetConstant{Val: 0},
		bpf.RetConstant{Val: 1},
	)
	o, err := NewOracle(prog)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := o.Match(make([]byte, 14)); err != nil || !ok {
		t.Fatalf("Match = %v, %v; want true", ok, err)
	}
	one := []bpf.Instruction{bpf.LoadConstant{Dst: bpf.RegA, Val: 1}, bpf.NegateA{}, bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0xffffffff, SkipTrue: 1}, bpf.RetConstant{Val: 0}, bpf.RetConstant{Val: 1}}
	if o, err := NewOracle(one); err != nil {
		t.Fatal(err)
	} else if ok, _ := o.Match(make([]byte, 14)); !ok {
		t.Error("-(1) is not 0xffffffff")
	}
}
