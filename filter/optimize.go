package filter

import (
	"github.com/cilium/ebpf/asm"
)

// optimize shortens the path a packet takes through an assembled program
// without changing what the program does to any packet. It matters more
// than the instructions' own cost suggests: on a veth fed flat out each
// instruction a packet runs cost about 0.35% of the receive rate at 512
// bytes (afxdp/README.md, "What steering costs"), because the program
// runs on the CPU that feeds the interface, between the driver and the
// copy into the UMEM.
//
// The blocks are assembled one at a time and each carries its own guards,
// so a conjunction checks the same bounds and EtherType again, and every
// block starts with a filler that only holds its label. optimize removes,
// until nothing changes:
//
//   - jumps to the next instruction;
//   - instructions whose only effect is a register nobody reads before it
//     is written again (ALU and loads; never a store, call or map load);
//   - a bounds check that an earlier one, as long or longer from the same
//     base, already passed on the straight path leading to it;
//   - a load and compare-and-jump-if-different that repeats an earlier
//     identical pair on that path (the field was already found equal);
//   - a conditional jump on a register the instruction right before set
//     to a constant (decided at assembly), and then whatever no path
//     reaches;
//
// and then moves what the program keeps in callee-saved registers into
// free argument registers where no call is in the way
// (renameCalleeSaved), so the JIT saves and restores none.
//
// "The straight path" is one no jump enters and no call or store
// crosses, along which the base registers are not written: the facts the
// earlier check established (for the verifier too: the packet range it
// proved on the base register) still hold. A program with a jump that
// names no label, a bpf-to-bpf call or a legacy packet load (LdAbs,
// LdInd) is returned as it is, and so is the original when the result
// would lose a map load or a call (a filter that matches nothing, whose
// redirect tail no packet reaches, keeps it for its map).
func optimize(insns asm.Instructions) asm.Instructions {
	if len(insns) == 0 || !optimizable(insns) {
		return insns
	}
	return renameCalleeSaved(shorten(insns))
}

// shorten is optimize before the registers are renamed; insns must be
// optimizable.
func shorten(insns asm.Instructions) asm.Instructions {
	out := append(asm.Instructions(nil), insns...)
	for {
		n := len(out)
		out = dropJumpsToNext(out)
		out = foldConstantJumps(out)
		out = dropUnreachable(out)
		out = dropRepeatedChecks(out)
		out = dropDeadWrites(out)
		if len(out) == n {
			break
		}
	}
	if !sameReferences(insns, out) {
		return insns
	}
	return out
}

// renameCalleeSaved moves the values the program keeps in R6-R9 into
// R1-R5 where none of them lives across a call and the two registers are
// never live at once. The JIT saves and restores every callee-saved
// register a program uses, on each run (x86: push and pop of rbx,
// r13-r15), and encodes R1-R4 shorter: a program that keeps everything in
// R1-R5 runs the fewest instructions. insns must be optimizable and not
// empty; it is not changed.
func renameCalleeSaved(insns asm.Instructions) asm.Instructions {
	insns = append(asm.Instructions(nil), insns...)
	for _, c := range []asm.Register{asm.R9, asm.R6, asm.R7, asm.R8} {
		live := liveness(insns)
		if !mentions(insns, c) || live[0]&regBit(c) != 0 || livesAcrossCall(insns, live, c) {
			continue
		}
		for s := asm.R1; s <= asm.R5; s++ {
			if !interferes(insns, live, c, s) {
				insns = renameRegister(insns, c, s)
				break
			}
		}
	}
	return dropSelfMoves(insns)
}

// dropSelfMoves removes 64-bit moves of a register to itself, which a
// rename leaves where a value moved from the register it now shares.
func dropSelfMoves(insns asm.Instructions) asm.Instructions {
	drop := make([]bool, len(insns))
	for i, ins := range insns {
		drop[i] = ins.OpCode == asm.Mov.Op(asm.RegSource) && ins.Dst == ins.Src && i+1 < len(insns)
	}
	return removeAll(insns, drop)
}

// mentions reports whether any instruction reads or writes r.
func mentions(insns asm.Instructions, r asm.Register) bool {
	for _, ins := range insns {
		if read, write := uses(ins); (read|write)&regBit(r) != 0 {
			return true
		}
	}
	return false
}

