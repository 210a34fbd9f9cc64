package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The three loops, in table order.
const (
	loopTx  = "transmit"
	loopRx  = "receive"
	loopFwd = "forward"
)

var loops = []string{loopTx, loopRx, loopFwd}

// sample is one pass of one cell: the rate over the window and what the
// whole machine spent meanwhile, in cores.
type sample struct {
	mpps, cores, softirq float64
	// offered is the feeder's rate over the same window, in Mpps; NaN
	// where nothing feeds (transmit).
	offered float64
}

// cell is one (loop, frame size, queue count, column) of the table.
type cell struct {
	loop   string
	size   int // frame bytes on the wire, FCS included
	column string
	queues int
	passes []sample
	// note says why the cell has no number (skipped or failed), or adds
	// a remark to one that has.
	note string
	// failed marks a cell that should have been measured and was not.
	failed bool
}

// summary is a cell reduced over its passes.
type summary struct {
	mpps, cores, softirq, offered float64
	// gbps is mpps in Gbit/s on the wire: frame bytes with FCS, without
	// preamble and inter-frame gap.
	gbps float64
	// perMpps is cores over Mpps: the whole machine's cost of a million
	// packets a second.
	perMpps float64
	// ratio is mpps over the kernel baseline's of the same loop, size
	// and queue count; NaN when there is no baseline number.
	ratio float64
	// ref is the reference column (see reference), refRatio mpps over
	// its; NaN when there is none or it has no number.
	ref      string
	refRatio float64
	ok       bool
}

// median of xs; NaN for none. It does not reorder xs.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// ratio is a/b, NaN when either is missing or b is zero.
func ratio(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return math.NaN()
	}
	return a / b
}

// summarise takes the median of each measure independently.
func (c *cell) summarise() summary {
	nan := math.NaN()
	if len(c.passes) == 0 {
		return summary{mpps: nan, cores: nan, softirq: nan, offered: nan, gbps: nan, perMpps: nan, ratio: nan, refRatio: nan}
	}
	var m, co, si, of, per []float64
	for _, p := range c.passes {
		m, co, si = append(m, p.mpps), append(co, p.cores), append(si, p.softirq)
		per = append(per, ratio(p.cores, p.mpps))
		if !math.IsNaN(p.offered) {
			of = append(of, p.offered)
		}
	}
	s := summary{mpps: median(m), cores: median(co), softirq: median(si), offered: median(of), ratio: nan, refRatio: nan, ok: true}
	s.gbps = s.mpps * float64(c.size) * 8 / 1000
	s.perMpps = median(per)
	return s
}

// header is what the table says about where and how it was measured.
type header struct {
	date, cpu, kernel, command string
	cpus                       int
	passes                     int
	warmup, window             string
	feeder                     string
	notes                      []string // printed under the table
}

// table is a whole sweep.
type table struct {
	header
	cells []*cell
}

// find returns the cell or nil.
func (t *table) find(loop string, size int, column string, queues int) *cell {
	for _, c := range t.cells {
		if c.loop == loop && c.size == size && c.column == column && c.queues == queues {
			return c
		}
	}
	return nil
}

// summaries reduces every cell and fills in the ratios to the baseline and
// to each cell's reference.
func (t *table) summaries() []summary {
	out := make([]summary, len(t.cells))
	for i, c := range t.cells {
		out[i] = c.summarise()
	}
	for i, c := range t.cells {
		if !out[i].ok {
			continue
		}
		if base := t.find(c.loop, c.size, colKernel, c.queues); base != nil {
			out[i].ratio = ratio(out[i].mpps, base.summarise().mpps)
		}
		if ref := reference(c.loop, c.column); ref != "" {
			out[i].ref = ref
			if rc := t.find(c.loop, c.size, ref, c.queues); rc != nil {
				out[i].refRatio = ratio(out[i].mpps, rc.summarise().mpps)
			}
		}
	}
	return out
}

// sizes lists the frame sizes of the table, in order.
func (t *table) sizes() []int {
	var out []int
	for _, c := range t.cells {
		if !slices.Contains(out, c.size) {
			out = append(out, c.size)
		}
	}
	slices.Sort(out)
	return out
}

// order sorts cells: loop, then frame size, then queue count, then
// columnOrder (each packetio column before its reference).
func (t *table) order() {
	rank := func(c *cell) int {
		if i := slices.Index(loops, c.loop); i >= 0 {
			return i
		}
		return len(loops)
	}
	sort.SliceStable(t.cells, func(i, j int) bool {
		a, b := t.cells[i], t.cells[j]
		if rank(a) != rank(b) {
			return rank(a) < rank(b)
		}
		if a.size != b.size {
			return a.size < b.size
		}
		if a.queues != b.queues {
			return a.queues < b.queues
		}
		return columnRank(a.column) < columnRank(b.column)
	})
}

