package cbpf

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// asm collects instructions with symbolic jump targets and resolves them
// into the forward skips classic BPF has.
type asm struct {
	insns  []bpf.Instruction
	jumps  map[int][2]string // instruction index -> true, false target ("" falls through)
	labels map[string]int    // label -> index of the instruction it names
	n      int               // counter for local labels
}

func (a *asm) emit(i bpf.Instruction) { a.insns = append(a.insns, i) }

// label names the next instruction.
func (a *asm) label(name string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	a.labels[name] = len(a.insns)
}

// local returns a fresh label.
func (a *asm) local(name string) string {
	a.n++
	return fmt.Sprintf("l%d_%s", a.n, name)
}

// jump emits a conditional jump (JumpIf or JumpIfX) to t when the
// condition holds and to f when not; "" falls through.
func (a *asm) jump(i bpf.Instruction, t, f string) {
	if a.jumps == nil {
		a.jumps = map[int][2]string{}
	}
	a.jumps[len(a.insns)] = [2]string{t, f}
	a.emit(i)
}

func (a *asm) jeq(v uint32, to string) {
	a.jump(bpf.JumpIf{Cond: bpf.JumpEqual, Val: v}, to, "")
}

func (a *asm) jne(v uint32, to string) {
	a.jump(bpf.JumpIf{Cond: bpf.JumpNotEqual, Val: v}, to, "")
}

func (a *asm) jlt(v uint32, to string) {
	a.jump(bpf.JumpIf{Cond: bpf.JumpLessThan, Val: v}, to, "")
}

// assemble resolves the labels. Classic BPF jumps forward only, by at most
// 255 instructions; a longer conditional jump goes through a Jump.
func (a *asm) assemble() ([]bpf.Instruction, error) {
	skip := func(i int, to string) (uint8, error) {
		if to == "" {
			return 0, nil
		}
		t, ok := a.labels[to]
		if !ok {
			return 0, fmt.Errorf("label %q undefined", to)
		}
		d := t - i - 1
		if d < 0 || d > 255 {
			return 0, fmt.Errorf("jump to %q spans %d instructions", to, d)
		}
		return uint8(d), nil
	}
	out := make([]bpf.Instruction, len(a.insns))
	for i, ins := range a.insns {
		tf, ok := a.jumps[i]
		if !ok {
			out[i] = ins
			continue
		}
		st, err := skip(i, tf[0])
		if err != nil {
			return nil, err
		}
		sf, err := skip(i, tf[1])
		if err != nil {
			return nil, err
		}
		switch j := ins.(type) {
		case bpf.JumpIf:
			j.SkipTrue, j.SkipFalse = st, sf
			out[i] = j
		case bpf.JumpIfX:
			j.SkipTrue, j.SkipFalse = st, sf
			out[i] = j
		case bpf.Jump:
			j.Skip = uint32(st)
			out[i] = j
		}
	}
	return out, nil
}
