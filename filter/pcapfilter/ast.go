package pcapfilter

import (
	"errors"
	"fmt"
	"reflect"

	"golang.org/x/net/bpf"
)

// A filter compiles to a tree of boolean nodes whose leaves are tests: a
// few straight-line statements that leave a value in A, then one
// comparison. And, or and not become jumps (short-circuit, left to right,
// as libpcap evaluates them), so the loads a packet sees are those of
// libpcap's own program: a load past the end of the packet fails the
// whole filter, in libpcap's programs and in these alike. Arithmetic on
// constants folds as libpcap's optimiser folds it (see binary); tests are
// kept where libpcap's unoptimised program has them (libpcap's optimiser
// drops some whose outcome it finds does not matter, and their loads with
// them, which changes its verdict for some short packets; see the package
// doc).
type bnode interface{ isBool() }

type bAnd struct{ l, r bnode }
type bOr struct{ l, r bnode }
type bNot struct{ x bnode }

// bConst is a test whose outcome is known without looking at the packet.
type bConst bool

// bLeaf is one test: stmts (after X = 4*(P[msh]&0xf) when hasMsh) then
// "A cond k" (or "A cond X" when useX).
type bLeaf struct {
	hasMsh bool
	msh    uint32
	stmts  []bpf.Instruction
	key    string // what A holds after stmts, for reuse; "" for never
	clobX  bool   // stmts change X
	cond   bpf.JumpTest
	k      uint32
	useX   bool
	err    error // a relation that cannot be computed (see aErr)
}

func (bAnd) isBool()   {}
func (bOr) isBool()    {}
func (bNot) isBool()   {}
func (bConst) isBool() {}
func (*bLeaf) isBool() {}

// and, or and not fold known outcomes where nothing is evaluated that
// libpcap's program would not evaluate: "false and x" is false, "x and
// true" is x, but "x and false" still tests x (a load in x can fail).
// nil stands for "no condition" (true).
func and(l, r bnode) bnode {
	switch {
	case l == nil:
		return r
	case r == nil:
		return l
	case l == bConst(false):
		return bConst(false)
	case l == bConst(true):
		return r
	case r == bConst(true):
		return l
	}
	return bAnd{l, r}
}

func or(l, r bnode) bnode {
	switch {
	case l == bConst(true):
		return bConst(true)
	case l == bConst(false):
		return r
	case r == bConst(false):
		return l
	}
	// (a and x) or (a and y) is a and (x or y): a is tested once. The
	// loads are the same on every path (a test gives the same answer the
	// second time), so the verdicts are too.
	cl, cr := conjuncts(l), conjuncts(r)
	k := 0
	for k < len(cl) && k < len(cr) && reflect.DeepEqual(cl[k], cr[k]) {
		k++
	}
	if k > 0 {
		return and(conj(cl[:k]), or(conj(cl[k:]), conj(cr[k:])))
	}
	return bOr{l, r}
}

// conjuncts lists the factors of a conjunction in evaluation order.
func conjuncts(n bnode) []bnode {
	if a, ok := n.(bAnd); ok {
		return append(conjuncts(a.l), conjuncts(a.r)...)
	}
	return []bnode{n}
}

// conj is the conjunction of list; true when it is empty.
func conj(list []bnode) bnode {
	var b bnode = bConst(true)
	for _, x := range list {
		b = and(b, x)
	}
	return b
}

func not(x bnode) bnode {
	if c, ok := x.(bConst); ok {
		return !c
	}
	return bNot{x}
}

// Tests on packet fields.

func loadKey(size int, off uint32) string { return fmt.Sprintf("%d[%d]", size, off) }

// cmp tests the size-byte field at off (masked unless mask is all ones for
// the size) with cond against k.
func cmp(off uint32, size int, cond bpf.JumpTest, k, mask uint32) bnode {
	full := uint32(1)<<(8*size) - 1
	if size == 4 {
		full = 0xffffffff
	}
	l := &bLeaf{stmts: []bpf.Instruction{bpf.LoadAbsolute{Off: off, Size: size}}, key: loadKey(size, off), cond: cond, k: k}
	if mask&full != full {
		if mask == 0 {
			// libpcap's optimiser folds "and #0" to a constant and
			// drops the load with it (an IPv6 prefix shorter than 97
			// bits leaves such words).
			return bConst(test(cond, 0, k))
		}
		l.stmts = append(l.stmts, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: mask})
		l.key = fmt.Sprintf("%s&%#x", l.key, mask)
	}
	return l
}

