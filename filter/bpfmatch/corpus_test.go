package bpfmatch

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
)

// The programs in testdata/pcap are what libpcap 1.10.3 compiles the
// expressions in testdata/pcap/INDEX to, for a dead DLT_EN10MB handle with
// snaplen 65535 and the optimiser on: tcpdump -ddd's output format, made
// (there is no tcpdump binary here) by a throwaway program calling
// github.com/google/gopacket/pcap's
// CompileBPFFilter(layers.LinkTypeEthernet, 65535, expr) and printing the
// count and then "code jt jf k" per instruction. Only the text files are
// kept: the tests read them without cgo or libpcap.

// named is a classic program with a name for messages.
type named struct {
	name  string
	insns []bpf.Instruction
}

// parseDDD reads tcpdump -ddd output: the instruction count, then one
// "code jt jf k" line per instruction, as raw instructions.
func parseDDD(text string) ([]bpf.Instruction, error) {
	sc := bufio.NewScanner(strings.NewReader(text))
	var insns []bpf.Instruction
	want := -1
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if want < 0 {
			n, err := strconv.Atoi(f[0])
			if err != nil || len(f) != 1 {
				return nil, fmt.Errorf("line %d: want the instruction count, got %q", line, sc.Text())
			}
			want = n
			continue
		}
		if len(f) != 4 {
			return nil, fmt.Errorf("line %d: want \"code jt jf k\", got %q", line, sc.Text())
		}
		var v [4]uint64
		for i, s := range f {
			n, err := strconv.ParseUint(s, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			v[i] = n
		}
		if v[0] > 0xffff || v[1] > 0xff || v[2] > 0xff {
			return nil, fmt.Errorf("line %d: field out of range", line)
		}
		insns = append(insns, bpf.RawInstruction{Op: uint16(v[0]), Jt: uint8(v[1]), Jf: uint8(v[2]), K: uint32(v[3])})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if want != len(insns) {
		return nil, fmt.Errorf("the count says %d instructions, there are %d", want, len(insns))
	}
	return insns, nil
}

// pcapCorpus returns the libpcap-compiled programs of testdata/pcap, by
// expression.
func pcapCorpus(t testing.TB) []named {
	t.Helper()
	index, err := os.ReadFile(filepath.Join("testdata", "pcap", "INDEX"))
	if err != nil {
		t.Fatal(err)
	}
	var out []named
	for _, line := range strings.Split(strings.TrimSpace(string(index)), "\n") {
		file, expr, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("INDEX: bad line %q", line)
		}
		b, err := os.ReadFile(filepath.Join("testdata", "pcap", file))
		if err != nil {
			t.Fatal(err)
		}
		insns, err := parseDDD(string(b))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		out = append(out, named{name: expr, insns: insns})
	}
	return out
}

