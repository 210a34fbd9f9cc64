package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// Chart geometry, in SVG user units: one panel per loop (rows) and frame
// size and queue count (columns), a horizontal bar per column of the
// table in each.
const (
	svgMargin  = 20
	svgTop     = 78 // title and legend
	svgPanelW  = 520
	svgNameW   = 112 // column names left of the bars
	svgBarsW   = 220 // the longest bar: the panel's axis maximum
	svgBarH    = 14
	svgBarStep = 18
	svgPanelHd = 34 // panel title and axis labels
	svgPanelFt = 22 // space under a panel
)

// colours of the column families (references take their packetio
// column's, hatched).
var colours = map[string]string{
	colKernel: "#8c8c8c", colAfpacket: "#1f77b4", colAfxdp: "#ff7f0e", colAfxdpBusy: "#d62728", colDpdkPacket: "#2ca02c", colDpdkXDP: "#9467bd",
}

func colourOf(column string) string {
	if c, ok := colours[family(column)]; ok {
		return c
	}
	return "#444444"
}

// panel is the cells of one loop, size and queue count.
type panel struct {
	loop         string
	size, queues int
	idx          []int // into table.cells
}

// panels groups the (ordered) cells.
func (t *table) panels() (rows [][]*panel) {
	var cur []*panel
	for i, c := range t.cells {
		if len(cur) > 0 && cur[0].loop != c.loop {
			rows, cur = append(rows, cur), nil
		}
		if n := len(cur); n == 0 || cur[n-1].size != c.size || cur[n-1].queues != c.queues {
			cur = append(cur, &panel{loop: c.loop, size: c.size, queues: c.queues})
		}
		p := cur[len(cur)-1]
		p.idx = append(p.idx, i)
	}
	if len(cur) > 0 {
		rows = append(rows, cur)
	}
	return rows
}

// svg draws the table so that its first impression is the truth: every
// bar starts at zero on its panel's own axis (marked with its scale),
// packetio columns are solid and the references they are held against are
// hatched next to them, the kernel baseline is a dashed line across the
// panel, and the panel's most Mpps is starred. Every bar is labelled with
// its Mpps, Gbit/s and cores per Mpps.
func (t *table) svg(w io.Writer) error {
	sums := t.summaries()
	rows := t.panels()
	ncol := 1
	panelH := 0
	for _, r := range rows {
		ncol = max(ncol, len(r))
		for _, p := range r {
			panelH = max(panelH, svgPanelHd+len(p.idx)*svgBarStep+svgPanelFt)
		}
	}
	width := 2*svgMargin + ncol*svgPanelW
	footer := wrap("receive and forward "+t.feeder, width/6)
	height := svgTop + len(rows)*panelH + 16 + 12*len(footer)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	b.WriteString("<defs>\n")
	for _, f := range []string{colAfpacket, colAfxdp, colAfxdpBusy, colDpdkPacket, colDpdkXDP} {
		fmt.Fprintf(&b, `<pattern id="%s" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="white"/><rect width="3" height="6" fill="%s"/></pattern>`+"\n", hatchID(f), colours[f])
	}
	b.WriteString("</defs>\n")
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="15">%s</text>`+"\n", svgMargin, html.EscapeString(fmt.Sprintf("packetio sweep %s: median Mpps per loop and frame size (%d passes)", t.date, t.passes)))
	// Legend.
	y := 40
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="18" height="10" fill="%s"/><text x="%d" y="%d">packetio (solid)</text>`+"\n", svgMargin, y, colours[colAfxdp], svgMargin+22, y+9)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="18" height="10" fill="url(#%s)" stroke="%s"/><text x="%d" y="%d">its reference, C or DPDK or a packet tool (hatched, in the bar below it)</text>`+"\n", svgMargin+130, y, hatchID(colAfxdp), colours[colAfxdp], svgMargin+152, y+9)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black" stroke-dasharray="4,3"/><text x="%d" y="%d">kernel UDP baseline</text>`+"\n", svgMargin+560, y-2, svgMargin+560, y+12, svgMargin+566, y+9)
	fmt.Fprintf(&b, `<text x="%d" y="%d">★ most Mpps in the panel · labels: Mpps, Gbit/s, cores per Mpps (whole machine) · each panel has its own scale, from zero</text>`+"\n", svgMargin, y+26)
	for ri, r := range rows {
		for ci, p := range r {
			t.drawPanel(&b, sums, p, svgMargin+ci*svgPanelW, svgTop+ri*panelH)
		}
	}
	for i, line := range footer {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10">%s</text>`+"\n", svgMargin, svgTop+len(rows)*panelH+4+12*i, html.EscapeString(line))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func hatchID(family string) string {
	return "hatch-" + strings.NewReplacer("/", "-", "+", "-").Replace(family)
}