// liveAfter returns the registers live right after instruction i, from
// live, the registers live on entry to each instruction.
func liveAfter(insns asm.Instructions, live []regs, at map[string]int, i int) regs {
	var out regs
	op := insns[i].OpCode
	if !isUnconditional(op) && i+1 < len(live) {
		out |= live[i+1]
	}
	if isBranch(op) {
		out |= live[at[insns[i].Reference()]]
	}
	return out
}

// livesAcrossCall reports whether r holds a value some call would destroy
// were it in R1-R5.
func livesAcrossCall(insns asm.Instructions, live []regs, r asm.Register) bool {
	at := labelIndex(insns)
	for i, ins := range insns {
		if isJump(ins.OpCode) && ins.OpCode.JumpOp() == asm.Call && liveAfter(insns, live, at, i)&regBit(r) != 0 {
			return true
		}
	}
	return false
}

// interferes reports whether c and s are ever live at once, or one is
// written while the other is live.
func interferes(insns asm.Instructions, live []regs, c, s asm.Register) bool {
	at := labelIndex(insns)
	both := regBit(c) | regBit(s)
	if live[0]&regBit(s) != 0 {
		return true // s holds something on entry (R1: the context)
	}
	for i, ins := range insns {
		if live[i]&both == both {
			return true
		}
		_, write := uses(ins)
		after := liveAfter(insns, live, at, i)
		if write&regBit(c) != 0 && after&regBit(s) != 0 || write&regBit(s) != 0 && after&regBit(c) != 0 {
			return true
		}
		if ins.OpCode.Class() == asm.StXClass && ins.OpCode.Mode() == asm.AtomicMode && (ins.Dst == c || ins.Src == c) {
			return true // its writes are not modelled: keep it as it is
		}
	}
	return false
}

// renameRegister replaces register operand c with s everywhere.
func renameRegister(insns asm.Instructions, c, s asm.Register) asm.Instructions {
	for i, ins := range insns {
		if ins.Dst == c && (!isJump(ins.OpCode) || isBranch(ins.OpCode)) {
			ins.Dst = s
		}
		if usesSrcReg(ins) && ins.Src == c {
			ins.Src = s
		}
		insns[i] = ins
	}
	return insns
}

// optimizable reports whether every jump names its target by label and
// nothing in the program has control flow or effects optimize does not
// model.
func optimizable(insns asm.Instructions) bool {
	labels := map[string]bool{}
	for _, ins := range insns {
		if s := ins.Symbol(); s != "" {
			labels[s] = true
		}
	}
	for _, ins := range insns {
		op := ins.OpCode
		switch {
		case ins.IsFunctionCall() || ins.IsLoadOfFunctionPointer():
			return false
		case op.Class() == asm.LdClass && (op.Mode() == asm.AbsMode || op.Mode() == asm.IndMode):
			return false
		case isBranch(op) && !labels[ins.Reference()]:
			return false
		}
	}
	return true
}

// isBranch reports whether op is a jump to a label: conditional or not,
// neither a call nor an exit.
func isBranch(op asm.OpCode) bool {
	if !isJump(op) {
		return false
	}
	j := op.JumpOp()
	return j != asm.Call && j != asm.Exit
}

// isUnconditional reports whether execution never falls through op.
func isUnconditional(op asm.OpCode) bool {
	return isJump(op) && (op.JumpOp() == asm.Ja || op.JumpOp() == asm.Exit)
}

// refCounts counts the branches to each label.
func refCounts(insns asm.Instructions) map[string]int {
	refs := map[string]int{}
	for _, ins := range insns {
		if isBranch(ins.OpCode) {
			refs[ins.Reference()]++
		}
	}
	return refs
}

// entered reports whether a branch enters ins.
func entered(ins asm.Instruction, refs map[string]int) bool {
	return ins.Symbol() != "" && refs[ins.Symbol()] > 0
}

