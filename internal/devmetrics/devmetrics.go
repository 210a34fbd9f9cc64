// Package devmetrics flattens a Device's queue counters into metric samples
// (name, help, type, labels, value) with no dependency beyond the standard
// library, and writes them in the Prometheus text exposition format 0.0.4.
//
// It is the one place the metric names live: the prometheus Collector of
// the metrics module (github.com/packetio/packetio/metrics) converts these
// samples, and the examples' -metrics server writes them with WriteText, so
// the two can never name a series differently. The root module stays free
// of the prometheus client.
//
// Every counter of TxStats and RxStats is a counter family named after the
// field (packetio_packets_total, ...) labelled backend, interface, queue
// and direction ("tx" or "rx"). Backend-only counters go to
// packetio_backend_total with a key label; the few Backend entries that are
// levels or identifiers rather than counts (see IsGaugeKey) go to the gauge
// packetio_backend_value. Every queue has packetio_queue_up (1 or 0); a
// queue that is down (its Err or its Stats returned an error) also has
// packetio_queue_down{reason} 1, reason one of closed, device_gone, wedged,
// failed or error. When Stats fails its counters are left out (a failing
// Stats returns zeros, which would read as a counter reset), and the
// up/down pair says why: a series never goes missing silently.
package devmetrics

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/packetio/packetio"
)

// Kind is a family's metric type.
type Kind uint8

const (
	// Counter only goes up (from Open).
	Counter Kind = iota
	// Gauge goes up and down.
	Gauge
)

// String is the type's name in the text format.
func (k Kind) String() string {
	if k == Gauge {
		return "gauge"
	}
	return "counter"
}

// Family is one metric family: its name, help, type and the names of its
// labels after the common ones (backend, interface, queue, direction).
type Family struct {
	Name  string
	Help  string
	Kind  Kind
	Extra string // the name of the one extra label, or ""
}

// The family indexes of Families.
const (
	FamQueueUp = iota
	FamQueueDown
	FamPackets
	FamBytes
	FamCompleted
	FamBatches
	FamCompletions
	FamRingFull
	FamPoolEmpty
	FamErrors
	FamRefused
	FamFilled
	FamPolls
	FamDropped
	FamBackendTotal
	FamBackendValue
	numFamilies
)

// CommonLabels are the labels every sample has, in this order, before the
// family's Extra label.
func CommonLabels() []string { return []string{"backend", "interface", "queue", "direction"} }

// Families returns every family, indexed by the Fam constants. It returns a
// new slice each call (there is no package state to change).
func Families() []Family {
	return []Family{
		FamQueueUp:      {"packetio_queue_up", "1 while the queue is healthy (Err and Stats return nil), 0 once it is closed or failed.", Gauge, ""},
		FamQueueDown:    {"packetio_queue_down", "1 for a queue that is down, labelled with why: closed, device_gone, wedged, failed or error.", Gauge, "reason"},
		FamPackets:      {"packetio_packets_total", "Packets Transmit accepted (tx) or Receive handed to the caller (rx).", Counter, ""},
		FamBytes:        {"packetio_bytes_total", "Bytes of those packets.", Counter, ""},
		FamCompleted:    {"packetio_completed_total", "Transmitted frames handed back by Complete or Reclaim (tx).", Counter, ""},
		FamBatches:      {"packetio_batches_total", "Batches published to the NIC (tx) or receive calls that returned packets (rx).", Counter, ""},
		FamCompletions:  {"packetio_completions_total", "Completion events consumed.", Counter, ""},
		FamRingFull:     {"packetio_ring_full_total", "Transmit calls that queued nothing because the ring was full (tx).", Counter, ""},
		FamPoolEmpty:    {"packetio_pool_empty_total", "Allocations (tx) or refills (rx) that got nothing because every frame was in flight or held.", Counter, ""},
		FamErrors:       {"packetio_errors_total", "Kernel or hardware errors and frames they lost (tx); error completions and malformed descriptors (rx).", Counter, ""},
		FamRefused:      {"packetio_refused_total", "Descriptors Transmit or Free turned away and left with the caller (tx).", Counter, ""},
		FamFilled:       {"packetio_filled_total", "Frames posted to the NIC for receive (rx).", Counter, ""},
		FamPolls:        {"packetio_polls_total", "Poll calls (rx).", Counter, ""},
		FamDropped:      {"packetio_dropped_total", "Packets the NIC or kernel discarded before the caller saw them (rx).", Counter, ""},
		FamBackendTotal: {"packetio_backend_total", "A backend-only counter of the queue, named by key (Stats().Backend).", Counter, "key"},
		FamBackendValue: {"packetio_backend_value", "A backend-only level or identifier of the queue, named by key (Stats().Backend): not a count.", Gauge, "key"},
	}
}

