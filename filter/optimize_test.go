package filter

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/steerfuzz"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/testframe"
)

var update = flag.Bool("update", false, "rewrite the golden listings in testdata/")

// listing prints insns one per line, labels on their own lines.
func listing(insns asm.Instructions) string {
	var b strings.Builder
	for _, ins := range insns {
		if s := ins.Symbol(); s != "" {
			fmt.Fprintf(&b, "%s:\n", s)
		}
		fmt.Fprintf(&b, "\t%v\n", ins)
	}
	return b.String()
}

// TestOptimizeRewrites runs each rewrite of optimize on a small program,
// and the cases where it must leave the program alone (none renames: R6
// and R9 are read there before anything writes them).
func TestOptimizeRewrites(t *testing.T) {
	bounds := func(base asm.Register, n int, miss string) asm.Instructions { return boundsTo(base, n, miss) }
	cat := func(parts ...any) asm.Instructions {
		var out asm.Instructions
		for _, p := range parts {
			switch p := p.(type) {
			case asm.Instruction:
				out = append(out, p)
			case asm.Instructions:
				out = append(out, p...)
			}
		}
		return out
	}
	miss := asm.Instructions{asm.Mov.Imm(asm.R0, actPass).WithSymbol("miss"), asm.Return()}
	hit := asm.Instructions{asm.Mov.Imm(asm.R0, actTX).WithSymbol("hit"), asm.Return()}
	for _, tc := range []struct {
		name     string
		in, want asm.Instructions
	}{
		{"a jump to the next instruction goes",
			cat(asm.Ja.Label("next"), asm.Mov.Imm(asm.R0, 1).WithSymbol("next"), asm.Return()),
			cat(asm.Mov.Imm(asm.R0, 1).WithSymbol("next"), asm.Return())},
		{"a write overwritten before any read goes, its label moving on",
			cat(asm.Mov.Imm(asm.R0, 0).WithSymbol("entry"), asm.Mov.Imm(asm.R0, 3), asm.Return()),
			cat(asm.Mov.Imm(asm.R0, 3).WithSymbol("entry"), asm.Return())},
		{"a repeated bounds check goes, a shorter one too",
			cat(bounds(asm.R9, 34, "miss"), bounds(asm.R9, 34, "miss"), bounds(asm.R9, 20, "hit"), asm.Ja.Label("hit"), miss, hit),
			cat(bounds(asm.R9, 34, "miss"), asm.Ja.Label("hit"), miss, hit)},
		{"a longer bounds check stays",
			cat(bounds(asm.R9, 34, "miss"), bounds(asm.R9, 38, "miss"), asm.Ja.Label("hit"), miss, hit),
			cat(bounds(asm.R9, 34, "miss"), bounds(asm.R9, 38, "miss"), asm.Ja.Label("hit"), miss, hit)},
		{"a bounds check a branch enters stays",
			cat(asm.JEq.Imm(asm.R1, 1, "again"), bounds(asm.R9, 34, "miss"), asm.Mov.Reg(asm.R0, asm.R9).WithSymbol("again"),
				asm.Add.Imm(asm.R0, 34), asm.JGT.Reg(asm.R0, DataEndRegister, "miss"), asm.Ja.Label("hit"), miss, hit),
			cat(asm.JEq.Imm(asm.R1, 1, "again"), bounds(asm.R9, 34, "miss"), asm.Mov.Reg(asm.R0, asm.R9).WithSymbol("again"),
				asm.Add.Imm(asm.R0, 34), asm.JGT.Reg(asm.R0, DataEndRegister, "miss"), asm.Ja.Label("hit"), miss, hit)},
		{"a bounds check from a base written since stays",
			cat(bounds(asm.R2, 18, "miss"), asm.Add.Imm(asm.R2, 4), bounds(asm.R2, 18, "miss"), asm.Ja.Label("hit"), miss, hit),
			cat(bounds(asm.R2, 18, "miss"), asm.Add.Imm(asm.R2, 4), bounds(asm.R2, 18, "miss"), asm.Ja.Label("hit"), miss, hit)},
		{"a repeated bounds check whose R0 is read after stays",
			cat(bounds(asm.R9, 34, "miss"), bounds(asm.R9, 34, "miss"), asm.JEq.Imm(asm.R0, 7, "hit"), miss, hit),
			cat(bounds(asm.R9, 34, "miss"), bounds(asm.R9, 34, "miss"), asm.JEq.Imm(asm.R0, 7, "hit"), miss, hit)},
		{"a repeated load and compare goes",
			cat(etherTypeIs(EtherTypeIPv4, "miss"), byteIs(23, 17, "miss"), etherTypeIs(EtherTypeIPv4, "miss"), asm.Ja.Label("hit"), miss, hit),
			cat(etherTypeIs(EtherTypeIPv4, "miss"), byteIs(23, 17, "miss"), asm.Ja.Label("hit"), miss, hit)},
		{"a load and compare after a store stays",
			cat(etherTypeIs(EtherTypeIPv4, "miss"), asm.StoreMem(asm.R10, -8, asm.R1, asm.DWord), etherTypeIs(EtherTypeIPv4, "miss"), asm.Ja.Label("hit"), miss, hit),
			cat(etherTypeIs(EtherTypeIPv4, "miss"), asm.StoreMem(asm.R10, -8, asm.R1, asm.DWord), etherTypeIs(EtherTypeIPv4, "miss"), asm.Ja.Label("hit"), miss, hit)},
		{"a load and compare after a call stays",
			cat(etherTypeIs(EtherTypeIPv4, "miss"), asm.FnKtimeGetNs.Call(), etherTypeIs(EtherTypeIPv4, "miss"), asm.Ja.Label("hit"), miss, hit),
			cat(etherTypeIs(EtherTypeIPv4, "miss"), asm.FnKtimeGetNs.Call(), etherTypeIs(EtherTypeIPv4, "miss"), asm.Ja.Label("hit"), miss, hit)},
		{"a compare of another value stays",
			cat(etherTypeIs(EtherTypeIPv4, "miss"), etherTypeIs(EtherTypeIPv6, "miss"), asm.Ja.Label("hit"), miss, hit),
			cat(etherTypeIs(EtherTypeIPv4, "miss"), etherTypeIs(EtherTypeIPv6, "miss"), asm.Ja.Label("hit"), miss, hit)},
		{"a jump on a constant is decided, and what it skips goes",
			cat(asm.Mov.Imm(asm.R0, 1), asm.JEq.Imm(asm.R0, 0, "miss"), asm.JNE.Imm(asm.R0, 0, "hit"), miss, hit),
			cat(hit)},
		{"a jump without a label leaves the program alone",
			cat(asm.Ja.Label("next"), asm.Mov.Imm(asm.R0, 1).WithSymbol("next"), asm.Instruction{OpCode: asm.Ja.Op(asm.ImmSource), Offset: 0}, asm.Return()),
			cat(asm.Ja.Label("next"), asm.Mov.Imm(asm.R0, 1).WithSymbol("next"), asm.Instruction{OpCode: asm.Ja.Op(asm.ImmSource), Offset: 0}, asm.Return())},
		{"a tail that loads a map and no path reaches stays, with everything else",
			cat(asm.Mov.Imm(asm.R0, 1), asm.JEq.Imm(asm.R0, 0, "redirect"), miss,
				asm.LoadMapPtr(asm.R1, 0).WithReference(XSKMapName).WithSymbol("redirect"), asm.FnRedirectMap.Call(), asm.Return()),
			cat(asm.Mov.Imm(asm.R0, 1), asm.JEq.Imm(asm.R0, 0, "redirect"), miss,
				asm.LoadMapPtr(asm.R1, 0).WithReference(XSKMapName).WithSymbol("redirect"), asm.FnRedirectMap.Call(), asm.Return())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := optimize(tc.in)
			if g, w := listing(got), listing(tc.want); g != w {
				t.Errorf("got\n%swant\n%s", g, w)
			}
		})
	}
}

