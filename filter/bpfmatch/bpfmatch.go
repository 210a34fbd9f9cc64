package bpfmatch

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf/asm"
	"golang.org/x/net/bpf"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
)

// MaxInstructions is the longest classic program Compile accepts: the
// kernel's BPF_MAXINSNS.
const MaxInstructions = 4096

// maxBlock caps the eBPF translation of one program. Jumps inside the
// block, and to the labels after it (the next match, the redirect tail at
// the end of the program), have 16-bit offsets, which cilium/ebpf
// truncates silently when they overflow: a block this size leaves half the
// range for the rest of the filter program.
const maxBlock = 16 << 10

// Match returns the match for the classic BPF program insns: a packet matches
// when the program returns a nonzero value. label names the rule in
// Fleet.Info and in errors and has no effect on matching; an empty label
// becomes "bpf(N insns)". A program Compile refuses gives a match that
// carries the error, which Open (and filter.NewClassifier) then reports.
func Match(label string, insns []bpf.Instruction) filter.Match {
	m, err := Compile(label, insns)
	if err != nil {
		return filter.MatchError(name(label, insns), err)
	}
	return m
}

// Compile is Match with the error returned: it validates and translates
// insns now, so that a program that cannot run in XDP is refused here, with
// an *Error saying which instruction and why.
func Compile(label string, insns []bpf.Instruction) (filter.Match, error) {
	p, err := translate(insns)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Label = name(label, insns)
		}
		return filter.Match{}, err
	}
	return filter.NewMatch(name(label, insns), p.emit), nil
}

func name(label string, insns []bpf.Instruction) string {
	if label != "" {
		return label
	}
	return fmt.Sprintf("bpf(%d insns)", len(insns))
}

// Error is why Compile refused a program.
type Error struct {
	// Label is the match's label.
	Label string
	// Index is the offending instruction, or -1 when the problem is the
	// program as a whole (empty, too long).
	Index int
	// Instruction is the offending instruction, as given, when Index is
	// not -1.
	Instruction bpf.Instruction
	// Reason says what is wrong, in words.
	Reason string

	err error
}

// Error formats the refusal as "bpfmatch: LABEL: instruction I (INSN):
// REASON".
func (e *Error) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("bpfmatch: %s: %s", e.Label, e.Reason)
	}
	return fmt.Sprintf("bpfmatch: %s: instruction %d (%s): %s", e.Label, e.Index, insnString(e.Instruction), e.Reason)
}

// Unwrap returns packetio.ErrUnsupported when the program is valid classic
// BPF that XDP cannot run (ancillary loads, metadata offsets, length), and
// nil when the program itself is malformed.
func (e *Error) Unwrap() error { return e.err }

func insnString(ins bpf.Instruction) (s string) {
	defer func() {
		if r := recover(); r != nil {
			s = fmt.Sprintf("%T", ins)
		}
	}()
	if st, ok := ins.(fmt.Stringer); ok {
		return st.String()
	}
	return fmt.Sprintf("%#v", ins)
}

func malformed(i int, ins bpf.Instruction, format string, args ...any) error {
	return &Error{Index: i, Instruction: ins, Reason: fmt.Sprintf(format, args...)}
}

func unsupported(i int, ins bpf.Instruction, format string, args ...any) error {
	return &Error{Index: i, Instruction: ins, Reason: fmt.Sprintf(format, args...), err: packetio.ErrUnsupported}
}

// Registers of the translation. R0 is scratch for bounds checks (MatchEnv
// uses it too) and R1 for far absolute loads.
const (
	regA   = asm.R2 // the accumulator
	regX   = asm.R3 // the index register
	regTmp = asm.R4 // X, bounded, for an indirect load
	regPtr = asm.R5 // the packet pointer of an indirect load
	regFar = asm.R1 // the packet pointer of an absolute load beyond int16
)

// scratchOffset is where M[n] lives, from R10.
func scratchOffset(n int) int16 { return int16(-4 * (n + 1)) }