func fmtNum(x float64, prec int) string {
	if math.IsNaN(x) {
		return "—"
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

// markdown writes the table as Markdown.
func (t *table) markdown(w io.Writer) error {
	var b strings.Builder
	h := t.header
	fmt.Fprintf(&b, "## packetio sweep, %s\n\n", h.date)
	fmt.Fprintf(&b, "- machine: %s, %d CPUs, Linux %s\n", h.cpu, h.cpus, h.kernel)
	fmt.Fprintf(&b, "- command: `%s`\n", h.command)
	fmt.Fprintf(&b, "- frame sizes on the wire, FCS included (64 is a 60-byte frame): %s; veth pair between two namespaces; median of %d pass(es), each a %s window after a %s warm-up, passes interleaved (every cell once per pass)\n",
		joinInts(t.sizes()), h.passes, h.window, h.warmup)
	fmt.Fprintf(&b, "- receive and forward are %s\n", h.feeder)
	b.WriteString("- Mpps: transmit counted at the sender, receive at the receive loop, forward as frames sent back out; Gbit/s: Mpps × frame bytes with FCS × 8 (no preamble or inter-frame gap); " +
		"cores: whole machine (user+sys+softirq from /proc/stat, feeder included), softirq share in parentheses; cores/Mpps: the median over passes of cores over Mpps, what a million packets a second cost the machine; " +
		"offered: what the feeder sent over the same window (a receiver at the offered rate is feeder-bound, not measured at its limit); " +
		"×kernel: Mpps over the kernel UDP baseline of the same loop, size and queue count; ref / ×ref: the column this one is held against (its C or DPDK twin) and Mpps over its, all measured in the same run\n\n")
	b.WriteString("| loop | size | queues | column | Mpps | Gbit/s | ×kernel | ref | ×ref | cores (softirq) | cores/Mpps | offered Mpps | passes (Mpps) |\n")
	b.WriteString("| --- | ---: | ---: | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- |\n")
	sums := t.summaries()
	for i, c := range t.cells {
		s := sums[i]
		x := fmtNum(s.ratio, 2)
		if c.column == colKernel && s.ok {
			x = "1.00"
		}
		ref, xref := "—", "—"
		if r := reference(c.loop, c.column); r != "" {
			ref, xref = r, fmtNum(s.refRatio, 2)
		} else if isReference(c.column) {
			ref = "(reference)"
		}
		cores := "—"
		if s.ok {
			cores = fmt.Sprintf("%s (%s)", fmtNum(s.cores, 2), fmtNum(s.softirq, 2))
		}
		var ps []string
		for _, p := range c.passes {
			ps = append(ps, fmtNum(p.mpps, 3))
		}
		passes := strings.Join(ps, " ")
		if c.note != "" {
			if passes != "" {
				passes += "; "
			}
			passes += c.note
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", c.loop, c.size, c.queues, c.column, fmtNum(s.mpps, 3), fmtNum(s.gbps, 2), x, ref, xref,
			cores, fmtNum(s.perMpps, 2), fmtNum(s.offered, 3), strings.ReplaceAll(passes, "|", "/"))
	}
	if len(h.notes) > 0 {
		b.WriteString("\n")
		for _, n := range h.notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func joinInts(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ", ")
}

// csvHeader is the first CSV line.
var csvHeader = []string{"loop", "size", "queues", "column", "passes", "mpps", "gbps", "ratio_kernel", "ref", "ratio_ref", "cores", "softirq", "cores_per_mpps", "offered_mpps", "mpps_per_pass", "note"}

// csv writes one line per cell. Missing numbers are empty fields.
func (t *table) csv(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	num := func(x float64, prec int) string {
		if math.IsNaN(x) {
			return ""
		}
		return strconv.FormatFloat(x, 'f', prec, 64)
	}
	sums := t.summaries()
	for i, c := range t.cells {
		s := sums[i]
		var ps []string
		for _, p := range c.passes {
			ps = append(ps, num(p.mpps, 4))
		}
		r := s.ratio
		if c.column == colKernel && s.ok {
			r = 1
		}
		rec := []string{c.loop, strconv.Itoa(c.size), strconv.Itoa(c.queues), c.column, strconv.Itoa(len(c.passes)),
			num(s.mpps, 4), num(s.gbps, 3), num(r, 3), reference(c.loop, c.column), num(s.refRatio, 3), num(s.cores, 3), num(s.softirq, 3), num(s.perMpps, 3),
			num(s.offered, 4), strings.Join(ps, ";"), c.note}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	return nil
}
