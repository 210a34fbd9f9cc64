package main

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/packetio/packetio/examples/xdp/customfilter/internal/matchtest"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/testframe"
)

// TestBlockContract: the contract every custom block keeps (R0-R5 scratch,
// R6, R7 and R9 read only, R8 never named, no Exit, 64 bytes of stack below
// R10) is enforced when the filter is assembled, before any program is
// loaded, with an error that names the rule; and a block that uses its
// stack within the 64 bytes loads and runs.
func TestBlockContract(t *testing.T) {
	block := func(ins ...asm.Instruction) filter.Match {
		return filter.NewMatch("contract", func(env filter.MatchEnv) (asm.Instructions, error) {
			return append(env.Bounds(env.Data, 14), ins...), nil
		})
	}
	for _, tc := range []struct {
		name string
		m    filter.Match
		want string
	}{
		{"writes R6 (data end)", block(asm.Add.Imm(asm.R6, 1)), "R6"},
		{"writes R7 (frame start)", block(asm.Mov.Imm(asm.R7, 0)), "R7"},
		{"writes R9 (frame base)", block(asm.Add.Imm(asm.R9, 4)), "R9"},
		{"reads R8 (the queue)", block(asm.Mov.Reg(asm.R1, asm.R8)), "R8"},
		{"returns", block(asm.Mov.Imm(asm.R0, 2), asm.Return()), "returns"},
		{"stores below its 64 bytes", block(asm.StoreMem(asm.R10, -72, asm.R1, asm.DWord)), "stack"},
	} {
		_, err := filter.NewClassifier(filter.Program{Matches: []filter.Match{tc.m}})
		if err == nil || filter.IsVerifierError(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (want a refusal naming %q, before the verifier)", tc.name, err, tc.want)
		}
	}
	// Spill the EtherType to the stack and compare it from there: legal.
	stack := filter.NewMatch("ethertype via the stack", func(env filter.MatchEnv) (asm.Instructions, error) {
		ins, base := env.FrameBase()
		ins = append(ins, env.Bounds(base, 14)...)
		return append(ins,
			asm.LoadMem(asm.R1, base, 12, asm.Half),
			asm.StoreMem(asm.R10, -filter.BlockStack, asm.R1, asm.DWord),
			asm.Mov.Imm(asm.R1, 0),
			asm.LoadMem(asm.R2, asm.R10, -filter.BlockStack, asm.DWord),
			asm.JEq.Imm(asm.R2, filter.NetShort(0x86dd), env.Redirect),
		), nil
	})
	matchtest.Run(t, stack, []matchtest.Case{
		matchtest.Hit("IPv6", testframe.Spec{V6: true}.Build(t)),
		matchtest.Hit("IPv6, tagged", testframe.Spec{V6: true, VLAN: []uint16{4}}.Build(t)),
		matchtest.Miss("IPv4", testframe.Spec{}.Build(t)),
	})
}
