// Package metrics exports a packetio Device's queue counters to Prometheus.
//
// NewCollector returns a prometheus.Collector over one Device: every
// counter of every queue's TxStats and RxStats, every backend-only counter
// (Stats().Backend), and whether each queue is up. It is a module of its
// own so that programs that only move frames do not pull the Prometheus
// client in.
//
// The metric names and labels come from the root module's flattening
// (internal/devmetrics), which the examples' -metrics flag also serves
// without this module, so the two never drift; see README.md for the table.
//
// A queue that is down is never a silently missing series:
// packetio_queue_up is 0 and packetio_queue_down{reason} is 1 (closed,
// device_gone, wedged, failed or error). Where its Stats call failed, its
// counters are left out of that scrape rather than reported as zeros, which
// Prometheus would read as a counter reset. Errors are not sent as invalid
// metrics: with promhttp's default handler options one dead queue would
// then fail the whole scrape, every healthy device's series with it.
//
// Collect calls only the queues' Err and Stats, which the Device contract
// makes safe from any goroutine, and the queue counts: it never waits for
// the goroutines driving the queues and never touches a ring.
package metrics

import (
	"strconv"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/devmetrics"
	"github.com/prometheus/client_golang/prometheus"
)

// Collector is a prometheus.Collector over one Device. Its Describe is
// complete (every family it can report, with fixed label names), so it is
// a checked collector. The backend and interface are constant labels of its
// descriptors, so one registry takes a collector per device as long as
// their interfaces (or backends) differ. The zero Collector describes and
// collects nothing.
type Collector struct {
	dev   packetio.Device
	iface string
	descs []*prometheus.Desc // indexed like devmetrics.Families
}

// NewCollector returns a Collector over d whose series carry the label
// interface=iface (a Device does not know its interface's name; a pipe
// device has none, so name it). The backend label is
// d.Capabilities().Backend.
func NewCollector(d packetio.Device, iface string) *Collector {
	c := &Collector{dev: d, iface: iface}
	if d == nil {
		return c
	}
	constant := prometheus.Labels{"backend": d.Capabilities().Backend, "interface": iface}
	for _, f := range devmetrics.Families() {
		vars := []string{"queue", "direction"}
		if f.Extra != "" {
			vars = append(vars, f.Extra)
		}
		c.descs = append(c.descs, prometheus.NewDesc(f.Name, f.Help, vars, constant))
	}
	return c
}

// Describe sends the descriptor of every family the Collector can report.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect reads every queue's Err and Stats and sends one metric per
// series. It never blocks the queues' goroutines (see the package doc).
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if c.dev == nil || len(c.descs) == 0 {
		return
	}
	fams := devmetrics.Families()
	for _, s := range devmetrics.Append(nil, c.dev, c.iface) {
		vt := prometheus.CounterValue
		if fams[s.Family].Kind == devmetrics.Gauge {
			vt = prometheus.GaugeValue
		}
		lv := []string{strconv.Itoa(s.Queue), s.Direction}
		if fams[s.Family].Extra != "" {
			lv = append(lv, s.Extra)
		}
		m, err := prometheus.NewConstMetric(c.descs[s.Family], vt, s.Value, lv...)
		if err != nil {
			m = prometheus.NewInvalidMetric(c.descs[s.Family], err)
		}
		ch <- m
	}
}
