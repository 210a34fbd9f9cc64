package filter

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cilium/ebpf/asm"
)

// A small eBPF interpreter for the instructions the filter programs use,
// so that tests can count the instructions a packet runs and FuzzOptimize
// can compare a program with its optimized form on any input without a
// kernel. One flat address space: the xdp_md at ctxAddr, the packet at
// pktAddr, the stack below stackTop. A load outside them reads 0 (the
// fuzzed programs are not verified; a real one never does this).
const (
	ctxAddr  = 0x100
	pktAddr  = 0x1000
	stackTop = 0x9000
	maxSteps = 1 << 16
)

type machine struct {
	reg   [11]uint64
	pkt   []byte
	stack [512]byte
}

func (m *machine) load(addr uint64, size asm.Size) uint64 {
	var b []byte
	switch {
	case addr >= ctxAddr && addr+uint64(size.Sizeof()) <= ctxAddr+20:
		var md [20]byte
		binary.NativeEndian.PutUint32(md[mdData:], pktAddr)
		binary.NativeEndian.PutUint32(md[mdDataEnd:], uint32(pktAddr+len(m.pkt)))
		b = md[addr-ctxAddr:]
	case addr >= pktAddr && addr+uint64(size.Sizeof()) <= pktAddr+uint64(len(m.pkt)):
		b = m.pkt[addr-pktAddr:]
	case addr >= stackTop-512 && addr+uint64(size.Sizeof()) <= stackTop:
		b = m.stack[addr-(stackTop-512):]
	default:
		return 0
	}
	switch size {
	case asm.Byte:
		return uint64(b[0])
	case asm.Half:
		return uint64(binary.NativeEndian.Uint16(b))
	case asm.Word:
		return uint64(binary.NativeEndian.Uint32(b))
	}
	return binary.NativeEndian.Uint64(b)
}

func (m *machine) store(addr, v uint64, size asm.Size) {
	if addr < stackTop-512 || addr+uint64(size.Sizeof()) > stackTop {
		return
	}
	b := m.stack[addr-(stackTop-512):]
	switch size {
	case asm.Byte:
		b[0] = byte(v)
	case asm.Half:
		binary.NativeEndian.PutUint16(b, uint16(v))
	case asm.Word:
		binary.NativeEndian.PutUint32(b, uint32(v))
	default:
		binary.NativeEndian.PutUint64(b, v)
	}
}

// execute runs insns on pkt and returns R0 at exit and the instructions
// run. A call returns actRedirect (bpf_redirect_map's verdict for a
// queue with a socket) or 0, and zeroes R1-R5.
func execute(insns asm.Instructions, pkt []byte) (r0 uint64, steps int, err error) {
	m := &machine{pkt: pkt}
	m.reg[asm.R1] = ctxAddr
	m.reg[asm.R10] = stackTop
	at := labelIndex(insns)
	for pc := 0; pc < len(insns); {
		if steps++; steps > maxSteps {
			return 0, steps, fmt.Errorf("more than %d steps", maxSteps)
		}
		ins := insns[pc]
		op := ins.OpCode
		next := pc + 1
		src := uint64(ins.Constant)
		if op.Source() == asm.RegSource && ins.Src <= asm.R10 {
			src = m.reg[ins.Src]
		}
		dst := &m.reg[ins.Dst]
		switch op.Class() {
		case asm.ALU64Class, asm.ALUClass:
			a, b := *dst, src
			if op.Class() == asm.ALUClass {
				a, b = uint64(uint32(a)), uint64(uint32(b))
			}
			v, ok := alu(op.ALUOp(), a, b)
			if !ok {
				return 0, steps, fmt.Errorf("instruction %d (%v): not interpreted", pc, ins)
			}
			if op.Class() == asm.ALUClass {
				v = uint64(uint32(v))
			}
			*dst = v
		case asm.LdXClass:
			*dst = m.load(m.reg[ins.Src]+uint64(int64(ins.Offset)), op.Size())
		case asm.LdClass:
			*dst = uint64(ins.Constant)
		case asm.StXClass:
			m.store(*dst+uint64(int64(ins.Offset)), m.reg[ins.Src], op.Size())
		case asm.StClass:
			m.store(*dst+uint64(int64(ins.Offset)), uint64(ins.Constant), op.Size())
		case asm.JumpClass, asm.Jump32Class:
			switch op.JumpOp() {
			case asm.Exit:
				return m.reg[asm.R0], steps, nil
			case asm.Call:
				// A call clobbers the argument registers (the verifier
				// refuses a read of one before it is written again).
				m.reg[asm.R0], m.reg[asm.R1], m.reg[asm.R2], m.reg[asm.R3], m.reg[asm.R4], m.reg[asm.R5] = 0, 0, 0, 0, 0, 0
				if ins.Constant == int64(asm.FnRedirectMap) {
					m.reg[asm.R0] = actRedirect
				}
			case asm.Ja:
				next = at[ins.Reference()]
			default:
				a, b := *dst, src
				if op.Class() == asm.Jump32Class {
					a, b = uint64(uint32(a)), uint64(uint32(b))
				}
				if taken(op.JumpOp(), a, b) {
					next = at[ins.Reference()]
				}
			}
		default:
			return 0, steps, fmt.Errorf("instruction %d (%v): not interpreted", pc, ins)
		}
		pc = next
	}
	return 0, steps, fmt.Errorf("ran off the end")
}

