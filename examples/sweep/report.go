package main

import (
	"encoding/csv"
	"fmt"
	"html"
	"io"
	"math"
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

// colKernel is the baseline column: plain kernel UDP sockets.
const colKernel = "kernel"

// sample is one pass of one cell: the rate over the window and what the
// whole machine spent meanwhile, in cores.
type sample struct {
	mpps, cores, softirq float64
	// offered is the feeder's rate over the same window, in Mpps; NaN
	// where nothing feeds (transmit).
	offered float64
}

// cell is one (loop, column, queue count) of the table.
type cell struct {
	loop   string
	column string // colKernel, a backend name, or a testpmd column
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
	// ratio is mpps over the kernel baseline's of the same loop and queue
	// count; NaN when there is no baseline number.
	ratio float64
	ok    bool
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
	if len(c.passes) == 0 {
		return summary{mpps: math.NaN(), cores: math.NaN(), softirq: math.NaN(), offered: math.NaN(), ratio: math.NaN()}
	}
	var m, co, si, of []float64
	for _, p := range c.passes {
		m, co, si = append(m, p.mpps), append(co, p.cores), append(si, p.softirq)
		if !math.IsNaN(p.offered) {
			of = append(of, p.offered)
		}
	}
	return summary{mpps: median(m), cores: median(co), softirq: median(si), offered: median(of), ratio: math.NaN(), ok: true}
}

// header is what the table says about where and how it was measured.
type header struct {
	date, cpu, kernel, command string
	cpus                       int
	size                       int // frame bytes on the wire, with FCS
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
func (t *table) find(loop, column string, queues int) *cell {
	for _, c := range t.cells {
		if c.loop == loop && c.column == column && c.queues == queues {
			return c
		}
	}
	return nil
}

// summaries reduces every cell and fills in the ratios to the baseline.
func (t *table) summaries() []summary {
	out := make([]summary, len(t.cells))
	for i, c := range t.cells {
		out[i] = c.summarise()
	}
	for i, c := range t.cells {
		if base := t.find(c.loop, colKernel, c.queues); base != nil && out[i].ok {
			out[i].ratio = ratio(out[i].mpps, base.summarise().mpps)
		}
	}
	return out
}

// order sorts cells: loop, then queue count, then the kernel first, then
// backends by name, the testpmd columns last.
func (t *table) order() {
	rank := func(c *cell) int {
		for i, l := range loops {
			if c.loop == l {
				return i
			}
		}
		return len(loops)
	}
	colRank := func(s string) string {
		switch {
		case s == colKernel:
			return "0"
		case isTestpmd(s):
			return "2" + s
		}
		return "1" + s
	}
	sort.SliceStable(t.cells, func(i, j int) bool {
		a, b := t.cells[i], t.cells[j]
		if rank(a) != rank(b) {
			return rank(a) < rank(b)
		}
		if a.queues != b.queues {
			return a.queues < b.queues
		}
		return colRank(a.column) < colRank(b.column)
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
	fmt.Fprintf(&b, "- %d-byte frames on the wire (%d without FCS), veth pair between two namespaces; median of %d pass(es), each a %s window after a %s warm-up\n",
		h.size, h.size-4, h.passes, h.window, h.warmup)
	fmt.Fprintf(&b, "- receive and forward are %s\n", h.feeder)
	b.WriteString("- Mpps: transmit counted at the sender, receive at the receive loop, forward as frames sent back out; cores: whole machine (user+sys+softirq from /proc/stat, feeder included), softirq share in parentheses; offered: what the feeder sent over the same window (a receiver at the offered rate is feeder-bound, not measured at its limit); ×kernel: Mpps over the kernel UDP baseline of the same loop and queue count, measured in the same run\n\n")
	b.WriteString("| loop | queues | column | Mpps | ×kernel | cores (softirq) | offered Mpps | passes (Mpps) |\n")
	b.WriteString("| --- | ---: | --- | ---: | ---: | ---: | ---: | --- |\n")
	sums := t.summaries()
	for i, c := range t.cells {
		s := sums[i]
		x := "—"
		if c.column == colKernel && s.ok {
			x = "1.00"
		} else if !math.IsNaN(s.ratio) {
			x = fmtNum(s.ratio, 2)
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
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", c.loop, c.queues, c.column, fmtNum(s.mpps, 3), x, cores, fmtNum(s.offered, 3), strings.ReplaceAll(passes, "|", "/"))
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

// csvHeader is the first CSV line.
var csvHeader = []string{"loop", "queues", "column", "size", "passes", "mpps", "ratio_kernel", "cores", "softirq", "offered_mpps", "mpps_per_pass", "note"}

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
		rec := []string{c.loop, strconv.Itoa(c.queues), c.column, strconv.Itoa(t.size), strconv.Itoa(len(c.passes)),
			num(s.mpps, 4), num(r, 3), num(s.cores, 3), num(s.softirq, 3), num(s.offered, 4), strings.Join(ps, ";"), c.note}
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

// Chart geometry, in SVG user units.
const (
	svgBar    = 22
	svgGap    = 18 // between groups
	svgLeft   = 60
	svgTop    = 50
	svgPlotH  = 260
	svgBottom = 70
)

// palette colours the columns in the order they first appear.
var palette = []string{"#7f7f7f", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"}

// svg draws the table as grouped bars: one group per loop and queue count,
// one bar per column, its height the median Mpps, with the ratio to the
// kernel written above it.
func (t *table) svg(w io.Writer) error {
	sums := t.summaries()
	type group struct {
		label string
		idx   []int
	}
	var groups []group
	var columns []string
	for i, c := range t.cells {
		label := fmt.Sprintf("%s, %dq", c.loop, c.queues)
		if len(groups) == 0 || groups[len(groups)-1].label != label {
			groups = append(groups, group{label: label})
		}
		groups[len(groups)-1].idx = append(groups[len(groups)-1].idx, i)
		seen := false
		for _, col := range columns {
			seen = seen || col == c.column
		}
		if !seen {
			columns = append(columns, c.column)
		}
	}
	colour := func(col string) string {
		for i, c := range columns {
			if c == col {
				return palette[i%len(palette)]
			}
		}
		return palette[0]
	}
	top := 0.0
	for _, s := range sums {
		if s.ok && s.mpps > top {
			top = s.mpps
		}
	}
	scaleMax := niceCeil(top)
	width := svgLeft + 20
	for _, g := range groups {
		width += len(g.idx)*svgBar + svgGap
	}
	width = max(width, 680)
	footer := wrap("receive and forward "+t.feeder, width/6)
	height := svgTop + svgPlotH + svgBottom + 12*len(footer)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14">%s</text>`+"\n", svgLeft, html.EscapeString(fmt.Sprintf("packetio sweep %s: median Mpps, %d-byte frames (label: ×kernel)", t.date, t.size)))
	// Legend.
	x := svgLeft
	for _, col := range columns {
		fmt.Fprintf(&b, `<rect x="%d" y="28" width="10" height="10" fill="%s"/><text x="%d" y="37">%s</text>`+"\n", x, colour(col), x+14, html.EscapeString(col))
		x += 24 + 7*len(col)
	}
	// Axis and grid.
	base := svgTop + svgPlotH
	for i := 0; i <= 4; i++ {
		v := scaleMax * float64(i) / 4
		y := base - int(math.Round(float64(svgPlotH)*float64(i)/4))
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#ddd"/><text x="%d" y="%d" text-anchor="end">%s</text>`+"\n",
			svgLeft, y, width-10, y, svgLeft-4, y+4, strconv.FormatFloat(v, 'g', 4, 64))
	}
	fmt.Fprintf(&b, `<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">Mpps</text>`+"\n", svgTop+svgPlotH/2, svgTop+svgPlotH/2)
	x = svgLeft + 10
	for _, g := range groups {
		gx := x
		for _, i := range g.idx {
			s, c := sums[i], t.cells[i]
			if s.ok && scaleMax > 0 {
				h := int(math.Round(s.mpps / scaleMax * svgPlotH))
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s</title></rect>`+"\n",
					x, base-h, svgBar-2, h, colour(c.column), html.EscapeString(fmt.Sprintf("%s %s %dq: %.3f Mpps, %.2f cores (%.2f softirq)", c.column, c.loop, c.queues, s.mpps, s.cores, s.softirq)))
				label := fmtNum(s.ratio, 2)
				if c.column == colKernel {
					label = "1.00"
				}
				fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="9">%s</text>`+"\n", x+svgBar/2-1, base-h-3, label)
			} else {
				fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="9">—</text>`+"\n", x+svgBar/2-1, base-3)
			}
			x += svgBar
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", (gx+x)/2, base+16, html.EscapeString(g.label))
		x += svgGap
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", svgLeft, base, width-10, base)
	for i, line := range footer {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10">%s</text>`+"\n", svgLeft, base+40+12*i, html.EscapeString(line))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// wrap breaks s into lines of at most n bytes at spaces (a longer word
// gets a line of its own).
func wrap(s string, n int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > n {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// niceCeil rounds x up to 1, 2 or 5 times a power of ten (1 for x <= 0).
func niceCeil(x float64) float64 {
	if x <= 0 || math.IsNaN(x) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}
