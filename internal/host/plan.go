package host

import (
	"fmt"
	"sort"
)

// PlanInput is what a placement is decided from.
type PlanInput struct {
	// IRQCPU holds, for each bound queue in order, the CPU its interrupt
	// lands on (QueueIRQ.CPU), or -1 when none was found.
	IRQCPU []int
	// Topology is the host's CPU topology (ReadTopology).
	Topology Topology
	// Allowed is the set of CPUs the process may run on.
	Allowed []int
	// Receive is true when the fleet can receive; false for a transmit-only
	// fleet (a filter that redirects nothing).
	Receive bool
	// CPUs are the CPUs the caller named (xdp.Tuning.CPUs); empty for automatic
	// placement. The i-th bound queue runs on CPUs[i%len(CPUs)].
	CPUs []int
}

// QueuePlan is the placement of one bound queue.
type QueuePlan struct {
	// Worker is the CPU for the goroutine driving the queue, or -1 to leave
	// it to the scheduler.
	Worker int
	// MoveIRQ is the CPU to move the queue's interrupt to (with MoveIRQ,
	// through the journal), or -1 to leave it where it is.
	MoveIRQ int
	// Why says how the decision was made, for Info.
	Why string
}

// String returns a line for Info, as in "worker on CPU 2: beside interrupt
// CPU 0 in its cache complex".
func (p QueuePlan) String() string {
	s := "worker unplaced"
	if p.Worker >= 0 {
		s = fmt.Sprintf("worker on CPU %d", p.Worker)
	}
	if p.MoveIRQ >= 0 {
		s += fmt.Sprintf(", interrupt moved to CPU %d", p.MoveIRQ)
	}
	return s + ": " + p.Why
}

// Plan places each bound queue's worker.
//
// Automatic placement of a fleet that receives puts each worker on a free
// CPU in the same cache complex as its queue's interrupt: on another
// physical core first (a core with no busy thread before one whose other
// thread is busy), then on the interrupt CPU's SMT sibling, and otherwise
// nowhere (-1): never on the interrupt CPU itself, where the kernel half of
// the queue needs the whole core. Free means neither the interrupt CPU of
// any bound queue nor already given to another queue. A transmit-only fleet
// shares its interrupt's CPU instead, which is the cheapest arrangement for
// transmit. Automatic placement never moves interrupts.
//
// With explicit CPUs the i-th queue runs on CPUs[i%len(CPUs)]. Its
// interrupt is moved beside it when it lands elsewhere: for a fleet that
// receives, onto another CPU of the worker's complex that no worker uses
// (another physical core first, then the worker's SMT sibling), and also
// off the worker's own CPU; for a transmit-only fleet, onto the worker's
// CPU. A named CPU outside Allowed leaves that queue unplaced.
func Plan(in PlanInput) []QueuePlan {
	tp := planner{in: in, allowed: map[int]bool{}, irq: map[int]bool{}, used: map[int]bool{}}
	for _, c := range in.Allowed {
		tp.allowed[c] = true
	}
	for _, c := range in.IRQCPU {
		if c >= 0 {
			tp.irq[c] = true
		}
	}
	out := make([]QueuePlan, len(in.IRQCPU))
	for i, c := range in.IRQCPU {
		if len(in.CPUs) > 0 {
			out[i] = tp.explicit(i, c)
		} else {
			out[i] = tp.auto(c)
		}
	}
	return out
}

type planner struct {
	in      PlanInput
	allowed map[int]bool
	irq     map[int]bool // interrupt CPUs of bound queues
	used    map[int]bool // CPUs given to workers (auto) or interrupts moved there (explicit)
}

func (tp *planner) siblings(c int) []int {
	if l, ok := tp.in.Topology.Siblings[c]; ok {
		return l
	}
	return []int{c}
}

func (tp *planner) sameCore(a, b int) bool {
	for _, s := range tp.siblings(a) {
		if s == b {
			return true
		}
	}
	return a == b
}

// complexOf returns the CPUs sharing c's last-level cache; CPUs without
// cache information form one complex together.
func (tp *planner) complexOf(c int) []int {
	if l, ok := tp.in.Topology.Complex[c]; ok {
		return l
	}
	set := map[int]bool{c: true}
	for _, x := range tp.in.Allowed {
		if _, ok := tp.in.Topology.Complex[x]; !ok {
			set[x] = true
		}
	}
	for x := range tp.in.Topology.Siblings {
		if _, ok := tp.in.Topology.Complex[x]; !ok {
			set[x] = true
		}
	}
	out := make([]int, 0, len(set))
	for x := range set {
		out = append(out, x)
	}
	sort.Ints(out)
	return out
}

func (tp *planner) inComplex(a, b int) bool {
	for _, x := range tp.complexOf(a) {
		if x == b {
			return true
		}
	}
	return false
}

