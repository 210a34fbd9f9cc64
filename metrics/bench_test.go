package metrics_test

import (
	"bytes"
	"testing"

	"github.com/packetio/packetio/internal/devmetrics"
	"github.com/packetio/packetio/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkCollect is one Collect of a device with 4 transmit and 4
// receive queues (pipe), its metrics drained; it reports the series and
// the bytes of the text scrape.
func BenchmarkCollect(b *testing.B) {
	a, _ := newPipe(b, 4)
	c := metrics.NewCollector(a, "pipe-a")
	ch := make(chan prometheus.Metric, 1024)
	var buf bytes.Buffer
	devmetrics.WriteText(&buf, devmetrics.Append(nil, a, "pipe-a"))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		c.Collect(ch)
		n = len(ch)
		for len(ch) > 0 {
			<-ch
		}
	}
	b.ReportMetric(float64(n), "series")
	b.ReportMetric(float64(buf.Len()), "scrape-bytes")
}

// BenchmarkText is one scrape of the examples' text server's work for the
// same device: flatten and write.
func BenchmarkText(b *testing.B) {
	a, _ := newPipe(b, 4)
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		devmetrics.WriteText(&buf, devmetrics.Append(nil, a, "pipe-a"))
	}
}
