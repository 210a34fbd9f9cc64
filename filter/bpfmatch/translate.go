package bpfmatch

import (
	"fmt"
	"math"

	"github.com/cilium/ebpf/asm"
	"golang.org/x/net/bpf"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
)

// maxPacketOff is the verifier's MAX_PACKET_OFF: no packet pointer range
// beyond it is ever proven, so a load ending past it can never succeed.
const maxPacketOff = 0xffff

// Linux's negative offsets (include/uapi/linux/filter.h).
const (
	skfAdOff  = -0x1000
	skfNetOff = -0x100000
	skfLLOff  = -0x200000
)

// ancillary names the SKF_AD_* loads, by offset from SKF_AD_OFF.
var ancillary = map[int32]string{
	0: "protocol", 4: "pkttype", 8: "ifindex", 12: "nlattr", 16: "nlattr_nest",
	20: "mark", 24: "queue", 28: "hatype", 32: "rxhash", 36: "cpu", 40: "alu_xor_x",
	44: "vlan_tag", 48: "vlan_tag_present", 52: "pay_offset", 56: "random", 60: "vlan_tpid",
}

// block is a basic block of the classic program: instructions [start, end).
type block struct {
	start, end int
	guard      int   // the largest off+size of its absolute loads
	dead       bool  // it holds a load no packet can satisfy
	need       int   // the length every accepting path from here proves, or never
	succ       []int // successor blocks, by index
	reachable  bool
	provenIn   int // packet length every path into the block has checked
}

// program is a validated, analysed classic program, ready to emit.
type program struct {
	insns   []bpf.Instruction // normalised (disassembled) instructions
	blocks  []block
	blockAt map[int]int // leader instruction -> block index
	scratch [16]bool    // M[n] is read somewhere reachable
}

// translate validates insns and analyses their control flow.
func translate(insns []bpf.Instruction) (*program, error) {
	if len(insns) == 0 {
		return nil, &Error{Index: -1, Reason: "empty program"}
	}
	if len(insns) > MaxInstructions {
		return nil, &Error{Index: -1, Reason: fmt.Sprintf("%d instructions, more than the %d classic BPF allows", len(insns), MaxInstructions), err: packetio.ErrUnsupported}
	}
	p := &program{insns: make([]bpf.Instruction, len(insns)), blockAt: map[int]int{}}
	for i, ins := range insns {
		d, err := normalise(i, ins)
		if err != nil {
			return nil, err
		}
		if err := p.check(i, ins, d, len(insns)); err != nil {
			return nil, err
		}
		p.insns[i] = d
	}
	switch p.insns[len(insns)-1].(type) {
	case bpf.RetA, bpf.RetConstant:
	default:
		i := len(insns) - 1
		return nil, malformed(i, insns[i], "the last instruction must be a return (RetA or RetConstant): the program would run off its end")
	}
	p.split()
	p.analyse()
	// Size the translation now, so that a program too long for eBPF is
	// refused by Compile rather than by Open.
	code, err := p.emit(filter.MatchEnv{Next: "next", Redirect: "redirect", Data: filter.DataRegister, DataEnd: filter.DataEndRegister})
	if err != nil {
		return nil, err
	}
	if len(code) > maxBlock {
		return nil, &Error{Index: -1, Reason: fmt.Sprintf("the translation is %d eBPF instructions, more than the %d a filter block may have", len(code), maxBlock), err: packetio.ErrUnsupported}
	}
	return p, nil
}

// normalise assembles ins and disassembles the result, so that every
// instruction, whatever its Go type (raw, typed, or a pointer to either),
// is validated the same way and translated from one canonical form.
func normalise(i int, ins bpf.Instruction) (bpf.Instruction, error) {
	if ins == nil {
		return nil, malformed(i, ins, "nil instruction")
	}
	raw, err := assemble(ins)
	if err != nil {
		return nil, malformed(i, ins, "does not assemble: %v", err)
	}
	if err := metadata(i, ins, raw); err != nil {
		return nil, err
	}
	d := raw.Disassemble()
	if _, ok := d.(bpf.RawInstruction); ok {
		return nil, malformed(i, ins, "unrecognised cBPF opcode %#x", raw.Op)
	}
	// golang.org/x/net/bpf decodes some invalid encodings loosely (it
	// ignores the destination of ldx abs, for one). Refuse anything that
	// does not encode back to the opcode it came from.
	back, err := d.Assemble()
	if err != nil || back.Op != raw.Op {
		return nil, malformed(i, ins, "unrecognised cBPF opcode %#x", raw.Op)
	}
	return d, nil
}

