package bpfmatchtest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/net/bpf"

	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/testenv"
)

// Oracle runs a classic BPF program in golang.org/x/net/bpf's VM, the
// reference the translations are checked against.
type Oracle struct {
	vm *bpf.VM
}

// NewOracle prepares insns for the VM. The VM does not implement NegateA;
// the Oracle runs each one as A = A * 0xffffffff, the same in 32-bit
// arithmetic (A * (2^32 - 1) is -A modulo 2^32) and one instruction for
// one, so no jump moves and every program bpfmatch accepts has a
// reference verdict. Raw instructions are disassembled first.
func NewOracle(insns []bpf.Instruction) (*Oracle, error) {
	vm, err := bpf.NewVM(withoutNeg(insns))
	if err != nil {
		return nil, fmt.Errorf("bpfmatchtest: the reference VM refuses the program: %w", err)
	}
	return &Oracle{vm: vm}, nil
}

// Match runs frame through the program: true when it returns nonzero.
func (o *Oracle) Match(frame []byte) (bool, error) {
	n, err := o.vm.Run(frame)
	if err != nil {
		return false, fmt.Errorf("bpfmatchtest: the reference VM: %w", err)
	}
	return n != 0, nil
}

// withoutNeg disassembles insns and replaces each NegateA with the
// multiplication by 0xffffffff that computes it.
func withoutNeg(insns []bpf.Instruction) []bpf.Instruction {
	out := make([]bpf.Instruction, len(insns))
	for i, ins := range insns {
		if raw, ok := ins.(bpf.RawInstruction); ok {
			ins = raw.Disassemble()
		}
		if _, ok := ins.(bpf.NegateA); ok {
			ins = bpf.ALUOpConstant{Op: bpf.ALUOpMul, Val: 0xffffffff}
		}
		out[i] = ins
	}
	return out
}

// Loads per second, process-wide. Loading and freeing BPF programs in a
// tight loop has deadlocked this kernel's BPF program allocator; every test
// and fuzz target that loads programs goes through WaitLoad.
const loadsPerSecond = 100

var (
	tickOnce sync.Once
	tick     *time.Ticker
)

// WaitLoad blocks until the process may load another BPF program: at most
// 100 a second, shared by every goroutine of the test binary.
func WaitLoad() {
	tickOnce.Do(func() { tick = time.NewTicker(time.Second / loadsPerSecond) })
	<-tick.C
}

// Classifier loads the filter opts describe, for a test: it waits its turn
// (WaitLoad), stops the test if the machine cannot load BPF
// (testenv.NeedBPF, a failure under PACKETIO_CONFORM_REQUIRED), fails it on
// a verifier rejection (printing the verifier's listing), and closes the
// classifier when the test ends.
func Classifier(t testing.TB, p filter.Program) *filter.Classifier {
	t.Helper()
	c, err := LoadClassifier(t, p)
	if err != nil {
		if filter.IsVerifierError(err) {
			t.Fatalf("the verifier refused the filter: %+v", err)
		}
		t.Fatalf("load the filter: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// LoadClassifier is Classifier for callers that handle the error and close
// the classifier themselves (a fuzz target loading one per input). It still
// stops the test when BPF cannot be loaded here.
func LoadClassifier(t testing.TB, p filter.Program) (*filter.Classifier, error) {
	t.Helper()
	testenv.NeedBPF(t)
	_ = rlimit.RemoveMemlock()
	WaitLoad()
	return filter.NewClassifier(p)
}