// TestRenameCalleeSaved moves R6-R9 into free argument registers, and
// leaves a register alone whose value a call would destroy or that is
// live with every free one.
func TestRenameCalleeSaved(t *testing.T) {
	prologue := asm.Instructions{
		asm.LoadMem(asm.R6, asm.R1, mdDataEnd, asm.Word),
		asm.LoadMem(asm.R7, asm.R1, mdData, asm.Word),
		asm.LoadMem(asm.R8, asm.R1, mdRxQueueIndex, asm.Word),
	}
	tail := asm.Instructions{
		asm.LoadMapPtr(asm.R1, 0).WithReference(XSKMapName).WithSymbol("redirect"),
		asm.Mov.Reg(asm.R2, asm.R8),
		asm.Mov.Imm(asm.R3, actPass),
		asm.FnRedirectMap.Call(),
		asm.Return(),
		asm.Mov.Imm(asm.R0, actPass).WithSymbol("pass"),
		asm.Return(),
	}
	body := append(boundsTo(asm.R7, 14, "pass"), asm.LoadMem(asm.R0, asm.R7, 12, asm.Half), asm.JEq.Imm(asm.R0, 8, "redirect"), asm.Ja.Label("pass"))
	prog := append(append(append(asm.Instructions(nil), prologue...), body...), tail...)
	before := listing(prog)
	got := listing(optimize(prog))
	if listing(prog) != before {
		t.Errorf("optimize changed the program it was given:\n%s", listing(prog))
	}
	for _, r := range []string{"r6", "r7", "r8", "r9"} {
		if strings.Contains(got, " "+r+" ") {
			t.Errorf("%s is still used:\n%s", r, got)
		}
	}
	// The queue read after a call: it stays where a call cannot reach it.
	kept := append(append(append(asm.Instructions(nil), prologue...), asm.FnKtimeGetNs.Call()), body...)
	kept = append(kept, tail...)
	if got := listing(renameCalleeSaved(append(asm.Instructions(nil), kept...))); !strings.Contains(got, "src: r8") {
		t.Errorf("R8 moved across a call:\n%s", got)
	}
	for _, p := range []asm.Instructions{prog, kept} {
		for _, frame := range [][]byte{make([]byte, 10), {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0}, make([]byte, 60)} {
			want, _, err1 := execute(p, frame)
			got, _, err2 := execute(renameCalleeSaved(append(asm.Instructions(nil), p...)), frame)
			if err1 != nil || err2 != nil || got != want {
				t.Errorf("renamed returns %d (%v), %d (%v) as written", got, err2, want, err1)
			}
		}
	}
}