// assemble calls the instruction's Assemble, which may be the caller's
// own code: a panic there is an error, not a crash.
func assemble(ins bpf.Instruction) (raw bpf.RawInstruction, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("its Assemble method panicked: %v", r)
		}
	}()
	return ins.Assemble()
}

// metadata refuses loads at negative offsets: Linux resolves them against
// the socket buffer, which XDP does not have.
func metadata(i int, ins bpf.Instruction, raw bpf.RawInstruction) error {
	const (
		clsLd, clsLdx          = 0x00, 0x01
		modeAbs, modeInd, mMsh = 0x20, 0x40, 0xa0
	)
	cls, mode := raw.Op&0x07, raw.Op&0xe0
	if cls != clsLd && cls != clsLdx {
		return nil
	}
	if mode != modeAbs && mode != modeInd && mode != mMsh {
		return nil
	}
	k := int32(raw.K)
	if k >= 0 {
		return nil
	}
	var what string
	switch {
	case k >= skfAdOff:
		n := k - skfAdOff
		what = fmt.Sprintf("SKF_AD_OFF+%d, the ancillary value %s", n, ancillaryName(n))
	case k >= skfNetOff:
		what = fmt.Sprintf("SKF_NET_OFF+%d, relative to the network header the socket buffer records", k-skfNetOff)
	case k >= skfLLOff:
		what = fmt.Sprintf("SKF_LL_OFF+%d, relative to the link-layer header the socket buffer records", k-skfLLOff)
	default:
		what = "below SKF_LL_OFF"
	}
	return unsupported(i, ins, "loads at offset %d (%s): a negative offset reads socket-buffer metadata, which XDP does not have", k, what)
}

func ancillaryName(n int32) string {
	if s, ok := ancillary[n]; ok {
		return "SKF_AD_" + toUpper(s)
	}
	return "(unknown)"
}

func toUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// check validates one normalised instruction at index i of n.
func (p *program) check(i int, orig, ins bpf.Instruction, n int) error {
	past := func(skip uint64) bool { return uint64(i)+1+skip >= uint64(n) }
	switch ins := ins.(type) {
	case bpf.Jump:
		if past(uint64(ins.Skip)) {
			return malformed(i, orig, "jumps %d instructions ahead, past the end of the %d-instruction program", ins.Skip, n)
		}
	case bpf.JumpIf:
		if past(uint64(ins.SkipTrue)) || past(uint64(ins.SkipFalse)) {
			return malformed(i, orig, "jumps past the end of the %d-instruction program", n)
		}
	case bpf.JumpIfX:
		if past(uint64(ins.SkipTrue)) || past(uint64(ins.SkipFalse)) {
			return malformed(i, orig, "jumps past the end of the %d-instruction program", n)
		}
	case bpf.ALUOpConstant:
		switch ins.Op {
		case bpf.ALUOpDiv, bpf.ALUOpMod:
			if ins.Val == 0 {
				return malformed(i, orig, "divides by the constant 0")
			}
		case bpf.ALUOpShiftLeft, bpf.ALUOpShiftRight:
			if ins.Val >= 32 {
				return malformed(i, orig, "shifts by the constant %d; classic BPF and the eBPF verifier allow 0 to 31", ins.Val)
			}
		}
	case bpf.LoadExtension:
		if ins.Num != bpf.ExtLen {
			// Unreachable: metadata refuses every other extension
			// first. Kept so that a new encoding cannot slip by.
			return unsupported(i, orig, "ancillary load %d: socket-buffer metadata XDP does not have", ins.Num)
		}
	}
	return nil
}