// IsGaugeKey reports whether the Backend entry key is a level or an
// identifier (packetio_backend_value) rather than a counter
// (packetio_backend_total): it may go down. Backend entries are counters
// unless listed here.
func IsGaugeKey(key string) bool {
	switch key {
	case "cqn", "failed_ring", "in_flight", "inline_bytes", "last_errno", "last_syndrome",
		"last_vendor_syndrome", "mode", "outstanding", "qpn", "rings", "rq_entries", "sq_blocks":
		return true
	}
	return false
}

// Sample is one value of one series. Backend and Interface are the
// device's and the same for every sample of one Append.
type Sample struct {
	Family    int    // index into Families
	Backend   string // Capabilities().Backend
	Interface string // as the caller named it
	Queue     int
	Direction string // "tx" or "rx"
	Extra     string // the value of the family's Extra label
	Value     float64
}

// LabelValues returns the sample's label values in the order of
// CommonLabels followed by the family's Extra label if it has one.
func (s Sample) LabelValues(f Family) []string {
	v := []string{s.Backend, s.Interface, strconv.Itoa(s.Queue), s.Direction}
	if f.Extra != "" {
		v = append(v, s.Extra)
	}
	return v
}

// DownReason names why a queue whose Err or Stats returned err is down.
func DownReason(err error) string {
	switch {
	case errors.Is(err, packetio.ErrClosed):
		return "closed"
	case errors.Is(err, packetio.ErrDeviceGone):
		return "device_gone"
	case errors.Is(err, packetio.ErrWedged):
		return "wedged"
	case errors.Is(err, packetio.ErrQueueFailed):
		return "failed"
	}
	return "error"
}

// Append appends the samples of every queue of d to dst and returns it:
// transmit queues first, then receive queues, each queue's samples in
// family order and its backend entries sorted by key. iface is the
// interface label (a Device does not know its interface's name).
//
// It calls only Capabilities, the queue counts, and each queue's Err and
// Stats, which are safe from any goroutine, so it never waits for the
// goroutines driving the queues.
func Append(dst []Sample, d packetio.Device, iface string) []Sample {
	if d == nil {
		return dst
	}
	be := d.Capabilities().Backend
	for i := 0; i < d.NumTxQueues(); i++ {
		q := d.TxQueue(i)
		if q == nil {
			continue
		}
		s, serr := q.Stats()
		base := Sample{Backend: be, Interface: iface, Queue: i, Direction: "tx"}
		var ok bool
		dst, ok = appendUp(dst, base, q.Err(), serr)
		if !ok {
			continue
		}
		dst = appendCounters(dst, base,
			[...]int{FamPackets, FamBytes, FamCompleted, FamBatches, FamCompletions, FamRingFull, FamPoolEmpty, FamErrors, FamRefused},
			[...]uint64{s.Packets, s.Bytes, s.Completed, s.Batches, s.Completions, s.RingFull, s.PoolEmpty, s.Errors, s.Refused})
		dst = appendBackend(dst, base, s.Backend)
	}
	for i := 0; i < d.NumRxQueues(); i++ {
		q := d.RxQueue(i)
		if q == nil {
			continue
		}
		s, serr := q.Stats()
		base := Sample{Backend: be, Interface: iface, Queue: i, Direction: "rx"}
		var ok bool
		dst, ok = appendUp(dst, base, q.Err(), serr)
		if !ok {
			continue
		}
		dst = appendCounters(dst, base,
			[...]int{FamPackets, FamBytes, FamFilled, FamBatches, FamPolls, FamCompletions, FamPoolEmpty, FamErrors, FamDropped},
			[...]uint64{s.Packets, s.Bytes, s.Filled, s.Batches, s.Polls, s.Completions, s.PoolEmpty, s.Errors, s.Dropped})
		dst = appendBackend(dst, base, s.Backend)
	}
	return dst
}

