package xdp

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/host"
)

// The NAPI deferral of DefaultTuning, which a native attach applies on the
// drivers it is measured to help: let the kernel batch two NAPI rounds before re-arming
// the interrupt, and flush at most 20 us later. Seed measurements on mlx5
// at 48 queues halved the machine's cost; a flush of 200 us capped a queue
// near 5 Mpps, 20 us lifts the cap above any one queue. veth has no hard
// interrupt to defer, and deferral measured inside the run-to-run spread
// there (receive 3.84 against 3.46 Mpps, medians of 7 pinned runs, ranges
// 2.96-4.14 and 3.21-4.06) while it holds a lone packet up to the flush
// timeout, so veth is left alone unless Tuning.NAPIAllDrivers asks.
const (
	DefaultNAPIDefer = 2
	DefaultNAPIFlush = 20 * time.Microsecond
)

// untunedDrivers keep the kernel's NAPI settings unless
// Tuning.NAPIAllDrivers asks. A read-only table.
var untunedDrivers = map[string]string{
	"veth": "veth has no hard interrupt to defer, and deferral measured within the noise on it",
	"":     "a virtual device with no driver to tune",
}

// hostTuning is every host setting a fleet changed, in one journal that
// Close (or a failed Open) restores in reverse order, and the decisions
// Info reports.
type hostTuning struct {
	j         host.Journal
	notes     []string
	cpus      []int // the worker CPU of each bound queue, -1 for none
	restored  bool
	recovered bool
}

// recoverHost puts back, once per Open and before the journal records any
// original, what dead processes left tuned (host.Journal.Recover): without
// it a tuned value left by a crash would be taken for the original. Every
// setting restored, dropped or left is a decision in Info, and so is a
// setting of ifname another live process holds changed (this fleet would
// take its value for the original); other live processes' settings are
// not.
func (t *hostTuning) recoverHost(ifname string) {
	if t.recovered {
		return
	}
	t.recovered = true
	rs, err := t.j.Recover()
	if err != nil {
		t.notes = append(t.notes, "host settings of dead processes not recovered: "+err.Error())
	}
	for _, r := range rs {
		if r.Action != host.HeldLive || strings.HasSuffix(r.What, " on "+ifname) {
			t.notes = append(t.notes, r.String())
		}
	}
}

// tuneBeforeAttach applies what must precede the program: the mlx5
// transmit-packing flag, which reopens the driver's channels.
func (f *Fleet) tuneBeforeAttach(c *config, nq int) error {
	t := &f.tuning
	if c.tuning != nil {
		t.recoverHost(f.ifname)
	}
	if c.tuning == nil || !c.tuning.MLX5TxMPWQEOff || f.info.Driver != "mlx5_core" {
		return nil
	}
	// Up to four transmit queues run pointer descriptors faster (17.5
	// Mpps per core against 8.5-14.3 copied); more keep the kernel's
	// default, the only way past the card's ~75 Mpps wall.
	if nq > 4 {
		t.notes = append(t.notes, fmt.Sprintf("xdp_tx_mpwqe left on (%d queues: the copied path scales past the pointer path's wall)", nq))
		return nil
	}
	changed, err := host.SetPrivFlag(&t.j, f.ifname, "xdp_tx_mpwqe", false)
	switch {
	case errors.Is(err, host.ErrUnavailable), errors.Is(err, host.ErrConflict):
		t.notes = append(t.notes, "xdp_tx_mpwqe left alone: "+err.Error())
	case err != nil:
		return fmt.Errorf("the xdp_tx_mpwqe private flag: %w", err)
	case !changed:
		t.notes = append(t.notes, "xdp_tx_mpwqe already off")
	}
	return nil
}

// tune applies the host settings the granted mode calls for: NAPI
// deferral and worker placement, on a native attach.
func (f *Fleet) tune(c *config, grp bindGroup) error {
	t := &f.tuning
	t.cpus = make([]int, len(f.sockets))
	for i := range t.cpus {
		t.cpus[i] = -1
	}
	if c.tuning == nil {
		t.notes = append(t.notes, "no host tuning (the default; WithHostTuning asks for it)")
		return nil
	}
	t.recoverHost(f.ifname)
	if err := f.tuneNAPI(c.tuning, grp); err != nil {
		return err
	}
	if !c.tuning.Place {
		return f.placeExplicit(c.tuning)
	}
	return f.place(c, grp)
}

func (f *Fleet) tuneNAPI(tu *Tuning, grp bindGroup) error {
	t := &f.tuning
	deferIRQs, flush := tu.NAPIDefer, tu.NAPIFlush
	switch why, untuned := untunedDrivers[f.info.Driver]; {
	case !grp.native:
		t.notes = append(t.notes, "napi untouched (generic mode)")
		return nil
	case untuned && !tu.NAPIAllDrivers:
		t.notes = append(t.notes, "napi untouched ("+why+")")
		return nil
	case flush <= 0:
		t.notes = append(t.notes, "napi untouched (Tuning.NAPIFlush 0)")
		return nil
	}
	err := host.InNetnsSysfs(func(root string) error {
		return host.TuneNAPI(&t.j, root, f.ifname, deferIRQs, flush)
	})
	switch {
	case errors.Is(err, host.ErrUnavailable), errors.Is(err, host.ErrConflict):
		t.notes = append(t.notes, "napi untouched: "+err.Error())
	case err != nil:
		return fmt.Errorf("NAPI tuning: %w", err)
	}
	return nil
}