// split cuts the program into basic blocks and links them.
func (p *program) split() {
	n := len(p.insns)
	leader := make([]bool, n)
	leader[0] = true
	mark := func(i int) {
		if i < n {
			leader[i] = true
		}
	}
	for i, ins := range p.insns {
		switch ins := ins.(type) {
		case bpf.Jump:
			mark(i + 1 + int(ins.Skip))
			mark(i + 1)
		case bpf.JumpIf:
			mark(i + 1 + int(ins.SkipTrue))
			mark(i + 1 + int(ins.SkipFalse))
			mark(i + 1)
		case bpf.JumpIfX:
			mark(i + 1 + int(ins.SkipTrue))
			mark(i + 1 + int(ins.SkipFalse))
			mark(i + 1)
		case bpf.RetA, bpf.RetConstant:
			mark(i + 1)
		}
	}
	for i := 0; i < n; {
		j := i + 1
		for j < n && !leader[j] {
			j++
		}
		p.blockAt[i] = len(p.blocks)
		p.blocks = append(p.blocks, block{start: i, end: j})
		i = j
	}
	for bi := range p.blocks {
		b := &p.blocks[bi]
		last := b.end - 1
		switch ins := p.insns[last].(type) {
		case bpf.Jump:
			b.succ = []int{p.blockAt[last+1+int(ins.Skip)]}
		case bpf.JumpIf:
			b.succ = []int{p.blockAt[last+1+int(ins.SkipTrue)], p.blockAt[last+1+int(ins.SkipFalse)]}
		case bpf.JumpIfX:
			b.succ = []int{p.blockAt[last+1+int(ins.SkipTrue)], p.blockAt[last+1+int(ins.SkipFalse)]}
		case bpf.RetA, bpf.RetConstant:
		default:
			b.succ = []int{p.blockAt[b.end]}
		}
		for k := b.start; k < b.end; k++ {
			switch ins := p.insns[k].(type) {
			case bpf.LoadAbsolute:
				end := uint64(ins.Off) + uint64(ins.Size)
				if end > maxPacketOff {
					b.dead = true
				} else if int(end) > b.guard {
					b.guard = int(end)
				}
			case bpf.LoadMemShift:
				end := uint64(ins.Off) + 1
				if end > maxPacketOff {
					b.dead = true
				} else if int(end) > b.guard {
					b.guard = int(end)
				}
			case bpf.LoadIndirect:
				if uint64(ins.Off)+uint64(ins.Size) > maxPacketOff {
					b.dead = true
				}
			}
		}
	}
}

// never is the need of a block from which no path accepts.
const never = math.MaxInt

// analyse finds, for each block, the packet length every accepting path
// from it must prove (a shorter packet cannot match, so the block may as
// well refuse it at once, with one bounds check that covers its loads and
// those after it), then the reachable blocks and the length proven on
// entry to each. Jumps only go forward: one pass backwards sees every
// successor of a block first, one pass forwards every predecessor.
func (p *program) analyse() {
	for bi := len(p.blocks) - 1; bi >= 0; bi-- {
		b := &p.blocks[bi]
		b.need = never
		if b.dead {
			continue
		}
		switch ins := p.insns[b.end-1].(type) {
		case bpf.RetConstant:
			if ins.Val != 0 {
				b.need = b.guard
			}
		case bpf.RetA:
			b.need = b.guard
		default:
			for _, s := range b.succ {
				b.need = min(b.need, p.blocks[s].need)
			}
			if b.need != never {
				b.need = max(b.need, b.guard)
			}
		}
	}
	for bi := range p.blocks {
		p.blocks[bi].provenIn = never
	}
	p.blocks[0].reachable = true
	p.blocks[0].provenIn = 0
	for bi := range p.blocks {
		b := &p.blocks[bi]
		if !b.reachable || b.need == never {
			continue
		}
		out := max(b.provenIn, b.need)
		for _, s := range b.succ {
			p.blocks[s].reachable = true
			p.blocks[s].provenIn = min(p.blocks[s].provenIn, out)
		}
		for k := b.start; k < b.end; k++ {
			if ld, ok := p.insns[k].(bpf.LoadScratch); ok {
				p.scratch[ld.N] = true
			}
		}
	}
}

var aluOps = map[bpf.ALUOp]asm.ALUOp{
	bpf.ALUOpAdd:        asm.Add,
	bpf.ALUOpSub:        asm.Sub,
	bpf.ALUOpMul:        asm.Mul,
	bpf.ALUOpDiv:        asm.Div,
	bpf.ALUOpOr:         asm.Or,
	bpf.ALUOpAnd:        asm.And,
	bpf.ALUOpShiftLeft:  asm.LSh,
	bpf.ALUOpShiftRight: asm.RSh,
	bpf.ALUOpMod:        asm.Mod,
	bpf.ALUOpXor:        asm.Xor,
}

// jumpOps maps a classic condition to an eBPF jump; swap says the targets
// are exchanged (BitsNotSet is JSet with the branches the other way round).
var jumpOps = map[bpf.JumpTest]struct {
	op   asm.JumpOp
	swap bool
}{
	bpf.JumpEqual:          {asm.JEq, false},
	bpf.JumpNotEqual:       {asm.JNE, false},
	bpf.JumpGreaterThan:    {asm.JGT, false},
	bpf.JumpLessThan:       {asm.JLT, false},
	bpf.JumpGreaterOrEqual: {asm.JGE, false},
	bpf.JumpLessOrEqual:    {asm.JLE, false},
	bpf.JumpBitsSet:        {asm.JSet, false},
	bpf.JumpBitsNotSet:     {asm.JSet, true},
}

