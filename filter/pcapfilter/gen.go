package pcapfilter

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"golang.org/x/net/bpf"
)

// Return values: libpcap's snapshot length on the dead handle for a match.
const (
	retMatch = 65535
	retNone  = 0
)

// farOffset replaces absolute offsets of 2^31 and beyond: no packet
// reaches them, as none reaches 0x7fffffff, but classic BPF consumers
// (Linux, bpfmatch) read them as socket-buffer metadata.
const farOffset = 0x7fffffff

// The tree becomes a graph of tests (each leaf once, its two outcomes
// pointing at the tests that follow), whose jumps are then threaded past
// tests with known outcomes, as libpcap's optimiser does, and laid out.
type node struct {
	leaf   *bLeaf
	jt, jf *node
	final  bool // a return: match when yes
	yes    bool
	id     int
}

var (
	matchNode = &node{final: true, yes: true}
	noneNode  = &node{final: true}
)

// build links the tests of n: on to t when n holds, to f when not.
func build(n bnode, t, f *node) (*node, error) {
	switch n := n.(type) {
	case bAnd:
		r, err := build(n.r, t, f)
		if err != nil {
			return nil, err
		}
		return build(n.l, r, f)
	case bOr:
		r, err := build(n.r, t, f)
		if err != nil {
			return nil, err
		}
		return build(n.l, t, r)
	case bNot:
		return build(n.x, f, t)
	case bConst:
		if n {
			return t, nil
		}
		return f, nil
	case *bRel:
		// A value that cannot be computed is an error only if the
		// test survives optimisation, as in libpcap.
		l, err := relLeaf(n)
		if err != nil {
			// If the error is excused, the test's outcome does not
			// matter: it compares a constant, to give it one.
			l = &bLeaf{err: err, stmts: []bpf.Instruction{bpf.LoadConstant{Dst: bpf.RegA}}, cond: bpf.JumpEqual, clobX: true}
		}
		return &node{leaf: l, jt: t, jf: f}, nil
	case *bLeaf:
		return &node{leaf: n, jt: t, jf: f}, nil
	}
	return nil, fmt.Errorf("internal error: unknown node %T", n)
}

// order lists the tests reachable from root so that every edge points
// forward, and numbers them.
func order(root *node) []*node {
	var post []*node
	seen := map[*node]bool{}
	var visit func(n *node)
	visit = func(n *node) {
		if n.final || seen[n] {
			return
		}
		seen[n] = true
		visit(n.jf)
		visit(n.jt)
		post = append(post, n)
	}
	visit(root)
	for i, j := 0, len(post)-1; i < j; i, j = i+1, j-1 {
		post[i], post[j] = post[j], post[i]
	}
	for i, n := range post {
		n.id = i
	}
	return post
}

// clone copies the graph from root.
func clone(root *node) *node {
	copies := map[*node]*node{matchNode: matchNode, noneNode: noneNode}
	var cp func(n *node) *node
	cp = func(n *node) *node {
		if c, ok := copies[n]; ok {
			return c
		}
		c := &node{leaf: n.leaf}
		copies[n] = c
		c.jt, c.jf = cp(n.jt), cp(n.jf)
		return c
	}
	return cp(root)
}

// maxOptimise bounds the optimiser's work (it is quadratic); bigger
// programs are laid out as built.
const maxOptimise = 1000