// removeAll deletes the instructions drop marks, in one pass over the
// program whatever their number: a deleted instruction's label goes to
// the next instruction kept or, when that has a label of its own, the
// branches to it are pointed there. The last instruction of a program is
// never removed with a label a branch names: no reachable one is. The
// program is compacted in place.
func removeAll(insns asm.Instructions, drop []bool) asm.Instructions {
	var waiting []string        // labels of deleted instructions, for the next kept one
	var alias map[string]string // a deleted label -> the kept instruction's
	out := insns[:0]
	for i, ins := range insns {
		if drop[i] {
			if s := ins.Symbol(); s != "" {
				waiting = append(waiting, s)
			}
			continue
		}
		if len(waiting) > 0 {
			to := ins.Symbol()
			if to == "" {
				to, waiting = waiting[0], waiting[1:]
				ins = ins.WithSymbol(to)
			}
			for _, s := range waiting {
				if alias == nil {
					alias = map[string]string{}
				}
				alias[s] = to
			}
			waiting = waiting[:0]
		}
		out = append(out, ins)
	}
	for k := range out {
		if to, ok := alias[out[k].Reference()]; ok && isBranch(out[k].OpCode) {
			out[k] = out[k].WithReference(to)
		}
	}
	return out
}

// dropJumpsToNext removes branches whose target is the next instruction:
// both of their ways lead to the same place.
func dropJumpsToNext(insns asm.Instructions) asm.Instructions {
	drop := make([]bool, len(insns))
	for i := 0; i+1 < len(insns); i++ {
		drop[i] = isBranch(insns[i].OpCode) && insns[i].Reference() == insns[i+1].Symbol()
	}
	return removeAll(insns, drop)
}

// foldConstantJumps decides a conditional jump on a register that the
// instruction just before it (which no branch enters between) set to a
// constant: taken, it becomes a Ja; never taken, it goes.
func foldConstantJumps(insns asm.Instructions) asm.Instructions {
	refs := refCounts(insns)
	drop := make([]bool, len(insns))
	for i := 1; i < len(insns); i++ {
		set, j := insns[i-1], insns[i]
		if entered(j, refs) || !isConstantMov(set) || !isBranch(j.OpCode) || j.OpCode.JumpOp() == asm.Ja ||
			j.OpCode.Source() != asm.ImmSource || j.Dst != set.Dst {
			continue
		}
		taken, ok := decide(j.OpCode, set.Constant, j.Constant)
		if !ok {
			continue
		}
		if taken {
			insns[i] = asm.Ja.Label(j.Reference()).WithSymbol(j.Symbol())
		} else {
			drop[i] = true
		}
	}
	return removeAll(insns, drop)
}

// isConstantMov reports whether ins is a 64-bit move of an immediate.
func isConstantMov(ins asm.Instruction) bool {
	op := ins.OpCode
	return op.Class() == asm.ALU64Class && op.ALUOp() == asm.Mov && op.Source() == asm.ImmSource
}

// decide evaluates a 64-bit equality jump on a register holding v against
// the immediate imm; other jumps are left undecided.
func decide(op asm.OpCode, v, imm int64) (taken, ok bool) {
	if op.Class() != asm.JumpClass {
		return false, false
	}
	switch op.JumpOp() {
	case asm.JEq:
		return v == imm, true
	case asm.JNE:
		return v != imm, true
	}
	return false, false
}

// dropUnreachable removes what no path from the first instruction reaches.
func dropUnreachable(insns asm.Instructions) asm.Instructions {
	if len(insns) == 0 {
		return insns
	}
	at := labelIndex(insns)
	seen := make([]bool, len(insns))
	stack := []int{0}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if i >= len(insns) || seen[i] {
			continue
		}
		seen[i] = true
		op := insns[i].OpCode
		if isBranch(op) {
			stack = append(stack, at[insns[i].Reference()])
		}
		if !isUnconditional(op) {
			stack = append(stack, i+1)
		}
	}
	out := insns[:0]
	for i, ins := range insns {
		if seen[i] {
			out = append(out, ins)
		}
	}
	return out
}

// labelIndex maps each label to its instruction.
func labelIndex(insns asm.Instructions) map[string]int {
	at := map[string]int{}
	for i, ins := range insns {
		if s := ins.Symbol(); s != "" {
			at[s] = i
		}
	}
	return at
}

// dropRepeatedChecks removes a bounds check or a load-and-compare that
// repeats one the straight path to it already passed, when the register
// it writes is dead after it.
//
// One pass decides every removal on the program as it was: removing a
// check removes reads and a write of a register dead after it, so
// liveness only shrinks and branch counts only fall, which can only allow
// more (the next round of shorten finds those); and a check repeating
// one that goes too repeats what that one repeated, on a straight path.
func dropRepeatedChecks(insns asm.Instructions) asm.Instructions {
	refs := refCounts(insns)
	drop := make([]bool, len(insns))
	var live []regs // computed when first needed
	for j := 0; j < len(insns); j++ {
		n := checkLen(insns, j)
		if n == 0 || !repeated(insns, refs, j, n) {
			continue
		}
		if live == nil {
			live = liveness(insns)
		}
		if j+n < len(insns) && live[j+n]&regBit(insns[j].Dst) != 0 {
			continue
		}
		for k := j; k < j+n; k++ {
			drop[k] = true
		}
		j += n - 1
	}
	return removeAll(insns, drop)
}