// inverse is the condition that holds exactly when op does not, where eBPF
// has one.
var inverse = map[asm.JumpOp]asm.JumpOp{
	asm.JEq: asm.JNE, asm.JNE: asm.JEq,
	asm.JGT: asm.JLE, asm.JLE: asm.JGT,
	asm.JGE: asm.JLT, asm.JLT: asm.JGE,
}

func loadSize(n int) asm.Size {
	switch n {
	case 1:
		return asm.Byte
	case 2:
		return asm.Half
	}
	return asm.Word
}

// emitter holds the state of one emission.
type emitter struct {
	p    *program
	env  filter.MatchEnv
	out  asm.Instructions
	next int // the block emitted after the current one, or -1
}

// emit is the filter.NewMatch builder: it writes the block for env. It is
// deterministic and has no side effects, so Open may run it per mode.
func (p *program) emit(env filter.MatchEnv) (asm.Instructions, error) {
	e := &emitter{p: p, env: env}
	e.out = append(e.out, asm.Mov.Imm32(regA, 0), asm.Mov.Imm32(regX, 0))
	for n, read := range p.scratch {
		if read {
			e.out = append(e.out, asm.StoreImm(asm.R10, scratchOffset(n), 0, asm.Word))
		}
	}
	var order []int
	for bi := range p.blocks {
		if p.blocks[bi].reachable {
			order = append(order, bi)
		}
	}
	for k, bi := range order {
		e.next = -1
		if k+1 < len(order) {
			e.next = order[k+1]
		}
		start := len(e.out)
		e.block(bi)
		if len(e.out) == start {
			// A block that only jumps to the block after it emits
			// nothing; its label still needs an instruction.
			e.out = append(e.out, asm.Mov.Imm(asm.R0, 0))
		}
		e.out[start] = e.out[start].WithSymbol(e.label(bi))
	}
	return e.out, nil
}

func (e *emitter) label(bi int) string {
	return e.env.Label(fmt.Sprintf("b%d", e.p.blocks[bi].start))
}

// goTo jumps to block bi unless it is the one emitted next.
func (e *emitter) goTo(bi int) {
	if bi != e.next {
		e.out = append(e.out, asm.Ja.Label(e.label(bi)))
	}
}

func (e *emitter) block(bi int) {
	b := &e.p.blocks[bi]
	if b.need == never {
		// No path from here accepts (a load no packet can satisfy,
		// or only returns of 0 ahead).
		e.out = append(e.out, asm.Ja.Label(e.env.Next))
		return
	}
	if b.need > b.provenIn {
		e.out = append(e.out, e.env.Bounds(e.env.Data, b.need)...)
	}
	for k := b.start; k < b.end; k++ {
		e.insn(k)
	}
	if len(b.succ) == 1 {
		if _, ok := e.p.insns[b.end-1].(bpf.Jump); !ok {
			return // falls through to the next block, which is next
		}
		e.goTo(b.succ[0])
	}
}

// absolute loads size bytes at off from the frame start into dst.
func (e *emitter) absolute(dst asm.Register, off uint32, size asm.Size) {
	if off <= math.MaxInt16 {
		e.out = append(e.out, asm.LoadMem(dst, e.env.Data, int16(off), size))
		return
	}
	e.out = append(e.out,
		asm.Mov.Reg(regFar, e.env.Data),
		asm.Add.Imm(regFar, int32(off)),
		asm.LoadMem(dst, regFar, 0, size),
	)
}

// swap turns a network-order load into a number.
func (e *emitter) swap(size int) {
	if size > 1 {
		e.out = append(e.out, asm.HostTo(asm.BE, regA, loadSize(size)))
	}
}