// appendUp appends the queue's up gauge, and its down reason when it is
// down, and reports whether its counters are to be appended (Stats
// succeeded).
func appendUp(dst []Sample, base Sample, qerr, serr error) ([]Sample, bool) {
	up := base
	up.Family = FamQueueUp
	err := qerr
	if err == nil {
		err = serr
	}
	if err == nil {
		up.Value = 1
		return append(dst, up), true
	}
	down := base
	down.Family, down.Extra, down.Value = FamQueueDown, DownReason(err), 1
	return append(dst, up, down), serr == nil
}

func appendCounters(dst []Sample, base Sample, fams [9]int, vals [9]uint64) []Sample {
	for i, f := range fams {
		s := base
		s.Family, s.Value = f, float64(vals[i])
		dst = append(dst, s)
	}
	return dst
}

func appendBackend(dst []Sample, base Sample, m map[string]uint64) []Sample {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		s := base
		s.Family, s.Extra, s.Value = FamBackendTotal, k, float64(m[k])
		if IsGaugeKey(k) {
			s.Family = FamBackendValue
		}
		dst = append(dst, s)
	}
	return dst
}

// Source is one device and the interface label its samples carry.
type Source struct {
	Device    packetio.Device
	Interface string
}

// ContentType is the media type of the text exposition format WriteText
// writes.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// WriteText writes samples in the Prometheus text exposition format 0.0.4:
// each family that has samples once, with its HELP and TYPE lines, then
// its samples in the order given.
func WriteText(w io.Writer, samples []Sample) error {
	fams := Families()
	labels := CommonLabels()
	var b strings.Builder
	for fi, f := range fams {
		first := true
		for _, s := range samples {
			if s.Family != fi {
				continue
			}
			if first {
				b.WriteString("# HELP " + f.Name + " " + escape(f.Help, false) + "\n")
				b.WriteString("# TYPE " + f.Name + " " + f.Kind.String() + "\n")
				first = false
			}
			b.WriteString(f.Name)
			b.WriteByte('{')
			for i, v := range s.LabelValues(f) {
				if i > 0 {
					b.WriteByte(',')
				}
				name := f.Extra
				if i < len(labels) {
					name = labels[i]
				}
				b.WriteString(name + `="` + escape(v, true) + `"`)
			}
			b.WriteString("} ")
			b.WriteString(strconv.FormatFloat(s.Value, 'g', -1, 64))
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// escape escapes a help text (backslash, newline) or a label value (also
// the double quote) for the text format.
func escape(s string, quote bool) string {
	if !strings.ContainsAny(s, "\\\n\"") {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '"' && quote:
			b.WriteString(`\"`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Handler serves the samples of every source, read afresh on each request,
// in the text exposition format. It is what the examples' -metrics flag
// serves; the metrics module's Collector reports the same series.
func Handler(sources ...Source) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var samples []Sample
		for _, src := range sources {
			samples = Append(samples, src.Device, src.Interface)
		}
		w.Header().Set("Content-Type", ContentType)
		WriteText(w, samples)
	})
}