// checkLen returns the length of the check starting at j: 3 for a bounds
// check (R0 = base; R0 += n; if R0 > R6 goto miss), 2 for a load and
// compare (rX = *(base+off); if rX != imm goto miss), 0 for neither.
func checkLen(insns asm.Instructions, j int) int {
	if j+2 < len(insns) && isBounds(insns[j:j+3]) {
		return 3
	}
	if j+1 < len(insns) && isLoadCompare(insns[j:j+2]) {
		return 2
	}
	return 0
}

// isBounds reports whether c is boundsTo's check: R0 = base; R0 += n; if
// R0 > R6 goto miss.
func isBounds(c asm.Instructions) bool {
	mov, add, jgt := c[0], c[1], c[2]
	return mov.OpCode == asm.Mov.Op(asm.RegSource) && mov.Dst == asm.R0 && mov.Src != asm.R0 &&
		add.OpCode == asm.Add.Op(asm.ImmSource) && add.Dst == asm.R0 && add.Constant >= 0 &&
		jgt.OpCode == asm.JGT.Op(asm.RegSource) && jgt.Dst == asm.R0 && jgt.Src == DataEndRegister
}

// isLoadCompare reports whether c loads a field and jumps when it differs
// from an immediate, as etherTypeIs and byteIs do.
func isLoadCompare(c asm.Instructions) bool {
	ld, jne := c[0], c[1]
	return ld.OpCode.Class() == asm.LdXClass && ld.OpCode.Mode() == asm.MemMode && ld.Dst != ld.Src &&
		isJump(jne.OpCode) && jne.OpCode.JumpOp() == asm.JNE && jne.OpCode.Source() == asm.ImmSource && jne.Dst == ld.Dst
}

// repeated reports whether the n-instruction check at j repeats an earlier
// one on the straight path to it; refs are refCounts(insns).
func repeated(insns asm.Instructions, refs map[string]int, j, n int) bool {
	for k := j; k+1 < j+n; k++ {
		if entered(insns[k+1], refs) {
			return false // a branch into the middle of the check
		}
	}
	base := insns[j].Src
	for k := j - 1; k >= 0; k-- {
		if entered(insns[k+1], refs) {
			return false
		}
		ins := insns[k]
		op := ins.OpCode
		if isUnconditional(op) || (isJump(op) && op.JumpOp() == asm.Call) || isStore(op) {
			return false
		}
		if writesDst(ins) && (ins.Dst == base || ins.Dst == DataEndRegister) {
			return false
		}
		if k+n > j {
			continue // an earlier check must end before this one starts
		}
		switch n {
		case 3:
			if isBounds(insns[k:k+3]) && insns[k].Src == base && insns[k+1].Constant >= insns[j+1].Constant {
				return true
			}
		case 2:
			if isLoadCompare(insns[k:k+2]) && insns[k].Src == base && insns[k].OpCode == insns[j].OpCode &&
				insns[k].Offset == insns[j].Offset && insns[k+1].OpCode == insns[j+1].OpCode &&
				insns[k+1].Constant == insns[j+1].Constant {
				return true
			}
		}
	}
	return false
}

// dropDeadWrites removes ALU instructions and loads whose register is not
// read before it is written again on every path after them.
//
// Removing a write removes no read, so everything one liveness pass finds
// dead stays dead, and goes at once.
func dropDeadWrites(insns asm.Instructions) asm.Instructions {
	for {
		live := liveness(insns)
		drop := make([]bool, len(insns))
		dead := false
		for i := range insns {
			drop[i] = pure(insns[i]) && (i+1 >= len(live) || live[i+1]&regBit(insns[i].Dst) == 0)
			dead = dead || drop[i]
		}
		if !dead {
			return insns
		}
		insns = removeAll(insns, drop)
	}
}