func (e *emitter) insn(k int) {
	env := e.env
	switch ins := e.p.insns[k].(type) {
	case bpf.LoadConstant:
		dst := regA
		if ins.Dst == bpf.RegX {
			dst = regX
		}
		e.out = append(e.out, asm.Mov.Imm32(dst, int32(ins.Val)))
	case bpf.LoadScratch:
		dst := regA
		if ins.Dst == bpf.RegX {
			dst = regX
		}
		e.out = append(e.out, asm.LoadMem(dst, asm.R10, scratchOffset(ins.N), asm.Word))
	case bpf.StoreScratch:
		src := regA
		if ins.Src == bpf.RegX {
			src = regX
		}
		e.out = append(e.out, asm.StoreMem(asm.R10, scratchOffset(ins.N), src, asm.Word))
	case bpf.LoadAbsolute:
		// The block's guard covers it.
		e.absolute(regA, ins.Off, loadSize(ins.Size))
		e.swap(ins.Size)
	case bpf.LoadMemShift:
		e.absolute(regX, ins.Off, asm.Byte)
		e.out = append(e.out,
			asm.And.Imm32(regX, 0xf),
			asm.LSh.Imm32(regX, 2),
		)
	case bpf.LoadIndirect:
		// X+off+size must fit the packet. Bounding X (zero-extended)
		// by 0xffff-(off+size) first is what lets the verifier accept
		// the variable pointer; a larger X is past any packet anyway.
		end := int(ins.Off) + ins.Size
		e.out = append(e.out,
			asm.Mov.Reg32(regTmp, regX),
			asm.JGT.Imm(regTmp, int32(maxPacketOff-end), env.Next),
			asm.Mov.Reg(regPtr, env.Data),
			asm.Add.Reg(regPtr, regTmp),
		)
		if ins.Off != 0 {
			e.out = append(e.out, asm.Add.Imm(regPtr, int32(ins.Off)))
		}
		e.out = append(e.out, env.Bounds(regPtr, ins.Size)...)
		e.out = append(e.out, asm.LoadMem(regA, regPtr, 0, loadSize(ins.Size)))
		e.swap(ins.Size)
	case bpf.LoadExtension: // ExtLen, the only one check lets through
		e.out = append(e.out, env.Length(regA)...)
		e.out = append(e.out, asm.Mov.Reg32(regA, regA))
	case bpf.ALUOpConstant:
		e.out = append(e.out, aluOps[ins.Op].Imm32(regA, int32(ins.Val)))
	case bpf.ALUOpX:
		op := aluOps[ins.Op]
		switch ins.Op {
		case bpf.ALUOpDiv, bpf.ALUOpMod:
			// Classic BPF ends the program with 0; eBPF would
			// carry on with 0 or A.
			e.out = append(e.out, asm.JEq.Imm32(regX, 0, env.Next), op.Reg32(regA, regX))
		case bpf.ALUOpShiftLeft, bpf.ALUOpShiftRight:
			// A shift by 32 or more gives 0, as in the reference VM;
			// the CPU would use the low five bits of X.
			l := env.Label(fmt.Sprintf("s%d", k))
			e.out = append(e.out,
				asm.JLT.Imm32(regX, 32, l),
				asm.Mov.Imm32(regA, 0),
				op.Reg32(regA, regX).WithSymbol(l),
			)
		default:
			e.out = append(e.out, op.Reg32(regA, regX))
		}
	case bpf.NegateA:
		e.out = append(e.out, asm.Neg.Imm32(regA, 0))
	case bpf.TAX:
		e.out = append(e.out, asm.Mov.Reg32(regX, regA))
	case bpf.TXA:
		e.out = append(e.out, asm.Mov.Reg32(regA, regX))
	case bpf.Jump:
		// The block's end: goTo in block.
	case bpf.JumpIf:
		e.cond(k, ins.Cond, func(op asm.JumpOp, l string) asm.Instruction {
			return op.Imm32(regA, int32(ins.Val), l)
		}, ins.SkipTrue, ins.SkipFalse)
	case bpf.JumpIfX:
		e.cond(k, ins.Cond, func(op asm.JumpOp, l string) asm.Instruction {
			return op.Reg32(regA, regX, l)
		}, ins.SkipTrue, ins.SkipFalse)
	case bpf.RetA:
		e.out = append(e.out, asm.JNE.Imm32(regA, 0, env.Redirect), asm.Ja.Label(env.Next))
	case bpf.RetConstant:
		if ins.Val != 0 {
			e.out = append(e.out, asm.Ja.Label(env.Redirect))
		} else {
			e.out = append(e.out, asm.Ja.Label(env.Next))
		}
	}
}

// cond emits a conditional jump at instruction k. All comparisons are
// 32-bit (JMP32), so an immediate with bit 31 set compares unsigned as the
// classic one does.
func (e *emitter) cond(k int, c bpf.JumpTest, mk func(asm.JumpOp, string) asm.Instruction, st, sf uint8) {
	j := jumpOps[c]
	t := e.p.blockAt[k+1+int(st)]
	f := e.p.blockAt[k+1+int(sf)]
	if j.swap {
		t, f = f, t
	}
	switch {
	case t == f:
		e.goTo(t)
	case t == e.next:
		if inv, ok := inverse[j.op]; ok {
			e.out = append(e.out, mk(inv, e.label(f)))
			return
		}
		e.out = append(e.out, mk(j.op, e.label(t)))
		e.goTo(f)
	default:
		e.out = append(e.out, mk(j.op, e.label(t)))
		e.goTo(f)
	}
}
