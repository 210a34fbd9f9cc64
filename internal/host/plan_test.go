package host

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func cpu8(t *testing.T) Topology {
	t.Helper()
	topo, err := ReadTopology(filepath.Join(fakeTree(t, "cpu8.txt"), "sys"))
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func TestReadTopology(t *testing.T) {
	topo := cpu8(t)
	if got := fmt.Sprint(topo.Siblings[1], topo.Siblings[6]); got != "[1 5] [2 6]" {
		t.Errorf("siblings of 1 and 6 = %s", got)
	}
	if got := fmt.Sprint(topo.Complex[0], topo.Complex[7]); got != "[0 1 4 5] [2 3 6 7]" {
		t.Errorf("complexes of 0 and 7 = %s", got)
	}
	if len(topo.Siblings) != 8 || len(topo.Complex) != 8 {
		t.Errorf("%d CPUs with siblings, %d with a complex; want 8 and 8", len(topo.Siblings), len(topo.Complex))
	}
	if _, err := ReadTopology(t.TempDir()); err == nil {
		t.Error("a tree without CPUs gave a topology")
	}
}

func TestCPUList(t *testing.T) {
	tests := []struct{ in, parsed, formatted string }{
		{"0-3,8,10-11", "[0 1 2 3 8 10 11]", "0-3,8,10-11"},
		{"5", "[5]", "5"},
		{" 3,1,2 \n", "[1 2 3]", "1-3"},
		{"1,1,1", "[1]", "1"},
		{"", "[]", ""},
		{"3-1,x,-4,2000,7", "[7]", "7"},
		{"0-1,3", "[0 1 3]", "0-1,3"},
	}
	for _, tt := range tests {
		l := kernelCPUList(tt.in)
		if got := fmt.Sprint(l); got != tt.parsed {
			t.Errorf("kernelCPUList(%q) = %s, want %s", tt.in, got, tt.parsed)
		}
		if got := formatCPUList(l); got != tt.formatted {
			t.Errorf("formatCPUList(%v) = %q, want %q", l, got, tt.formatted)
		}
	}
}

func planSummary(p []QueuePlan) string {
	var parts []string
	for _, q := range p {
		s := fmt.Sprint(q.Worker)
		if q.MoveIRQ >= 0 {
			s += fmt.Sprintf("(irq->%d)", q.MoveIRQ)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// TestPlan is the placement table. Topology: eight CPUs, cores {n, n+4},
// complexes {0,1,4,5} and {2,3,6,7}.
func TestPlan(t *testing.T) {
	topo := cpu8(t)
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	tests := []struct {
		name    string
		irq     []int
		allowed []int
		receive bool
		cpus    []int
		want    string
		why     string // substring of the first queue's Why
	}{
		{name: "one queue: an idle core of the complex, not the IRQ CPU or its sibling",
			irq: []int{0}, allowed: all, receive: true, want: "1", why: "beside interrupt CPU 0"},
		{name: "two queues in one complex: each on the other's sibling (the only free threads)",
			irq: []int{0, 1}, allowed: all, receive: true, want: "5 4"},
		{name: "four queues, two complexes",
			irq: []int{0, 1, 2, 3}, allowed: all, receive: true, want: "5 4 7 6"},
		{name: "every CPU an IRQ CPU: nothing placed",
			irq: all, allowed: all, receive: true, want: "-1 -1 -1 -1 -1 -1 -1 -1", why: "no free core beside interrupt CPU 0"},
		{name: "two queues on one IRQ CPU: an idle core first, then the half-busy one",
			irq: []int{0, 0}, allowed: all, receive: true, want: "1 5"},
		{name: "only the SMT sibling is allowed",
			irq: []int{0}, allowed: []int{0, 4}, receive: true, want: "4", why: "SMT sibling of interrupt CPU 0"},
		{name: "the other complex is never used",
			irq: []int{0}, allowed: []int{0, 2, 3, 6, 7}, receive: true, want: "-1"},
		{name: "no interrupt known",
			irq: []int{-1, 2}, allowed: all, receive: true, want: "-1 3", why: "no interrupt found"},
		{name: "transmit only: share the IRQ CPU",
			irq: []int{0, 1, 1}, allowed: all, receive: false, want: "0 1 1", why: "transmit only"},
		{name: "transmit only, IRQ CPU not allowed",
			irq: []int{0}, allowed: []int{1}, receive: false, want: "-1", why: "outside the allowed"},
		{name: "explicit: IRQs already beside the workers stay",
			irq: []int{0, 2}, allowed: all, receive: true, cpus: []int{4, 6}, want: "4 6", why: "already beside"},
		{name: "explicit: an IRQ in another complex is brought to an idle core beside the worker",
			irq: []int{0}, allowed: all, receive: true, cpus: []int{2}, want: "2(irq->3)", why: "interrupt moved from CPU 0"},
		{name: "explicit: an IRQ on the worker's own CPU is moved off it",
			irq: []int{1}, allowed: all, receive: true, cpus: []int{1}, want: "1(irq->0)"},
		{name: "explicit: q runs on cpus[q%len], interrupts spread",
			irq: []int{2, 2, 2}, allowed: all, receive: true, cpus: []int{0, 1}, want: "0(irq->5) 1(irq->4) 0(irq->5)"},
		{name: "explicit: only the worker's sibling is left for its IRQ",
			irq: []int{6}, allowed: all, receive: true, cpus: []int{0, 1, 5}, want: "0(irq->4)"},
		{name: "explicit: no room beside the worker",
			irq: []int{6, 6, 6, 6}, allowed: all, receive: true, cpus: []int{0, 1, 4, 5}, want: "0 1 4 5", why: "no core beside CPU 0"},
		{name: "explicit transmit only: the IRQ comes onto the worker",
			irq: []int{0, 3}, allowed: all, receive: false, cpus: []int{3}, want: "3(irq->3) 3"},
		{name: "explicit CPU outside the allowed set",
			irq: []int{0}, allowed: []int{0, 1}, receive: true, cpus: []int{6}, want: "-1", why: "outside the allowed"},
		{name: "explicit, no interrupt known",
			irq: []int{-1}, allowed: all, receive: true, cpus: []int{6}, want: "6", why: "no interrupt found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Plan(PlanInput{IRQCPU: tt.irq, Topology: topo, Allowed: tt.allowed, Receive: tt.receive, CPUs: tt.cpus})
			if len(p) != len(tt.irq) {
				t.Fatalf("%d plans for %d queues", len(p), len(tt.irq))
			}
			if got := planSummary(p); got != tt.want {
				t.Fatalf("Plan = %s, want %s\n%v", got, tt.want, p)
			}
			if tt.why != "" && !strings.Contains(p[0].Why, tt.why) {
				t.Fatalf("Why = %q, want it to mention %q", p[0].Why, tt.why)
			}
			if tt.receive && len(tt.cpus) == 0 {
				for i, q := range p {
					if q.Worker >= 0 && q.Worker == tt.irq[i] {
						t.Fatalf("queue %d placed on its own interrupt CPU", i)
					}
				}
			}
		})
	}
}

// TestPlanWithoutTopology: with no topology at all the CPUs form one
// complex of single-thread cores, as on a small VM.
func TestPlanWithoutTopology(t *testing.T) {
	p := Plan(PlanInput{IRQCPU: []int{1}, Allowed: []int{0, 1}, Receive: true})
	if got := planSummary(p); got != "0" {
		t.Fatalf("Plan = %s, want 0", got)
	}
	// The development VM: two CPUs, one core each, one L3; virtio_net's
	// receive interrupt on CPU 1.
	vm := Topology{Siblings: map[int][]int{0: {0}, 1: {1}}, Complex: map[int][]int{0: {0, 1}, 1: {0, 1}}}
	p = Plan(PlanInput{IRQCPU: []int{1}, Topology: vm, Allowed: []int{0, 1}, Receive: true})
	if got := planSummary(p); got != "0" {
		t.Fatalf("Plan on the VM = %s, want 0", got)
	}
	if len(Plan(PlanInput{})) != 0 {
		t.Fatal("a plan for no queues")
	}
}

func TestQueuePlanString(t *testing.T) {
	tests := []struct {
		p    QueuePlan
		want string
	}{
		{QueuePlan{Worker: 2, MoveIRQ: -1, Why: "beside interrupt CPU 0 in its cache complex"}, "worker on CPU 2: beside interrupt CPU 0 in its cache complex"},
		{QueuePlan{Worker: -1, MoveIRQ: -1, Why: "no free core beside interrupt CPU 0"}, "worker unplaced: no free core beside interrupt CPU 0"},
		{QueuePlan{Worker: 2, MoveIRQ: 3, Why: "as asked"}, "worker on CPU 2, interrupt moved to CPU 3: as asked"},
	}
	for _, tt := range tests {
		if got := tt.p.String(); got != tt.want {
			t.Errorf("String = %q, want %q", got, tt.want)
		}
	}
}