func eq(off uint32, size int, k uint32) bnode {
	return cmp(off, size, bpf.JumpEqual, k, 0xffffffff)
}

// transport tests the size-byte field off bytes into the IPv4 payload whose
// header starts at nl, with its length from IHL.
func transport(nl, off uint32, size int, cond bpf.JumpTest, k uint32) bnode {
	return &bLeaf{
		hasMsh: true, msh: nl,
		stmts: []bpf.Instruction{bpf.LoadIndirect{Off: nl + off, Size: size}},
		key:   fmt.Sprintf("%d[x+%d]msh%d", size, nl+off, nl),
		cond:  cond, k: k,
	}
}

func lenTest(cond bpf.JumpTest, k uint32) bnode {
	return &bLeaf{stmts: []bpf.Instruction{bpf.LoadExtension{Num: bpf.ExtLen}}, key: "len", cond: cond, k: k}
}

// test evaluates a comparison of known values.
func test(cond bpf.JumpTest, a, b uint32) bool {
	switch cond {
	case bpf.JumpEqual:
		return a == b
	case bpf.JumpGreaterThan:
		return a > b
	case bpf.JumpGreaterOrEqual:
		return a >= b
	case bpf.JumpBitsSet:
		return a&b != 0
	}
	panic("pcapfilter: bad condition") // unreachable: only the four above are built
}

// Arithmetic.

type arith interface{ isArith() }

// aConst is a number; lit says it was written as one (libpcap refuses a
// literal shift over 31 but folds a computed one).
type aConst struct {
	v   uint32
	lit bool
}

type aLen struct{}

type loadKind uint8

const (
	ldLink  loadKind = iota // ether[i]: from the frame start
	ldNet                   // ip[i], ip6[i], arp[i]: from the network header
	ldTrans                 // tcp[i], udp[i], ...: after the IPv4 header, IHL included
)

// aLoad is proto[idx:size]. base is the offset idx counts from (for
// ldTrans, that of the IPv4 header).
type aLoad struct {
	kind loadKind
	base uint32
	size int
	idx  arith
}

type aBin struct {
	op   bpf.ALUOp
	l, r arith
}

type aNeg struct{ x arith }

func (aConst) isArith() {}
func (aLen) isArith()   {}
func (aLoad) isArith()  {}
func (aBin) isArith()   {}
func (aNeg) isArith()   {}

// arth is an arithmetic value with the conditions under which libpcap
// computes it (a load from tcp[] only happens for IPv4 TCP that is not a
// later fragment).
type arth struct {
	v     arith
	conds bnode
}

// binary folds constants as libpcap's optimiser does, dropping the
// operand it makes irrelevant with its loads (whether a load is made
// decides whether a short packet fails): x+0, x|0, x^0, x<<0 and x>>0 are
// x; x*0 and x&0 are 0 without loading x; 0+x, 0|x and 0^x are x; 0*x,
// 0/x, 0%x, 0&x, 0<<x and 0>>x are 0 without loading x. These folds work
// on values, the same in every libpcap; they are the only places these
// programs follow libpcap's optimiser rather than its unoptimised program.
// lost is the operand such a fold drops (nil when none is).
//
// Like libpcap it refuses at once a division or modulo by a literal 0 and
// a shift by a literal over 31. The same with a computed constant is an
// error only if the test that computes it survives optimisation (libpcap's
// optimiser reports it only then; the first test always does): it becomes
// an aErr.
func binary(op bpf.ALUOp, l, r arith) (v, lost arith, err error) {
	lc, lok := l.(aConst)
	rc, rok := r.(aConst)
	shift := op == bpf.ALUOpShiftLeft || op == bpf.ALUOpShiftRight
	if rok && rc.lit {
		switch {
		case shift && rc.v > 31:
			return nil, nil, errors.New("shift by more than 31 bits")
		case op == bpf.ALUOpDiv && rc.v == 0:
			return nil, nil, errors.New("division by zero")
		case op == bpf.ALUOpMod && rc.v == 0:
			return nil, nil, errors.New("modulus by zero")
		}
	}
	if e := firstErr(l); e != nil {
		return e, nil, nil
	}
	if e := firstErr(r); e != nil {
		return e, nil, nil
	}
	if rok && lok {
		if rc.v == 0 && op == bpf.ALUOpDiv {
			return aErr{"division by zero"}, nil, nil
		}
		if rc.v == 0 && op == bpf.ALUOpMod {
			return aErr{"modulus by zero"}, nil, nil
		}
		if shift && rc.v > 31 {
			return aErr{"shift by more than 31 bits"}, nil, nil
		}
		return aConst{v: fold(op, lc.v, rc.v)}, nil, nil
	}
	if rok {
		if shift && rc.v > 31 {
			return aErr{"shift by more than 31 bits"}, nil, nil
		}
		if rc.v == 0 {
			switch op {
			case bpf.ALUOpAdd, bpf.ALUOpShiftLeft, bpf.ALUOpShiftRight, bpf.ALUOpOr, bpf.ALUOpXor:
				return l, nil, nil
			case bpf.ALUOpMul, bpf.ALUOpAnd:
				return aConst{v: 0}, l, nil
			case bpf.ALUOpDiv:
				return aErr{"division by zero"}, nil, nil
			case bpf.ALUOpMod:
				return aErr{"modulus by zero"}, nil, nil
			}
		}
		return aBin{op: op, l: l, r: r}, nil, nil
	}
	if lok && lc.v == 0 {
		switch op {
		case bpf.ALUOpAdd, bpf.ALUOpOr, bpf.ALUOpXor:
			return r, nil, nil
		case bpf.ALUOpMul, bpf.ALUOpDiv, bpf.ALUOpMod, bpf.ALUOpAnd, bpf.ALUOpShiftLeft, bpf.ALUOpShiftRight:
			return aConst{v: 0}, r, nil
		}
	}
	return aBin{op: op, l: l, r: r}, nil, nil
}