// drawPanel draws one panel with its top left corner at x0, y0.
func (t *table) drawPanel(b *strings.Builder, sums []summary, p *panel, x0, y0 int) {
	top, best, base := 0.0, -1, math.NaN()
	for _, i := range p.idx {
		if s := sums[i]; s.ok {
			top = max(top, s.mpps)
			if best < 0 || s.mpps > sums[best].mpps {
				best = i
			}
			if t.cells[i].column == colKernel {
				base = s.mpps
			}
		}
	}
	scale := niceCeil(top)
	title := fmt.Sprintf("%s, %d-byte frames", p.loop, p.size)
	if p.queues > 1 {
		title += fmt.Sprintf(", %d queues", p.queues)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="13" font-weight="bold">%s</text>`+"\n", x0, y0+12, html.EscapeString(title))
	bx := x0 + svgNameW
	barsTop := y0 + svgPanelHd
	barsBottom := barsTop + len(p.idx)*svgBarStep
	for k := 0; k <= 4; k++ {
		v := scale * float64(k) / 4
		x := bx + int(math.Round(float64(svgBarsW)*float64(k)/4))
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#e0e0e0"/><text x="%d" y="%d" text-anchor="middle" font-size="9" fill="#555">%s</text>`+"\n",
			x, barsTop-4, x, barsBottom, x, barsTop-7, strconv.FormatFloat(v, 'g', 4, 64))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" font-size="9" fill="#555">Mpps</text>`+"\n", bx+svgBarsW+6, barsTop-7)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", bx, barsTop-4, bx, barsBottom)
	for k, i := range p.idx {
		c, s := t.cells[i], sums[i]
		y := barsTop + k*svgBarStep
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", bx-4, y+11, html.EscapeString(c.column))
		if !s.ok {
			why := "no number"
			if c.note != "" {
				why, _, _ = strings.Cut(c.note, ":")
			}
			fmt.Fprintf(b, `<text x="%d" y="%d" font-size="9" fill="#777">— %s</text>`+"\n", bx+4, y+10, html.EscapeString(why))
			continue
		}
		wbar := 0
		if scale > 0 {
			wbar = int(math.Round(s.mpps / scale * svgBarsW))
		}
		fill, stroke := colourOf(c.column), "none"
		if isReference(c.column) {
			fill, stroke = "url(#"+hatchID(family(c.column))+")", colourOf(c.column)
		}
		tip := fmt.Sprintf("%s %s %d bytes %dq: %.3f Mpps, %.2f Gbit/s, %.2f cores (%.2f softirq), %.2f cores/Mpps", c.column, c.loop, c.size, c.queues, s.mpps, s.gbps, s.cores, s.softirq, s.perMpps)
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="%s"><title>%s</title></rect>`+"\n", bx, y, wbar, svgBarH, fill, stroke, html.EscapeString(tip))
		label := fmt.Sprintf("%s Mpps · %s Gb/s · %s c/Mpps", fmtNum(s.mpps, 3), fmtNum(s.gbps, 2), fmtNum(s.perMpps, 2))
		weight := ""
		if i == best {
			label, weight = "★ "+label, ` font-weight="bold"`
		}
		fmt.Fprintf(b, `<text x="%d" y="%d" font-size="9"%s>%s</text>`+"\n", bx+wbar+4, y+11, weight, html.EscapeString(label))
	}
	if !math.IsNaN(base) && scale > 0 {
		x := bx + int(math.Round(base/scale*svgBarsW))
		fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black" stroke-dasharray="4,3"/>`+"\n", x, barsTop-2, x, barsBottom+2)
	}
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

// niceCeil rounds x up to 1, 1.5, 2, 3, 4, 5, 6 or 8 times a power of ten
// (1 for x <= 0), so the longest bar fills most of its axis.
func niceCeil(x float64) float64 {
	if x <= 0 || math.IsNaN(x) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 1.5, 2, 3, 4, 5, 6, 8, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}