// handPrograms exercise every instruction and the edges of the
// translation: far and impossible loads, indirect loads with a large X,
// division and shifts by X, scratch memory, every jump form, returns of A.
func handPrograms() []named {
	ld := func(off uint32, size int) bpf.Instruction { return bpf.LoadAbsolute{Off: off, Size: size} }
	ret1, ret0 := bpf.RetConstant{Val: 1}, bpf.RetConstant{Val: 0}
	return []named{
		{"accept all", []bpf.Instruction{bpf.RetConstant{Val: 0xffffffff}}},
		{"reject all", []bpf.Instruction{ret0}},
		{"ret A of a byte", []bpf.Instruction{ld(14, 1), bpf.RetA{}}},
		{"ret A of len", []bpf.Instruction{bpf.LoadExtension{Num: bpf.ExtLen}, bpf.ALUOpConstant{Op: bpf.ALUOpSub, Val: 60}, bpf.RetA{}}},
		{"ethertype ipv4", []bpf.Instruction{ld(12, 2), bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x800, SkipFalse: 1}, ret1, ret0}},
		{"word at 26 high bit", []bpf.Instruction{ld(26, 4), bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: 0x80000000, SkipFalse: 1}, ret1, ret0}},
		{"word equals 0xc0000201", []bpf.Instruction{ld(30, 4), bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0xc0000201, SkipFalse: 1}, ret1, ret0}},
		{"bits not set", []bpf.Instruction{ld(20, 2), bpf.JumpIf{Cond: bpf.JumpBitsNotSet, Val: 0x1fff, SkipTrue: 1}, ret0, ret1}},
		{"every condition", []bpf.Instruction{
			ld(15, 1),
			bpf.JumpIf{Cond: bpf.JumpLessThan, Val: 3, SkipTrue: 6},
			bpf.JumpIf{Cond: bpf.JumpLessOrEqual, Val: 0x10, SkipTrue: 5},
			bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: 0xf0, SkipTrue: 4},
			bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: 0x20, SkipTrue: 3},
			bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: 0x40, SkipFalse: 1},
			ret0,
			ret0,
			bpf.RetConstant{Val: 7},
		}},
		{"load at 40000 (far)", []bpf.Instruction{ld(40000, 1), ret1}},
		{"load past 65535 (impossible)", []bpf.Instruction{ld(14, 1), bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x45, SkipTrue: 1}, ret1, ld(65534, 2), ret1}},
		{"msh then indirect (tcp dst port via ihl)", []bpf.Instruction{
			bpf.LoadMemShift{Off: 14}, bpf.LoadIndirect{Off: 16, Size: 2},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: 22, SkipFalse: 1}, ret1, ret0,
		}},
		{"indirect with huge X", []bpf.Instruction{bpf.LoadConstant{Dst: bpf.RegX, Val: 0xfffffff0}, bpf.LoadIndirect{Off: 20, Size: 1}, ret1}},
		{"indirect with X near the top", []bpf.Instruction{bpf.LoadConstant{Dst: bpf.RegX, Val: 0xfffe}, bpf.LoadIndirect{Off: 0, Size: 1}, ret1}},
		{"indirect 4 bytes at X from a byte", []bpf.Instruction{ld(14, 1), bpf.TAX{}, bpf.LoadIndirect{Off: 0, Size: 4}, bpf.RetA{}}},
		{"indirect far offset", []bpf.Instruction{bpf.LoadConstant{Dst: bpf.RegX, Val: 1}, bpf.LoadIndirect{Off: 40000, Size: 2}, ret1}},
		{"divide by X (zero)", []bpf.Instruction{ld(14, 1), bpf.LoadConstant{Dst: bpf.RegX, Val: 0}, bpf.ALUOpX{Op: bpf.ALUOpDiv}, ret1}},
		{"divide by X from packet", []bpf.Instruction{ld(15, 1), bpf.TAX{}, ld(16, 2), bpf.ALUOpX{Op: bpf.ALUOpDiv}, bpf.RetA{}}},
		{"modulo by X from packet", []bpf.Instruction{ld(23, 1), bpf.TAX{}, ld(26, 4), bpf.ALUOpX{Op: bpf.ALUOpMod}, bpf.RetA{}}},
		{"shift left by X of 40", []bpf.Instruction{bpf.LoadConstant{Dst: bpf.RegA, Val: 1}, bpf.LoadConstant{Dst: bpf.RegX, Val: 40}, bpf.ALUOpX{Op: bpf.ALUOpShiftLeft}, bpf.RetA{}}},
		{"shift right by X of 32", []bpf.Instruction{bpf.LoadConstant{Dst: bpf.RegA, Val: 0xffffffff}, bpf.LoadConstant{Dst: bpf.RegX, Val: 32}, bpf.ALUOpX{Op: bpf.ALUOpShiftRight}, bpf.RetA{}}},
		{"shift by X from packet", []bpf.Instruction{ld(19, 1), bpf.TAX{}, ld(26, 4), bpf.ALUOpX{Op: bpf.ALUOpShiftRight}, bpf.RetA{}}},
		{"every constant op", []bpf.Instruction{
			ld(26, 4),
			bpf.ALUOpConstant{Op: bpf.ALUOpAdd, Val: 0x7fffffff}, bpf.ALUOpConstant{Op: bpf.ALUOpSub, Val: 3},
			bpf.ALUOpConstant{Op: bpf.ALUOpMul, Val: 0x10001}, bpf.ALUOpConstant{Op: bpf.ALUOpDiv, Val: 0x80000001},
			bpf.ALUOpConstant{Op: bpf.ALUOpOr, Val: 0x80000000}, bpf.ALUOpConstant{Op: bpf.ALUOpXor, Val: 0xffff0000},
			bpf.ALUOpConstant{Op: bpf.ALUOpMod, Val: 0xfffffff1}, bpf.ALUOpConstant{Op: bpf.ALUOpShiftLeft, Val: 31},
			bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: 7}, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0xff00ff},
			bpf.RetA{},
		}},
		{"negate", []bpf.Instruction{ld(14, 1), bpf.NegateA{}, bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0xffffffbb, SkipFalse: 1}, ret1, ret0}},
		{"scratch round trip", []bpf.Instruction{
			ld(26, 4), bpf.StoreScratch{Src: bpf.RegA, N: 0}, bpf.LoadConstant{Dst: bpf.RegX, Val: 9}, bpf.StoreScratch{Src: bpf.RegX, N: 15},
			ld(30, 4), bpf.LoadScratch{Dst: bpf.RegX, N: 0}, bpf.ALUOpX{Op: bpf.ALUOpXor},
			bpf.LoadScratch{Dst: bpf.RegX, N: 15}, bpf.ALUOpX{Op: bpf.ALUOpAdd}, bpf.RetA{},
		}},
		{"scratch read before write is zero", []bpf.Instruction{bpf.LoadScratch{Dst: bpf.RegA, N: 7}, bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0, SkipFalse: 1}, ret1, ret0}},
		{"jump X forms", []bpf.Instruction{
			ld(14, 1), bpf.TAX{}, ld(15, 1),
			bpf.JumpIfX{Cond: bpf.JumpGreaterThan, SkipTrue: 2},
			bpf.JumpIfX{Cond: bpf.JumpBitsSet, SkipTrue: 2, SkipFalse: 1},
			bpf.RetConstant{Val: 2}, ret0, bpf.TXA{}, bpf.RetA{},
		}},
		{"unconditional jump over dead code", []bpf.Instruction{bpf.Jump{Skip: 2}, ld(14, 1), bpf.RetA{}, ld(12, 2), bpf.RetA{}}},
		{"both branches to one place", []bpf.Instruction{ld(12, 2), bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x800, SkipTrue: 1, SkipFalse: 1}, ret0, ret1}},
		{"empty jump target block", []bpf.Instruction{ld(12, 2), bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x800, SkipTrue: 1}, bpf.Jump{Skip: 0}, ld(23, 1), bpf.RetA{}}},
		{"guard proven on one path only", []bpf.Instruction{
			ld(12, 2), bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x800, SkipFalse: 2},
			ld(40, 4), bpf.Jump{Skip: 1},
			ld(20, 1),
			ld(38, 1), bpf.RetA{},
		}},
		{"len and X", []bpf.Instruction{bpf.LoadExtension{Num: bpf.ExtLen}, bpf.TAX{}, bpf.LoadIndirect{Off: 0xfff0, Size: 1}, ret1}},
		{"mid-program returns", []bpf.Instruction{
			ld(12, 2), bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x86dd, SkipFalse: 1}, bpf.RetA{},
			ld(14, 1), bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x45, SkipTrue: 1}, ret0, bpf.RetConstant{Val: 0x40000},
		}},
	}
}