// alu is one ALU operation; ok is false for one the filters never use.
func alu(op asm.ALUOp, a, b uint64) (v uint64, ok bool) {
	switch op {
	case asm.Mov:
		return b, true
	case asm.Add:
		return a + b, true
	case asm.Sub:
		return a - b, true
	case asm.And:
		return a & b, true
	case asm.Or:
		return a | b, true
	case asm.Xor:
		return a ^ b, true
	case asm.LSh:
		return a << (b & 63), true
	case asm.RSh:
		return a >> (b & 63), true
	case asm.Mul:
		return a * b, true
	}
	return 0, false
}

// taken evaluates a conditional jump.
func taken(op asm.JumpOp, a, b uint64) bool {
	switch op {
	case asm.JEq:
		return a == b
	case asm.JNE:
		return a != b
	case asm.JGT:
		return a > b
	case asm.JGE:
		return a >= b
	case asm.JLT:
		return a < b
	case asm.JLE:
		return a <= b
	case asm.JSet:
		return a&b != 0
	}
	return false
}

// run executes insns on pkt for a test.
func run(t *testing.T, insns asm.Instructions, pkt []byte) (steps int, verdict uint64) {
	t.Helper()
	v, steps, err := execute(insns, pkt)
	if err != nil {
		t.Fatal(err)
	}
	return steps, v
}