// optimise removes tests whose outcome is already known on every path into
// them (libpcap's jump threading: the field was tested before with the
// same comparison, or found equal to another constant). That changes no
// verdict, since the field was loaded on the way. With skipSame it also
// removes tests whose two outcomes lead to the same place, with their
// loads, as libpcap's optimiser does; that does change verdicts (a short
// packet that would fail such a load no longer does), so the program is
// built without it and it only decides which errors stand. It repeats
// until nothing changes and returns the new root.
func optimise(root *node, skipSame bool) *node {
	for round := 0; round < 100; round++ {
		nodes := order(root)
		if len(nodes) == 0 || len(nodes) > maxOptimise {
			return root
		}
		changed := false
		// Tests with equal outcomes are skipped.
		skip := func(n *node) *node {
			for skipSame && !n.final && n.jt == n.jf {
				n, changed = n.jt, true
			}
			return n
		}
		root = skip(root)
		for _, n := range nodes {
			n.jt, n.jf = skip(n.jt), skip(n.jf)
		}
		if changed {
			continue
		}
		// Edge dominators: the outcomes of earlier tests that hold on
		// every path to a test.
		nodes = order(root)
		words := (2*len(nodes) + 63) / 64
		dom := make([][]uint64, len(nodes))
		for _, n := range nodes {
			for k, c := range []*node{n.jf, n.jt} {
				if c.final {
					continue
				}
				in := make([]uint64, words)
				if dom[n.id] != nil {
					copy(in, dom[n.id])
				}
				e := 2*n.id + k
				in[e/64] |= 1 << (e % 64)
				if dom[c.id] == nil {
					dom[c.id] = in
				} else {
					for w := range in {
						dom[c.id][w] &= in[w]
					}
				}
			}
		}
		for _, n := range nodes {
			for k := range 2 {
				c := n.jf
				if k == 1 {
					c = n.jt
				}
				facts := make([]uint64, words)
				if dom[n.id] != nil {
					copy(facts, dom[n.id])
				}
				e := 2*n.id + k
				facts[e/64] |= 1 << (e % 64)
				for !c.final {
					t := decided(c, facts, nodes)
					if t == nil {
						break
					}
					c, changed = t, true
				}
				if k == 1 {
					n.jt = c
				} else {
					n.jf = c
				}
			}
		}
		if !changed {
			return root
		}
	}
	return root
}

// decided returns where test c goes given the outcomes in facts (bit
// 2*id+1: test id held, 2*id: it did not), or nil if they do not tell. As
// in libpcap's fold_edge: an earlier test of the same value with the same
// comparison and constant went the same way; an earlier equality with
// another constant that held means this equality does not.
func decided(c *node, facts []uint64, nodes []*node) *node {
	l := c.leaf
	if l.key == "" || l.useX {
		return nil
	}
	for w, set := range facts {
		for set != 0 {
			b := set & -set
			set &^= b
			e := 64*w + bits.TrailingZeros64(b)
			m, held := nodes[e/2], e%2 == 1
			ml := m.leaf
			if ml.key != l.key || ml.useX || ml.cond != l.cond || m == c {
				continue
			}
			if ml.k == l.k {
				if held {
					return c.jt
				}
				return c.jf
			}
			if held && l.cond == bpf.JumpEqual {
				return c.jf
			}
		}
	}
	return nil
}

type itemKind uint8

const (
	iPlain itemKind = iota
	iCond
)

type item struct {
	kind itemKind
	ins  bpf.Instruction // iPlain
	cond bpf.JumpTest    // iCond
	k    uint32
	useX bool
	t, f int // targets, by test number; -1 match, -2 no match
}

// regs is what A and X are known to hold ("" for unknown).
type regs struct{ a, x string }

var errComplex = errors.New("the expression needs more than the 16 scratch words classic BPF has")

// relLeaf computes both sides of a comparison into A and X.
func relLeaf(r *bRel) (*bLeaf, error) {
	l := &bLeaf{cond: r.cond, clobX: true}
	var err error
	var s0, s1 []bpf.Instruction
	if c, ok := r.a1.(aConst); ok {
		l.stmts, err = value(r.a0, 0)
		l.k = c.v
		return l, err
	}
	l.useX = true
	if !clobbersX(r.a0) {
		if s1, err = value(r.a1, 0); err != nil {
			return nil, err
		}
		if s0, err = value(r.a0, 0); err != nil {
			return nil, err
		}
		l.stmts = append(append(s1, bpf.TAX{}), s0...)
		return l, nil
	}
	if s0, err = value(r.a0, 0); err != nil {
		return nil, err
	}
	if s1, err = value(r.a1, 1); err != nil {
		return nil, err
	}
	l.stmts = append(append(append(s0, bpf.StoreScratch{Src: bpf.RegA, N: 0}), s1...), bpf.TAX{}, bpf.LoadScratch{Dst: bpf.RegA, N: 0})
	return l, nil
}