// Random programs: valid classic BPF the reference VM runs, biased towards
// header offsets and values seen in frames so that branches go both ways.

// source gives the generator its choices: from a seeded generator, or from
// fuzz input (zeros once it runs out).
type source struct {
	rng  *rand.Rand
	data []byte
	pos  int
}

func (s *source) byte() byte {
	if s.rng != nil {
		return byte(s.rng.Uint32())
	}
	if s.pos < len(s.data) {
		b := s.data[s.pos]
		s.pos++
		return b
	}
	return 0
}

func (s *source) u32() uint32 {
	return uint32(s.byte()) | uint32(s.byte())<<8 | uint32(s.byte())<<16 | uint32(s.byte())<<24
}

func (s *source) intn(n int) int { return int(s.byte()) % n }

var interesting = []uint32{
	0, 1, 2, 3, 4, 5, 6, 8, 12, 14, 17, 20, 22, 23, 31, 32, 33, 53, 58, 64, 0x45, 0xff,
	0x800, 0x806, 0x86dd, 0x8100, 0x88a8, 0x1fff, 0x3fff, 0xffff, 0x10000,
	0x0a000001, 0xc0000201, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff,
}

func (s *source) value() uint32 {
	if s.byte()&3 == 0 {
		return s.u32()
	}
	return interesting[s.intn(len(interesting))]
}