// aErr is a value libpcap's optimiser refuses to compute (a division by a
// computed 0): an error if the test using it is kept.
type aErr struct{ msg string }

func (aErr) isArith() {}

// firstErr returns the first aErr in a, or nil.
func firstErr(a arith) arith {
	switch a := a.(type) {
	case aErr:
		return a
	case aLoad:
		return firstErr(a.idx)
	case aBin:
		if e := firstErr(a.l); e != nil {
			return e
		}
		return firstErr(a.r)
	case aNeg:
		return firstErr(a.x)
	}
	return nil
}

func fold(op bpf.ALUOp, a, b uint32) uint32 {
	switch op {
	case bpf.ALUOpAdd:
		return a + b
	case bpf.ALUOpSub:
		return a - b
	case bpf.ALUOpMul:
		return a * b
	case bpf.ALUOpDiv:
		return a / b
	case bpf.ALUOpMod:
		return a % b
	case bpf.ALUOpAnd:
		return a & b
	case bpf.ALUOpOr:
		return a | b
	case bpf.ALUOpXor:
		return a ^ b
	case bpf.ALUOpShiftLeft:
		if b > 31 {
			return 0
		}
		return a << b
	case bpf.ALUOpShiftRight:
		if b > 31 {
			return 0
		}
		return a >> b
	}
	return a
}

func negate(x arith) arith {
	if e := firstErr(x); e != nil {
		return e
	}
	if c, ok := x.(aConst); ok {
		return aConst{v: -c.v}
	}
	return aNeg{x}
}

// clobbersX says whether computing a changes X.
func clobbersX(a arith) bool {
	switch a := a.(type) {
	case aLoad:
		if a.kind == ldTrans {
			return true
		}
		if _, ok := a.idx.(aConst); !ok {
			return true
		}
	case aBin:
		if _, ok := a.r.(aConst); !ok {
			return true
		}
		return clobbersX(a.l)
	case aNeg:
		return clobbersX(a.x)
	}
	return false
}

// relation is "a0 cond a1" (libpcap's gen_relation): the conditions of
// both sides, then the comparison. reversed negates it (<, <=, !=).
func relation(cond bpf.JumpTest, reversed bool, a0, a1 arth) bnode {
	conds := and(a0.conds, a1.conds)
	c0, ok0 := a0.v.(aConst)
	c1, ok1 := a1.v.(aConst)
	var b bnode
	if ok0 && ok1 {
		b = bConst(test(cond, c0.v, c1.v))
	} else {
		b = &bRel{cond: cond, a0: a0.v, a1: a1.v}
	}
	if reversed {
		b = not(b)
	}
	return and(conds, b)
}

// bRel is a comparison of computed values, turned into a leaf by the code
// generator (which allocates the scratch memory it needs).
type bRel struct {
	cond   bpf.JumpTest
	a0, a1 arith
}

func (*bRel) isBool() {}
