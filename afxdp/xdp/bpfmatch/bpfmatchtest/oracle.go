package bpfmatchtest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/net/bpf"

	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/internal/testenv"
)

// Oracle runs a classic BPF program in golang.org/x/net/bpf's VM, the
// reference the translations are checked against.
type Oracle struct {
	vm *bpf.VM
}

// NewOracle prepares insns for the VM. The VM does not implement NegateA;
// the Oracle runs each one as the equivalent A = (A ^ 0xffffffff) + 1,
// moving jumps to match, so that every program bpfmatch accepts has a
// reference verdict. Raw instructions are disassembled first.
func NewOracle(insns []bpf.Instruction) (*Oracle, error) {
	prog, err := expandNeg(insns)
	if err != nil {
		return nil, err
	}
	vm, err := bpf.NewVM(prog)
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

func expandNeg(insns []bpf.Instruction) ([]bpf.Instruction, error) {
	dis := make([]bpf.Instruction, len(insns))
	where := make([]int, len(insns)+1) // old index -> new index
	n := 0
	for i, ins := range insns {
		if raw, ok := ins.(bpf.RawInstruction); ok {
			ins = raw.Disassemble()
		}
		dis[i] = ins
		where[i] = n
		if _, ok := ins.(bpf.NegateA); ok {
			n += 2
		} else {
			n++
		}
	}
	where[len(insns)] = n
	if n == len(insns) {
		return dis, nil
	}
	skip := func(i int, s uint32) (uint32, bool) {
		t := i + 1 + int(s)
		if t > len(insns) {
			return s, true // out of range: the VM reports it
		}
		return uint32(where[t] - where[i] - 1), true
	}
	out := make([]bpf.Instruction, 0, n)
	for i, ins := range dis {
		switch j := ins.(type) {
		case bpf.NegateA:
			out = append(out, bpf.ALUOpConstant{Op: bpf.ALUOpXor, Val: 0xffffffff}, bpf.ALUOpConstant{Op: bpf.ALUOpAdd, Val: 1})
			continue
		case bpf.Jump:
			j.Skip, _ = skip(i, j.Skip)
			ins = j
		case bpf.JumpIf:
			t, _ := skip(i, uint32(j.SkipTrue))
			f, _ := skip(i, uint32(j.SkipFalse))
			if t > 255 || f > 255 {
				return nil, fmt.Errorf("bpfmatchtest: cannot expand NegateA: a jump at %d would exceed 255", i)
			}
			j.SkipTrue, j.SkipFalse = uint8(t), uint8(f)
			ins = j
		case bpf.JumpIfX:
			t, _ := skip(i, uint32(j.SkipTrue))
			f, _ := skip(i, uint32(j.SkipFalse))
			if t > 255 || f > 255 {
				return nil, fmt.Errorf("bpfmatchtest: cannot expand NegateA: a jump at %d would exceed 255", i)
			}
			j.SkipTrue, j.SkipFalse = uint8(t), uint8(f)
			ins = j
		}
		out = append(out, ins)
	}
	return out, nil
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
func Classifier(t testing.TB, opts ...xdp.Option) *xdp.Classifier {
	t.Helper()
	c, err := LoadClassifier(t, opts...)
	if err != nil {
		if xdp.IsVerifierError(err) {
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
func LoadClassifier(t testing.TB, opts ...xdp.Option) (*xdp.Classifier, error) {
	t.Helper()
	testenv.NeedBPF(t)
	_ = rlimit.RemoveMemlock()
	WaitLoad()
	return xdp.NewClassifier(opts...)
}