func (s *source) offset() uint32 {
	switch s.byte() & 15 {
	case 0:
		return 0x7ff0 + uint32(s.byte())%0x20 // around the int16 limit
	case 1:
		return 0xfff0 + uint32(s.byte())%0x20 // around the packet limit
	case 2:
		return s.u32() & 0x7fffffff
	}
	return uint32(s.byte()) % 100
}

func (s *source) size() int { return []int{1, 2, 4}[s.intn(3)] }

var (
	allOps   = []bpf.ALUOp{bpf.ALUOpAdd, bpf.ALUOpSub, bpf.ALUOpMul, bpf.ALUOpDiv, bpf.ALUOpOr, bpf.ALUOpAnd, bpf.ALUOpShiftLeft, bpf.ALUOpShiftRight, bpf.ALUOpMod, bpf.ALUOpXor}
	allConds = []bpf.JumpTest{bpf.JumpEqual, bpf.JumpNotEqual, bpf.JumpGreaterThan, bpf.JumpLessThan, bpf.JumpGreaterOrEqual, bpf.JumpLessOrEqual, bpf.JumpBitsSet, bpf.JumpBitsNotSet}
)

func (s *source) reg() bpf.Register { return bpf.Register(s.byte() & 1) }

// randomProgram makes a program of up to 28 instructions and a final
// return. Every program it makes is one Compile must accept.
func randomProgram(s *source) []bpf.Instruction {
	n := 1 + s.intn(28)
	prog := make([]bpf.Instruction, 0, n+1)
	for i := range n {
		left := n - i // the instructions after this one: skips of 0..left-1 stay inside
		var ins bpf.Instruction
		switch s.intn(20) {
		case 0, 1, 2:
			ins = bpf.LoadAbsolute{Off: s.offset(), Size: s.size()}
		case 3:
			ins = bpf.LoadIndirect{Off: s.offset() % 70, Size: s.size()}
		case 4:
			ins = bpf.LoadMemShift{Off: s.offset()}
		case 5:
			ins = bpf.LoadConstant{Dst: s.reg(), Val: s.value()}
		case 6:
			if s.byte()&1 == 0 {
				ins = bpf.LoadScratch{Dst: s.reg(), N: s.intn(16)}
			} else {
				ins = bpf.StoreScratch{Src: s.reg(), N: s.intn(16)}
			}
		case 7, 8:
			op := allOps[s.intn(len(allOps))]
			v := s.value()
			switch op {
			case bpf.ALUOpDiv, bpf.ALUOpMod:
				if v == 0 {
					v = 3
				}
			case bpf.ALUOpShiftLeft, bpf.ALUOpShiftRight:
				v %= 32
			}
			ins = bpf.ALUOpConstant{Op: op, Val: v}
		case 9:
			ins = bpf.ALUOpX{Op: allOps[s.intn(len(allOps))]}
		case 10:
			ins = []bpf.Instruction{bpf.NegateA{}, bpf.TAX{}, bpf.TXA{}}[s.intn(3)]
		case 11:
			ins = bpf.LoadExtension{Num: bpf.ExtLen}
		case 12, 13, 14:
			ins = bpf.JumpIf{Cond: allConds[s.intn(len(allConds))], Val: s.value(), SkipTrue: uint8(s.intn(left)), SkipFalse: uint8(s.intn(left))}
		case 15:
			ins = bpf.JumpIfX{Cond: allConds[s.intn(len(allConds))], SkipTrue: uint8(s.intn(left)), SkipFalse: uint8(s.intn(left))}
		case 16:
			ins = bpf.Jump{Skip: uint32(s.intn(left))}
		case 17:
			if s.byte()&1 == 0 {
				ins = bpf.RetA{}
			} else {
				ins = bpf.RetConstant{Val: s.value()}
			}
		default:
			ins = bpf.LoadAbsolute{Off: uint32(12 + s.intn(30)), Size: s.size()}
		}
		prog = append(prog, ins)
	}
	if s.byte()&1 == 0 {
		prog = append(prog, bpf.RetA{})
	} else {
		prog = append(prog, bpf.RetConstant{Val: s.value()})
	}
	return prog
}

func listing(insns []bpf.Instruction) string {
	var b strings.Builder
	for i, ins := range insns {
		if raw, ok := ins.(bpf.RawInstruction); ok {
			ins = raw.Disassemble()
		}
		fmt.Fprintf(&b, "\n\t%3d  %s", i, insnString(ins))
	}
	return b.String()
}
