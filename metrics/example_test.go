package metrics_test

import (
	"fmt"

	"github.com/packetio/packetio/metrics"
	"github.com/packetio/packetio/pipe"
	"github.com/prometheus/client_golang/prometheus"
)

// Register one Collector per device, then serve the registry as usual
// (promhttp.HandlerFor(reg, promhttp.HandlerOpts{})). The interface label
// names the device; a pipe has no interface, so it is named here.
func ExampleNewCollector() {
	a, b, err := pipe.New()
	if err != nil {
		panic(err)
	}
	defer a.Close()
	defer b.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewCollector(a, "pipe-a"))

	fams, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range fams {
		if f.GetName() == "packetio_queue_up" {
			for _, m := range f.GetMetric() {
				fmt.Println(f.GetName(), m.GetLabel()[1].GetValue(), m.GetGauge().GetValue())
			}
		}
	}
	// Output:
	// packetio_queue_up rx 1
	// packetio_queue_up tx 1
}
