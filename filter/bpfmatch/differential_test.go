package bpfmatch

import (
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"testing"

	"golang.org/x/net/bpf"

	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/filter/bpfmatch/bpfmatchtest"
)

// differ runs every frame through prog in the reference VM and in the
// kernel (one classifier for the program) and reports each disagreement.
// It returns the number of comparisons and of matches.
func differ(t *testing.T, p named, frames []bpfmatchtest.Frame, frags ...bool) (n, matched int) {
	t.Helper()
	m, err := Compile(p.name, p.insns)
	if err != nil {
		t.Errorf("%s: Compile: %v%s", p.name, err, listing(p.insns))
		return 0, 0
	}
	oracle, err := bpfmatchtest.NewOracle(p.insns)
	if err != nil {
		t.Errorf("%s: %v", p.name, err)
		return 0, 0
	}
	c := bpfmatchtest.Classifier(t, filter.Program{Matches: []filter.Match{m}, Frags: len(frags) > 0 && frags[0]})
	defer c.Close()
	bad := 0
	for _, f := range frames {
		want, err := oracle.Match(f.Data)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		got, err := c.Match(f.Data)
		if err != nil {
			t.Fatalf("%s: %s: %v", p.name, f.Name, err)
		}
		if want {
			matched++
		}
		if got != want {
			bad++
			if bad <= 3 {
				t.Errorf("%s: frame %q: kernel says %v, the reference VM %v%s\n\tframe %s", p.name, f.Name, got, want, listing(p.insns), hex.EncodeToString(f.Data))
			}
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d disagreements in all", p.name, bad)
	}
	return len(frames), matched
}

// TestDifferential compares the kernel's verdict with the reference VM's
// for the hand-written programs and those libpcap compiled, on every frame
// of the corpus.
func TestDifferential(t *testing.T) {
	frames := bpfmatchtest.Frames()
	progs := append(handPrograms(), pcapCorpus(t)...)
	n, hits := 0, 0
	for _, p := range progs {
		c, m := differ(t, p, frames)
		n, hits = n+c, hits+m
	}
	t.Logf("%d programs x %d frames: %d comparisons, %d matches", len(progs), len(frames), n, hits)
}

// TestDifferentialRandom does the same for seeded random programs.
func TestDifferentialRandom(t *testing.T) {
	count := 300
	if testing.Short() {
		count = 50
	}
	frames := bpfmatchtest.Frames()
	s := &source{rng: rand.New(rand.NewPCG(1, 2))}
	n, hits := 0, 0
	for i := range count {
		c, m := differ(t, named{name: fmt.Sprintf("random %d", i), insns: randomProgram(s)}, frames)
		n, hits = n+c, hits+m
	}
	t.Logf("%d random programs x %d frames: %d comparisons, %d matches", count, len(frames), n, hits)
	if hits < n/10 || hits > n*9/10 {
		t.Errorf("%d of %d comparisons matched: the generator is too one-sided to test much", hits, n)
	}
}

// TestDifferentialMultiBuffer loads the libpcap corpus with frags, as Open
// does with WithMultiBuffer: the verdicts must not change.
func TestDifferentialMultiBuffer(t *testing.T) {
	frames := bpfmatchtest.Frames()
	n := 0
	for _, p := range pcapCorpus(t) {
		c, _ := differ(t, p, frames, true)
		n += c
	}
	t.Logf("with frags: %d comparisons", n)
}

// TestRawAndTyped checks that a program as raw instructions and the same
// program disassembled give the same match.
func TestRawAndTyped(t *testing.T) {
	frames := bpfmatchtest.Frames()
	for _, p := range pcapCorpus(t)[:4] {
		typed := make([]bpf.Instruction, len(p.insns))
		for i, ins := range p.insns {
			typed[i] = ins.(bpf.RawInstruction).Disassemble()
		}
		raw, typ := mustCompile(t, p.name, p.insns), mustCompile(t, p.name, typed)
		cr := bpfmatchtest.Classifier(t, filter.Program{Matches: []filter.Match{raw}})
		ct := bpfmatchtest.Classifier(t, filter.Program{Matches: []filter.Match{typ}})
		for _, f := range frames {
			a, err1 := cr.Match(f.Data)
			b, err2 := ct.Match(f.Data)
			if err1 != nil || err2 != nil || a != b {
				t.Fatalf("%s: %s: raw %v (%v), typed %v (%v)", p.name, f.Name, a, err1, b, err2)
			}
		}
	}
}

func mustCompile(t *testing.T, label string, insns []bpf.Instruction) filter.Match {
	t.Helper()
	m, err := Compile(label, insns)
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	return m
}