// fuzzProgram decodes data into a loop-free program over the registers
// and offsets optimize rewrites: bounds checks, loads and compares (the
// blocks' guards, also twice with the base moved between them), ALU,
// stores, calls, jumps forward to the groups after them or to one of four
// tails, each returning its own constant.
func fuzzProgram(data []byte) asm.Instructions {
	regs := []asm.Register{asm.R0, asm.R1, asm.R2, asm.R9}
	bases := []asm.Register{asm.R7, asm.R9, asm.R2}
	var insns asm.Instructions
	insns = append(insns, asm.LoadMem(DataEndRegister, asm.R1, mdDataEnd, asm.Word), asm.LoadMem(DataRegister, asm.R1, mdData, asm.Word),
		asm.Mov.Reg(asm.R9, DataRegister), asm.Mov.Reg(asm.R2, DataRegister))
	n := len(data) / 3
	label := func(i int) string { return fmt.Sprintf("l%d", i) }
	for i := 0; i < n; i++ {
		a, b, c := data[3*i], data[3*i+1], data[3*i+2]
		// A jump's target: an instruction group after this one, or one of
		// the tails, each of which returns its own constant, so that a
		// jump that changes where a packet goes changes the result.
		// Three in four go to a tail, so that long stretches no branch
		// enters, where the checks optimize removes are, come up often.
		target := label(i + 1 + int(c)%(n-i))
		if c&0xc0 != 0 {
			target = fmt.Sprintf("tail%d", c%4)
		}
		r, base := regs[int(b)%len(regs)], bases[int(b>>2)%len(bases)]
		var g asm.Instructions
		switch a % 12 {
		case 0:
			g = asm.Instructions{asm.Mov.Imm(r, int32(c%4))}
		case 1:
			g = asm.Instructions{asm.Add.Imm(r, int32(c%8))}
		case 2:
			g = asm.Instructions{asm.LoadMem(r, base, int16(c%16), asm.Byte)}
		case 3:
			g = boundsTo(base, int(c%48), target)
		case 4:
			g = asm.Instructions{asm.LoadMem(asm.R1, base, int16(b%4)*2, asm.Half), asm.JNE.Imm(asm.R1, int32(c%3), target)}
		case 5:
			g = asm.Instructions{asm.JEq.Imm(r, int32(b%3), target)}
		case 6:
			g = asm.Instructions{asm.Ja.Label(target)}
		case 7:
			g = asm.Instructions{asm.StoreMem(asm.R10, -8, r, asm.DWord)}
		case 8:
			g = asm.Instructions{asm.Mov.Imm(r, 1), asm.JEq.Imm(r, int32(c%2), target)}
		case 9:
			g = asm.Instructions{asm.FnKtimeGetNs.Call()}
		case 10: // a bounds check again after its base moved
			g = append(append(boundsTo(base, int(c%48), target), asm.Add.Imm(base, int32(b%4)+1)), boundsTo(base, int(c%48), target)...)
		case 11: // a load and compare again after its base moved
			ld := func() asm.Instructions {
				return asm.Instructions{asm.LoadMem(asm.R1, base, int16(b%4)*2, asm.Half), asm.JNE.Imm(asm.R1, int32(c%3), target)}
			}
			g = append(append(ld(), asm.Add.Imm(base, int32(c%3)+1)), ld()...)
		}
		g[0] = g[0].WithSymbol(label(i))
		insns = append(insns, g...)
	}
	insns = append(insns, asm.Mov.Imm(asm.R0, 100).WithSymbol(label(n)), asm.Return())
	for k := 0; k < 4; k++ {
		insns = append(insns, asm.Mov.Imm(asm.R0, int32(k)).WithSymbol(fmt.Sprintf("tail%d", k)), asm.Return())
	}
	return insns
}

// FuzzOptimize checks that optimize never changes what a program returns,
// never panics and never leaves a branch without its label, on decoded
// programs and packets. No kernel needed.
func FuzzOptimize(f *testing.F) {
	f.Add([]byte{3, 1, 4, 3, 1, 2, 4, 5, 0, 3, 1, 4}, []byte{8, 0, 0x45, 0, 1, 2, 3, 4})
	f.Add([]byte{4, 4, 1, 4, 4, 1, 0, 0, 0, 8, 1, 1}, []byte{0, 0, 0, 0})
	f.Add([]byte{7, 1, 0, 4, 4, 1, 7, 2, 0, 4, 4, 1, 9, 0, 0}, make([]byte, 40))
	f.Add([]byte{3, 8, 11, 1, 2, 4, 3, 8, 154}, make([]byte, 12)) // a bounds check again after its base moved
	f.Fuzz(func(t *testing.T, prog, pkt []byte) {
		if len(prog) > 300 || len(pkt) > 128 {
			return
		}
		in := fuzzProgram(prog)
		out := optimize(append(asm.Instructions(nil), in...))
		if len(out) > len(in) {
			t.Fatalf("optimized to %d instructions from %d", len(out), len(in))
		}
		at := labelIndex(out)
		for _, ins := range out {
			if isBranch(ins.OpCode) {
				if _, ok := at[ins.Reference()]; !ok {
					t.Fatalf("a branch to %q, which is gone:\n%s", ins.Reference(), listing(out))
				}
			}
		}
		want, _, err1 := execute(in, pkt)
		got, _, err2 := execute(out, pkt)
		if err1 != nil || err2 != nil || got != want {
			t.Fatalf("returns %d (%v), %d (%v) before optimizing\nbefore:\n%s\nafter:\n%s", got, err2, want, err1, listing(in), listing(out))
		}
	})
}