// wrapsPastIHL reports whether a transport-header load at the constant
// index c can wrap back into the packet once the IPv4 header length is
// added: c is then within 60 of 2^32 (a "negative" index), and libpcap adds
// the header length to it at run time, in 32 bits, so tcp[-20] reads the
// IPv4 header's last 20 bytes. Folded into the load's offset it would not
// wrap; such a load is computed as libpcap computes it.
func wrapsPastIHL(a aLoad, c aConst) bool {
	return a.kind == ldTrans && c.v > math.MaxUint32-60
}

// value computes a into A, using M[depth] and up for intermediates.
func value(a arith, depth int) ([]bpf.Instruction, error) {
	switch a := a.(type) {
	case aConst:
		return []bpf.Instruction{bpf.LoadConstant{Dst: bpf.RegA, Val: a.v}}, nil
	case aLen:
		return []bpf.Instruction{bpf.LoadExtension{Num: bpf.ExtLen}}, nil
	case aLoad:
		if c, ok := a.idx.(aConst); ok && !wrapsPastIHL(a, c) {
			off := a.base + c.v // wraps as in libpcap's 32-bit k
			if off >= 1<<31 {
				off = farOffset
			}
			if a.kind == ldTrans {
				return []bpf.Instruction{bpf.LoadMemShift{Off: a.base}, bpf.LoadIndirect{Off: off, Size: a.size}}, nil
			}
			return []bpf.Instruction{bpf.LoadAbsolute{Off: off, Size: a.size}}, nil
		}
		s, err := value(a.idx, depth)
		if err != nil {
			return nil, err
		}
		if a.kind == ldTrans {
			s = append(s, bpf.LoadMemShift{Off: a.base}, bpf.ALUOpX{Op: bpf.ALUOpAdd})
		}
		return append(s, bpf.TAX{}, bpf.LoadIndirect{Off: a.base, Size: a.size}), nil
	case aBin:
		if c, ok := a.r.(aConst); ok {
			s, err := value(a.l, depth)
			return append(s, bpf.ALUOpConstant{Op: a.op, Val: c.v}), err
		}
		if !clobbersX(a.l) {
			s1, err := value(a.r, depth)
			if err != nil {
				return nil, err
			}
			s0, err := value(a.l, depth)
			if err != nil {
				return nil, err
			}
			return append(append(append(s1, bpf.TAX{}), s0...), bpf.ALUOpX{Op: a.op}), nil
		}
		// l, kept in M[depth] while r is computed (with the words
		// above it), so a long chain a+b+c+... needs two words.
		if depth > 15 {
			return nil, errComplex
		}
		s0, err := value(a.l, depth)
		if err != nil {
			return nil, err
		}
		s1, err := value(a.r, depth+1)
		if err != nil {
			return nil, err
		}
		s := append(s0, bpf.StoreScratch{Src: bpf.RegA, N: depth})
		s = append(s, s1...)
		return append(s, bpf.TAX{}, bpf.LoadScratch{Dst: bpf.RegA, N: depth}, bpf.ALUOpX{Op: a.op}), nil
	case aErr:
		return nil, errors.New(a.msg)
	case aNeg:
		// -A as (A ^ 0xffffffff) + 1: golang.org/x/net/bpf's VM has
		// no NegateA.
		s, err := value(a.x, depth)
		return append(s, bpf.ALUOpConstant{Op: bpf.ALUOpXor, Val: 0xffffffff}, bpf.ALUOpConstant{Op: bpf.ALUOpAdd, Val: 1}), err
	}
	return nil, fmt.Errorf("internal error: unknown value %T", a)
}

// generate turns the tree into a classic program.
func generate(root bnode) ([]bpf.Instruction, error) {
	if c, ok := root.(bConst); ok {
		if c {
			return []bpf.Instruction{bpf.RetConstant{Val: retMatch}}, nil
		}
		return nil, errors.New("expression rejects all packets")
	}
	r, err := build(root, matchNode, noneNode)
	if err != nil {
		return nil, err
	}
	// A computation libpcap's optimiser refuses is an error only if its
	// test survives that optimiser's jump threading, dropping tests whose
	// outcomes meet included. The first test always does: libpcap drops
	// a test by moving the edges into it, the first has none, and its
	// constants are folded (and refused) before the program's start is
	// moved past it.
	if !r.final && r.leaf.err != nil {
		return nil, r.leaf.err
	}
	for _, n := range order(optimise(clone(r), true)) {
		if n.leaf.err != nil {
			return nil, n.leaf.err
		}
	}
	r = optimise(r, false)
	if r.final {
		if r.yes {
			return []bpf.Instruction{bpf.RetConstant{Val: retMatch}}, nil
		}
		return nil, errors.New("expression rejects all packets")
	}
	return layout(order(r)), nil
}