// sweepFilter is the steering filter examples/sweep and examples/drop
// measure: a destination prefix and a UDP port.
func sweepFilter(t testing.TB) Match {
	m, err := Steering(packetio.SteeringFilter{Match: append([]packetio.Match{packetio.MatchDstIP(netip.MustParsePrefix("10.99.1.0/24"))},
		packetio.MatchDstPort(packetio.IPProtoUDP, 9)...)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestOptimizedListings keeps the optimized programs of the filters the
// examples and the sweep run, and how many instructions a packet they
// take runs, in testdata/optimized (go test -run TestOptimizedListings
// -update rewrites them).
func TestOptimizedListings(t *testing.T) {
	udp9, err := Steering(packetio.SteeringFilter{Match: packetio.MatchDstPort(packetio.IPProtoUDP, 9)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	taken := testframe.Spec{Dst: "10.99.1.2", DPort: 9}.Build(t)
	for _, tc := range []struct {
		file            string
		pc              Program
		before, after   int // instructions a taken packet runs
		beforeN, afterN int // instructions in the program
	}{
		{"promiscuous.txt", Program{Matches: []Match{MatchAll()}, Verdict: VerdictRedirect}, 20, 5, 23, 5},
		{"prefix-and-udp-port.txt", Program{Matches: []Match{sweepFilter(t)}, Verdict: VerdictRedirect}, 51, 38, 66, 41},
		{"udp-port.txt", Program{Matches: []Match{udp9}, Verdict: VerdictRedirect}, 40, 35, 55, 48},
	} {
		t.Run(tc.file, func(t *testing.T) {
			plain, opt := bothWays(t, tc.pc)
			before, verdict1 := run(t, plain, taken)
			after, verdict2 := run(t, opt, taken)
			if verdict1 != actRedirect || verdict2 != actRedirect {
				t.Fatalf("the frame was not taken: %d before, %d after", verdict1, verdict2)
			}
			if before != tc.before || after != tc.after || len(plain) != tc.beforeN || len(opt) != tc.afterN {
				t.Errorf("a taken packet runs %d instructions, %d before optimizing (want %d, %d); the program has %d, %d before (want %d, %d)",
					after, before, tc.after, tc.before, len(opt), len(plain), tc.afterN, tc.beforeN)
			}
			golden := filepath.Join("testdata", "optimized", tc.file)
			got := fmt.Sprintf("# %d instructions, %d on the path of a packet it takes (%d and %d before optimizing)\n%s",
				len(opt), after, len(plain), before, listing(opt))
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run TestOptimizedListings -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("%s differs:\n%s", golden, got)
			}
		})
	}
}

// TestOptimizedSameVerdicts loads each filter both ways and runs every
// frame of the steering fuzzers through both: the verdicts must agree.
func TestOptimizedSameVerdicts(t *testing.T) {
	testenv.NeedBPF(t)
	_ = rlimit.RemoveMemlock()
	frames := steerfuzz.Frames(t)
	local := func() ([][6]byte, error) { return [][6]byte{{0x02, 0, 0, 0, 0, 0x0b}}, nil }
	var programs []Program
	for _, seed := range [][]byte{
		{6, 1}, {7, 0}, {6, 0, 6, 3}, {1, 0, 6, 1}, {4, 0, 5, 2}, {0, 0, 3, 2}, {2, 0, 1, 1},
		{3, 1, 4, 3}, {5, 3, 6, 2}, {2, 2, 0, 1}, {1, 1, 2, 1, 3, 0}, {4, 1, 5, 0, 6, 1, 7, 0},
	} {
		m, err := Steering(steerfuzz.Filter(seed, false), local)
		if err != nil {
			continue
		}
		programs = append(programs, Program{Matches: []Match{m}})
	}
	mgmt := ManagementRules([]uint16{22}, nil)
	programs = append(programs,
		Program{Matches: []Match{sweepFilter(t)}},
		Program{Matches: []Match{MatchAll()}, Except: mgmt},
		Program{Matches: []Match{MatchAny(MatchAnd(MatchEtherType(EtherTypeIPv4), MatchUDPPort(53)), MatchL4Port(protoTCP, false, 9000, 53))}},
		Program{Matches: []Match{MatchAnd(MatchVLAN(5), MatchL4Port(protoUDP, true, 53)), MatchDstIP("2001:db8::/32")}, Except: mgmt},
		Program{Matches: []Match{MatchNone()}},
	)
	var pacer steerfuzz.Pacer
	for i, pc := range programs {
		pc.Verdict = VerdictTX
		plain, opt := bothWays(t, pc)
		if len(opt) > len(plain) {
			t.Errorf("program %d: %d instructions optimized, %d before", i, len(opt), len(plain))
		}
		pacer.Wait()
		p1 := load(t, plain)
		p2 := load(t, opt)
		for j, f := range frames {
			v1, err1 := p1.Run(&ebpf.RunOptions{Data: f})
			v2, err2 := p2.Run(&ebpf.RunOptions{Data: f})
			if err1 != nil || err2 != nil {
				t.Fatalf("program %d, frame %d: %v, %v", i, j, err1, err2)
			}
			if v1 != v2 {
				t.Errorf("program %d (%v), frame %d: %d as assembled, %d optimized\n%s", i, pc.Matches, j, v1, v2, listing(opt))
			}
		}
		p1.Close()
		p2.Close()
	}
}

// bothWays assembles pc as its blocks come and optimized.
func bothWays(t *testing.T, pc Program) (plain, opt asm.Instructions) {
	t.Helper()
	plain, err := pc.assemble(false)
	if err != nil {
		t.Fatal(err)
	}
	if opt, err = pc.Instructions(); err != nil {
		t.Fatal(err)
	}
	return plain, opt
}

// load loads an XDP program from insns, for the test's life.
func load(t *testing.T, insns asm.Instructions) *ebpf.Program {
	t.Helper()
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: programName, Type: ebpf.XDP, License: programLicense, Instructions: insns})
	if err != nil {
		t.Fatalf("load: %+v\n%s", err, listing(insns))
	}
	return p
}

// TestRemoveAll: deleted instructions' labels go to the next instruction
// kept, or the branches to them go to that instruction's own label; a
// label at the very end goes with it.
func TestRemoveAll(t *testing.T) {
	ret := func(v int32) asm.Instructions { return asm.Instructions{asm.Mov.Imm(asm.R0, v), asm.Return()} }
	for _, tc := range []struct {
		name string
		in   asm.Instructions
		drop []int
		want asm.Instructions
	}{
		{"nothing", append(asm.Instructions{asm.JEq.Imm(asm.R1, 0, "a")}, ret(1)...), nil,
			append(asm.Instructions{asm.JEq.Imm(asm.R1, 0, "a")}, ret(1)...)},
		{"a label moves to the next kept",
			asm.Instructions{asm.JEq.Imm(asm.R1, 0, "a"), asm.Mov.Imm(asm.R2, 0).WithSymbol("a"), asm.Mov.Imm(asm.R0, 1), asm.Return()}, []int{1},
			asm.Instructions{asm.JEq.Imm(asm.R1, 0, "a"), asm.Mov.Imm(asm.R0, 1).WithSymbol("a"), asm.Return()}},
		{"a labelled kept instruction takes the branches",
			asm.Instructions{asm.JEq.Imm(asm.R1, 0, "a"), asm.JEq.Imm(asm.R1, 1, "b"), asm.Mov.Imm(asm.R2, 0).WithSymbol("a"), asm.Mov.Imm(asm.R0, 1).WithSymbol("b"), asm.Return()}, []int{2},
			asm.Instructions{asm.JEq.Imm(asm.R1, 0, "b"), asm.JEq.Imm(asm.R1, 1, "b"), asm.Mov.Imm(asm.R0, 1).WithSymbol("b"), asm.Return()}},
		{"a run of labels: the first moves, the rest follow it",
			asm.Instructions{asm.JEq.Imm(asm.R1, 0, "a"), asm.JEq.Imm(asm.R1, 1, "b"), asm.JEq.Imm(asm.R1, 2, "c"),
				asm.Mov.Imm(asm.R2, 0).WithSymbol("a"), asm.Mov.Imm(asm.R3, 0).WithSymbol("b"), asm.Mov.Imm(asm.R4, 0), asm.Mov.Imm(asm.R5, 0).WithSymbol("c"), asm.Mov.Imm(asm.R0, 1), asm.Return()},
			[]int{3, 4, 5, 6},
			asm.Instructions{asm.JEq.Imm(asm.R1, 0, "a"), asm.JEq.Imm(asm.R1, 1, "a"), asm.JEq.Imm(asm.R1, 2, "a"), asm.Mov.Imm(asm.R0, 1).WithSymbol("a"), asm.Return()}},
		{"the last instruction's label goes with it",
			asm.Instructions{asm.Mov.Imm(asm.R0, 1), asm.Return(), asm.Return().WithSymbol("dead")}, []int{2},
			asm.Instructions{asm.Mov.Imm(asm.R0, 1), asm.Return()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drop := make([]bool, len(tc.in))
			for _, i := range tc.drop {
				drop[i] = true
			}
			if got := removeAll(append(asm.Instructions(nil), tc.in...), drop); listing(got) != listing(tc.want) {
				t.Errorf("got\n%s\nwant\n%s", listing(got), listing(tc.want))
			}
		})
	}
}

// TestOptimizeLargeProgram: a program of 700 rules (a destination /24 and
// a UDP port each), near the kernel's 32k instructions as assembled,
// optimizes to fewer than 6 instructions in 10 and takes, in the
// interpreter, the same packets as assembled: a packet of every 50th rule
// and one off by the port or the prefix of each, and the steering
// fuzzers' frames. (Each removal pass decides all its removals at once:
// this program optimizes in tens of milliseconds, where removing one at a
// time took 2.2 s.)
func TestOptimizeLargeProgram(t *testing.T) {
	const rules = 700
	ms := make([]Match, rules)
	dst := func(i int) string { return fmt.Sprintf("10.%d.%d.7", i>>8, i&0xff) }
	for i := range ms {
		ms[i] = MatchAnd(PrefixMatch(netip.MustParsePrefix(fmt.Sprintf("10.%d.%d.0/24", i>>8, i&0xff)), false), MatchL4Port(protoUDP, false, uint16(1000+i)))
	}
	pc := Program{Matches: ms, Verdict: VerdictTX}
	plain, opt := bothWays(t, pc)
	if len(opt)*10 >= len(plain)*6 {
		t.Errorf("%d instructions optimized, %d as assembled: want fewer than 6 in 10", len(opt), len(plain))
	}
	type frame struct {
		b    []byte
		take bool
	}
	var frames []frame
	for i := 0; i < rules; i += 50 {
		frames = append(frames,
			frame{testframe.Spec{Dst: dst(i), DPort: uint16(1000 + i)}.Build(t), true},
			frame{testframe.Spec{Dst: dst(i), DPort: uint16(1000 + i + 1)}.Build(t), false},
			frame{testframe.Spec{Dst: dst(i + 1), DPort: uint16(1000 + i)}.Build(t), false})
	}
	for _, f := range steerfuzz.Frames(t) {
		frames = append(frames, frame{b: f})
	}
	for j, f := range frames {
		s1, v1 := run(t, plain, f.b)
		s2, v2 := run(t, opt, f.b)
		if v1 != v2 {
			t.Errorf("frame %d: %d as assembled, %d optimized", j, v1, v2)
		}
		if j < rules/50*3 && (v2 == actTX) != f.take {
			t.Errorf("frame %d: verdict %d, want taken %v", j, v2, f.take)
		}
		if s2 > s1 {
			t.Errorf("frame %d: %d instructions run optimized, %d as assembled", j, s2, s1)
		}
	}
}
