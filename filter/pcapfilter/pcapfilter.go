package pcapfilter

import (
	"fmt"
	"strings"

	"golang.org/x/net/bpf"

	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/filter/bpfmatch"
)

// Compile compiles a tcpdump filter expression to classic BPF, with
// libpcap's semantics for a dead DLT_EN10MB (Ethernet) handle: what
// tcpdump -ddd prints for it, up to instruction order and layout (the
// programs differ; the verdicts do not). The empty expression matches
// every packet. Errors are *Error, with the column of the problem.
func Compile(expr string) ([]bpf.Instruction, error) {
	insns, _, err := compileFolds(expr)
	return insns, err
}

// compileFolds is Compile, with the folds that dropped operands.
func compileFolds(expr string) ([]bpf.Instruction, []folded, error) {
	root, folds, err := parse(expr)
	if err != nil {
		return nil, nil, err
	}
	insns, err := generate(root)
	if err != nil {
		return nil, nil, &Error{Expr: expr, Msg: err.Error()}
	}
	if len(insns) > bpfmatch.MaxInstructions {
		return nil, nil, &Error{Expr: expr, Msg: fmt.Sprintf("the program is %d instructions, more than the %d classic BPF allows", len(insns), bpfmatch.MaxInstructions), unsupported: true}
	}
	return insns, folds, nil
}

// Match returns the match for expr: Compile, then bpfmatch. An expression
// that does not compile gives a match carrying the error, which Open (and
// filter.NewClassifier) reports. The match is named after the expression in
// Fleet.Info.
func Match(expr string) filter.Match {
	m, err := CompileMatch(expr)
	if err != nil {
		return filter.MatchError(matchName(expr), err)
	}
	return m
}

// CompileMatch is Match with the error returned: an *Error when the
// expression is wrong or uses what this package does not implement, a
// *bpfmatch.Error if the program cannot run in XDP.
//
// An empty (or all-blank) expression is refused with an error wrapping
// packetio.ErrInvalid: tcpdump reads it as "every packet", and a match
// that silently takes every packet from the kernel (SSH and ARP included)
// is never what an empty string in a configuration meant. Take everything
// on purpose with filter.MatchAll().
func CompileMatch(expr string) (filter.Match, error) {
	if strings.TrimSpace(expr) == "" {
		return filter.Match{}, &Error{Expr: expr, Msg: "empty expression: tcpdump takes every packet for it; use filter.MatchAll() to take everything on purpose", invalid: true}
	}
	insns, err := Compile(expr)
	if err != nil {
		return filter.Match{}, err
	}
	m, err := bpfmatch.Compile(matchName(expr), insns)
	if err != nil {
		return filter.Match{}, fmt.Errorf("pcapfilter: %q: %w", expr, err)
	}
	return m, nil
}

func matchName(expr string) string {
	if strings.TrimSpace(expr) == "" {
		return "pcap (empty expression)"
	}
	return expr
}