// place decides where each queue's worker runs: beside its queue's
// interrupt, or on the CPUs Tuning.CPUs names, moving an interrupt where
// the plan needs it, through the journal.
func (f *Fleet) place(c *config, grp bindGroup) error {
	t := &f.tuning
	cpus := c.tuning.CPUs
	if !grp.native && len(cpus) == 0 {
		t.notes = append(t.notes, "workers unplaced (generic mode)")
		return nil
	}
	var (
		irqs []host.QueueIRQ
		topo host.Topology
	)
	irqErr := host.InNetnsSysfs(func(root string) error {
		var err error
		irqs, err = host.FindIRQs(root, "/proc", f.ifname)
		topo, _ = host.ReadTopology(root)
		return err
	})
	if irqErr != nil && len(cpus) == 0 {
		t.notes = append(t.notes, "workers unplaced: "+irqErr.Error())
		return nil
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.notes = append(t.notes, "workers unplaced: the CPU mask: "+err.Error())
		return nil
	}
	var allowed []int
	for cpu := 0; cpu <= host.MaxCPU; cpu++ {
		if set.IsSet(cpu) {
			allowed = append(allowed, cpu)
		}
	}
	receive := !allNone(c.matches)
	in := host.PlanInput{Topology: topo, Allowed: allowed, Receive: receive, CPUs: cpus}
	qirq := make([]host.QueueIRQ, len(f.sockets))
	for q := range f.sockets {
		cpu := -1
		if qi, ok := host.ForQueue(irqs, q, receive); ok {
			qirq[q], cpu = qi, qi.CPU()
		}
		in.IRQCPU = append(in.IRQCPU, cpu)
	}
	var why []string
	for q, p := range host.Plan(in) {
		t.cpus[q] = p.Worker
		f.sockets[q].pinCPU = p.Worker
		if p.MoveIRQ >= 0 && qirq[q].IRQ > 0 {
			if _, err := host.MoveIRQ(&t.j, "/proc", qirq[q].IRQ, []int{p.MoveIRQ}); err != nil {
				if !errors.Is(err, host.ErrUnavailable) && !errors.Is(err, host.ErrConflict) {
					return fmt.Errorf("move the interrupt of queue %d: %w", q, err)
				}
				why = append(why, fmt.Sprintf("q%d interrupt left: %v", q, err))
			}
		}
		why = append(why, fmt.Sprintf("q%d %s", q, p))
	}
	t.notes = append(t.notes, "placement: "+strings.Join(why, "; "))
	return nil
}

// placeExplicit pins workers to Tuning.CPUs without Tuning.Place:
// workers only, interrupts untouched.
func (f *Fleet) placeExplicit(tu *Tuning) error {
	if len(tu.CPUs) == 0 {
		f.tuning.notes = append(f.tuning.notes, "workers left to the scheduler (Tuning.Place and Tuning.CPUs unset)")
		return nil
	}
	for q, s := range f.sockets {
		cpu := tu.CPUs[q%len(tu.CPUs)]
		f.tuning.cpus[q], s.pinCPU = cpu, cpu
	}
	f.tuning.notes = append(f.tuning.notes, fmt.Sprintf("workers on CPUs %v (Tuning.CPUs)", tu.CPUs))
	return nil
}

func allNone(ms []filter.Match) bool {
	for _, m := range ms {
		if !m.IsNone() {
			return false
		}
	}
	return true
}

func (t *hostTuning) changes() []string {
	var out []string
	for _, c := range t.j.Changes() {
		out = append(out, c.String())
	}
	return out
}

func (t *hostTuning) affinityDesc() string {
	if len(t.cpus) == 0 {
		return ""
	}
	var parts []string
	placed := false
	for q, c := range t.cpus {
		if c >= 0 {
			placed = true
		}
		parts = append(parts, fmt.Sprintf("q%d->%d", q, c))
	}
	if !placed {
		return "unplaced"
	}
	return strings.Join(parts, " ")
}

// restore undoes every change in reverse order, all of them attempted.
func (t *hostTuning) restore() error {
	if t.restored {
		return nil
	}
	t.restored = true
	return t.j.Restore()
}

// Affinity returns the CPU each queue's worker is placed on, -1 where it is
// left to the scheduler. A worker is locked there the first time its
// goroutine drives the socket.
func (f *Fleet) Affinity() []int {
	if f == nil {
		return nil
	}
	return append([]int(nil), f.tuning.cpus...)
}

// threadPins maps an OS thread to the CPU a socket pinned it to, for the
// sockets of one fleet: a goroutine that drives several queues is pinned
// once, for the first.
type threadPins struct {
	mu    sync.Mutex
	byTID map[int]int
}

// claim records tid as pinned to cpu, and reports whether it already was.
func (p *threadPins) claim(tid, cpu int) (had bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, had = p.byTID[tid]; !had {
		if p.byTID == nil {
			p.byTID = map[int]int{}
		}
		p.byTID[tid] = cpu
	}
	return had
}

// release forgets tid (its pin was refused).
func (p *threadPins) release(tid int) {
	p.mu.Lock()
	delete(p.byTID, tid)
	p.mu.Unlock()
}

// pin locks the calling goroutine to its thread and the thread to the
// socket's CPU, once. A refusal (a cpuset that excludes the CPU) is taken as
// the operator's decision: counted, and the thread left free.
func (s *Socket) pin() {
	s.pinned.Store(true)
	runtime.LockOSThread()
	tid := unix.Gettid()
	if s.pins.claim(tid, s.pinCPU) {
		return
	}
	var set unix.CPUSet
	set.Set(s.pinCPU)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		s.pins.release(tid)
		s.pinRefused.Add(1)
		runtime.UnlockOSThread()
	}
}

// maybePin is the one atomic load a packet call pays for placement.
func (s *Socket) maybePin() {
	if s.pinCPU >= 0 && !s.pinned.Load() {
		s.pin()
	}
}