// pure reports whether ins only writes its destination register: an ALU
// instruction or a load from memory (which the verifier has proven safe,
// so dropping it changes nothing else).
func pure(ins asm.Instruction) bool {
	switch c := ins.OpCode.Class(); c {
	case asm.ALUClass, asm.ALU64Class:
		return ins.Dst != asm.R10
	case asm.LdXClass:
		return ins.OpCode.Mode() == asm.MemMode || ins.OpCode.Mode() == asm.MemSXMode
	}
	return false
}

// regs is a set of registers R0-R10, one bit each.
type regs uint16

func regBit(r asm.Register) regs {
	if r > asm.R10 {
		return 0
	}
	return 1 << r
}

const argRegs = regs(1<<asm.R1 | 1<<asm.R2 | 1<<asm.R3 | 1<<asm.R4 | 1<<asm.R5)

// uses returns the registers ins may read and the registers it surely
// writes: more reads or fewer writes than the truth only keep more
// instructions.
func uses(ins asm.Instruction) (read, write regs) {
	op := ins.OpCode
	switch op.Class() {
	case asm.ALUClass, asm.ALU64Class:
		if op.ALUOp() != asm.Mov {
			read |= regBit(ins.Dst)
		}
		if op.Source() == asm.RegSource && op.ALUOp() != asm.Neg && op.ALUOp() != asm.Swap {
			read |= regBit(ins.Src)
		}
		return read, regBit(ins.Dst)
	case asm.LdXClass:
		return regBit(ins.Src), regBit(ins.Dst)
	case asm.LdClass:
		return 0, regBit(ins.Dst)
	case asm.StClass:
		return regBit(ins.Dst), 0
	case asm.StXClass:
		if op.Mode() == asm.AtomicMode {
			// Which register an atomic writes depends on its kind
			// (Src for a fetch, R0 for a compare-exchange, Dst for a
			// load-acquire): say it reads all three and writes none,
			// which can only keep more alive.
			return regBit(ins.Dst) | regBit(ins.Src) | regBit(asm.R0), 0
		}
		return regBit(ins.Dst) | regBit(ins.Src), 0
	}
	switch op.JumpOp() {
	case asm.Exit:
		return regBit(asm.R0), 0
	case asm.Call:
		return callArgs(ins), argRegs | regBit(asm.R0)
	case asm.Ja:
		return 0, 0
	}
	read = regBit(ins.Dst)
	if op.Source() == asm.RegSource {
		read |= regBit(ins.Src)
	}
	return read, 0
}

// callArgs returns the registers a call reads: the arguments of the
// helpers the programs here call, all five for any other call.
func callArgs(ins asm.Instruction) regs {
	if !ins.IsBuiltinCall() {
		return argRegs
	}
	n := 5
	switch asm.BuiltinFunc(ins.Constant) {
	case asm.FnKtimeGetNs:
		n = 0
	case asm.FnMapLookupElem, asm.FnXdpAdjustHead, asm.FnXdpAdjustMeta:
		n = 2
	case asm.FnRedirectMap:
		n = 3
	}
	return argRegs & (1<<(n+1) - 1)
}

// liveness returns, for each instruction, the registers live on entry to
// it: read on some path from it before being written.
func liveness(insns asm.Instructions) []regs {
	at := labelIndex(insns)
	in := make([]regs, len(insns)+1)
	for changed := true; changed; {
		changed = false
		for i := len(insns) - 1; i >= 0; i-- {
			read, write := uses(insns[i])
			if v := read | liveAfter(insns, in, at, i)&^write; v != in[i] {
				in[i] = v
				changed = true
			}
		}
	}
	return in[:len(insns)]
}

// sameReferences reports whether out still holds every map load and call
// before did, and refers to every non-branch symbol (a map, a kfunc)
// before referred to.
func sameReferences(before, out asm.Instructions) bool {
	count := func(insns asm.Instructions) (refs map[string]int, loads, calls int) {
		refs = map[string]int{}
		for _, ins := range insns {
			if r := ins.Reference(); r != "" && !isBranch(ins.OpCode) {
				refs[r]++
			}
			switch {
			case ins.OpCode.Class() == asm.LdClass:
				loads++
			case isJump(ins.OpCode) && ins.OpCode.JumpOp() == asm.Call:
				calls++
			}
		}
		return refs, loads, calls
	}
	r1, l1, c1 := count(before)
	r2, l2, c2 := count(out)
	if l1 != l2 || c1 != c2 {
		return false
	}
	for r := range r1 {
		if r2[r] == 0 {
			return false
		}
	}
	return true
}