// layout emits the tests in order, then the two returns. A conditional
// jump reaches 255 instructions; one whose target is further becomes
// "jxx 0, 1; ja t; ja f".
func layout(nodes []*node) []bpf.Instruction {
	// What A and X hold on entry to each test: what every edge into it
	// carries.
	in := make([]*regs, len(nodes))
	var items []item
	first := make([]int, len(nodes)+2) // first item of each test; then the two returns
	target := func(c *node) int {
		switch {
		case c == matchNode:
			return len(nodes)
		case c.final:
			return len(nodes) + 1
		}
		return c.id
	}
	merge := func(c *node, r regs) {
		if c.final {
			return
		}
		if in[c.id] == nil {
			in[c.id] = &r
			return
		}
		if in[c.id].a != r.a {
			in[c.id].a = ""
		}
		if in[c.id].x != r.x {
			in[c.id].x = ""
		}
	}
	for i, n := range nodes {
		first[i] = len(items)
		cur := regs{}
		if in[i] != nil {
			cur = *in[i]
		}
		l := n.leaf
		if l.hasMsh {
			key := fmt.Sprintf("msh%d", l.msh)
			if cur.x != key {
				items = append(items, item{kind: iPlain, ins: bpf.LoadMemShift{Off: l.msh}})
				cur.x = key
			}
		}
		if l.key == "" || cur.a != l.key {
			for _, s := range l.stmts {
				items = append(items, item{kind: iPlain, ins: s})
			}
			cur.a = l.key
			if l.clobX {
				cur.x = ""
			}
		}
		items = append(items, item{kind: iCond, cond: l.cond, k: l.k, useX: l.useX, t: target(n.jt), f: target(n.jf)})
		merge(n.jt, cur)
		merge(n.jf, cur)
	}
	// The returns, each only if something jumps to it (a filter that
	// fails every packet it does not match has no "ret #0").
	used := [2]bool{}
	for _, it := range items {
		if it.kind == iCond {
			for _, t := range []int{it.t, it.f} {
				if t >= len(nodes) {
					used[t-len(nodes)] = true
				}
			}
		}
	}
	for k, ret := range []uint32{retMatch, retNone} {
		first[len(nodes)+k] = len(items)
		if used[k] {
			items = append(items, item{kind: iPlain, ins: bpf.RetConstant{Val: ret}})
		}
	}

	far := make([]bool, len(items))
	pos := make([]int, len(items))
	at := func(test int) int { return pos[first[test]] }
	for {
		n := 0
		for i := range items {
			pos[i] = n
			n++
			if far[i] {
				n += 2
			}
		}
		changed := false
		for i, it := range items {
			if it.kind == iCond && !far[i] && (at(it.t)-pos[i]-1 > 255 || at(it.f)-pos[i]-1 > 255) {
				far[i], changed = true, true
			}
		}
		if !changed {
			break
		}
	}
	out := make([]bpf.Instruction, 0, len(items))
	for i, it := range items {
		if it.kind == iPlain {
			out = append(out, it.ins)
			continue
		}
		st, sf := at(it.t)-pos[i]-1, at(it.f)-pos[i]-1
		if far[i] {
			out = append(out, jumpIf(it, 0, 1), bpf.Jump{Skip: uint32(st - 1)}, bpf.Jump{Skip: uint32(sf - 2)})
			continue
		}
		out = append(out, jumpIf(it, st, sf))
	}
	return out
}

func jumpIf(it item, st, sf int) bpf.Instruction {
	if it.useX {
		return bpf.JumpIfX{Cond: it.cond, SkipTrue: uint8(st), SkipFalse: uint8(sf)}
	}
	return bpf.JumpIf{Cond: it.cond, Val: it.k, SkipTrue: uint8(st), SkipFalse: uint8(sf)}
}