// coreIdle reports whether no thread of c's physical core is busy.
func (tp *planner) coreIdle(c int, busy func(int) bool) bool {
	for _, s := range tp.siblings(c) {
		if busy(s) {
			return false
		}
	}
	return true
}

// pick returns the best of cands by preferring idle cores, then the lowest
// number, or -1.
func (tp *planner) pick(cands []int, busy func(int) bool) int {
	best, bestIdle := -1, false
	for _, c := range cands {
		idle := tp.coreIdle(c, busy)
		if best < 0 || (idle && !bestIdle) || (idle == bestIdle && c < best) {
			best, bestIdle = c, idle
		}
	}
	return best
}

func (tp *planner) auto(irqCPU int) QueuePlan {
	if irqCPU < 0 {
		return QueuePlan{Worker: -1, MoveIRQ: -1, Why: "no interrupt found for the queue"}
	}
	if !tp.in.Receive {
		if tp.allowed[irqCPU] {
			return QueuePlan{Worker: irqCPU, MoveIRQ: -1, Why: fmt.Sprintf("on its interrupt's CPU %d (transmit only)", irqCPU)}
		}
		return QueuePlan{Worker: -1, MoveIRQ: -1, Why: fmt.Sprintf("interrupt CPU %d is outside the allowed CPUs", irqCPU)}
	}
	busy := func(c int) bool { return tp.irq[c] || tp.used[c] }
	free := func(c int) bool { return tp.allowed[c] && !busy(c) }
	var other, sib []int
	for _, c := range tp.complexOf(irqCPU) {
		if free(c) && !tp.sameCore(c, irqCPU) {
			other = append(other, c)
		}
	}
	if c := tp.pick(other, busy); c >= 0 {
		tp.used[c] = true
		return QueuePlan{Worker: c, MoveIRQ: -1, Why: fmt.Sprintf("beside interrupt CPU %d in its cache complex", irqCPU)}
	}
	for _, c := range tp.siblings(irqCPU) {
		if c != irqCPU && free(c) {
			sib = append(sib, c)
		}
	}
	if c := tp.pick(sib, busy); c >= 0 {
		tp.used[c] = true
		return QueuePlan{Worker: c, MoveIRQ: -1, Why: fmt.Sprintf("on the SMT sibling of interrupt CPU %d", irqCPU)}
	}
	return QueuePlan{Worker: -1, MoveIRQ: -1, Why: fmt.Sprintf("no free core beside interrupt CPU %d", irqCPU)}
}

func (tp *planner) explicit(i, irqCPU int) QueuePlan {
	w := tp.in.CPUs[i%len(tp.in.CPUs)]
	if !tp.allowed[w] {
		return QueuePlan{Worker: -1, MoveIRQ: -1, Why: fmt.Sprintf("CPU %d was asked for but is outside the allowed CPUs", w)}
	}
	p := QueuePlan{Worker: w, MoveIRQ: -1, Why: "as asked"}
	if irqCPU < 0 {
		p.Why += "; no interrupt found for the queue"
		return p
	}
	if !tp.in.Receive {
		if irqCPU != w {
			p.MoveIRQ = w
			p.Why += fmt.Sprintf("; interrupt brought from CPU %d onto the worker (transmit only)", irqCPU)
		}
		return p
	}
	if irqCPU != w && tp.inComplex(w, irqCPU) {
		p.Why += fmt.Sprintf("; interrupt CPU %d is already beside it", irqCPU)
		return p
	}
	workers := map[int]bool{}
	for _, c := range tp.in.CPUs {
		workers[c] = true
	}
	busy := func(c int) bool { return workers[c] || tp.used[c] }
	var other, sib []int
	for _, c := range tp.complexOf(w) {
		if !workers[c] && !tp.sameCore(c, w) {
			other = append(other, c)
		}
	}
	for _, c := range tp.siblings(w) {
		if c != w && !workers[c] {
			sib = append(sib, c)
		}
	}
	// Several interrupts may share a CPU, but spread them while there is
	// room.
	target := tp.pick(without(other, tp.used), busy)
	if target < 0 {
		target = tp.pick(without(sib, tp.used), busy)
	}
	if target < 0 {
		target = tp.pick(other, busy)
	}
	if target < 0 {
		target = tp.pick(sib, busy)
	}
	if target < 0 {
		p.Why += fmt.Sprintf("; no core beside CPU %d for its interrupt, left on CPU %d", w, irqCPU)
		return p
	}
	tp.used[target] = true
	p.MoveIRQ = target
	p.Why += fmt.Sprintf("; interrupt moved from CPU %d to beside the worker", irqCPU)
	return p
}

func without(l []int, drop map[int]bool) []int {
	var out []int
	for _, x := range l {
		if !drop[x] {
			out = append(out, x)
		}
	}
	return out
}
