package metrics_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/devmetrics"
	"github.com/packetio/packetio/metrics"
	"github.com/packetio/packetio/pipe"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// frame is a 60-byte broadcast frame of the local experimental EtherType.
func frame(b []byte) int {
	for i := range 6 {
		b[i] = 0xff
	}
	b[6], b[7], b[12], b[13] = 0x02, 0x70, 0x88, 0xb5
	return 60
}

// move sends n frames on tx and receives them on rx, in batches of 32,
// and reports how many arrived. It gives up when rx stays quiet for 5 s
// (the caller compares the count).
func move(t *testing.T, tx packetio.TxQueue, rx packetio.RxQueue, n int) int {
	t.Helper()
	got := 0
	rx.Fill(rx.NumFreeFillSlots())
	for sent := 0; sent < n; {
		k, err := tx.SendFunc(min(32, n-sent), func(_ int, b []byte) int { return frame(b) })
		if err != nil {
			t.Fatalf("SendFunc: %v", err)
		}
		if err := tx.Err(); err != nil {
			t.Fatalf("tx: %v", err)
		}
		sent += k
		got += receive(rx, sent-got)
	}
	tx.Complete(1 << 20)
	return got
}

// receive takes up to n packets from rx, refilling as it goes, until it has
// them or the queue stays quiet for 5 s.
func receive(rx packetio.RxQueue, n int) int {
	got := 0
	for quiet := 0; got < n && quiet < 50; {
		rx.Poll(100 * time.Millisecond)
		d := rx.Receive(min(64, n-got))
		if len(d) == 0 {
			quiet++
		}
		got += len(d)
		rx.Recycle(d)
		rx.Fill(rx.NumFreeFillSlots())
	}
	return got
}

// series is one scraped value, keyed by family name and sorted labels.
type series map[string]float64

func key(name string, labels map[string]string) string {
	var l []string
	for k, v := range labels {
		l = append(l, k+"="+v)
	}
	sort.Strings(l)
	return name + "{" + strings.Join(l, ",") + "}"
}

// fromFamilies flattens gathered or parsed families, and checks each has
// the help and type the flattening says.
func fromFamilies(t *testing.T, fams []*dto.MetricFamily) series {
	t.Helper()
	want := map[string]devmetrics.Family{}
	for _, f := range devmetrics.Families() {
		want[f.Name] = f
	}
	s := series{}
	for _, mf := range fams {
		f, ok := want[mf.GetName()]
		if !ok {
			t.Errorf("unknown family %s", mf.GetName())
			continue
		}
		wt := dto.MetricType_COUNTER
		if f.Kind == devmetrics.Gauge {
			wt = dto.MetricType_GAUGE
		}
		if mf.GetType() != wt || mf.GetHelp() != f.Help {
			t.Errorf("%s: type %v help %q, want %v %q", f.Name, mf.GetType(), mf.GetHelp(), wt, f.Help)
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			v := m.GetCounter().GetValue()
			if wt == dto.MetricType_GAUGE {
				v = m.GetGauge().GetValue()
			}
			k := key(mf.GetName(), l)
			if _, dup := s[k]; dup {
				t.Errorf("series %s twice", k)
			}
			s[k] = v
		}
	}
	return s
}

func gather(t *testing.T, cs ...prometheus.Collector) series {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			t.Fatalf("Register: %v", err)
		}
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	return fromFamilies(t, fams)
}

// scrape reads the examples' text server and parses it with expfmt.
func scrape(t *testing.T, srcs ...devmetrics.Source) series {
	t.Helper()
	srv := httptest.NewServer(devmetrics.Handler(srcs...))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); expfmt.ResponseFormat(resp.Header).FormatType() != expfmt.TypeTextPlain {
		t.Fatalf("Content-Type %q is not the text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing the scrape: %v", err)
	}
	var l []*dto.MetricFamily
	for _, f := range fams {
		l = append(l, f)
	}
	return fromFamilies(t, l)
}

// checkStats checks that every counter of every queue of d is in s with
// Stats' value, and that the queue is up. exact also compares the backend
// entries (their counters must not move meanwhile).
func checkStats(t *testing.T, s series, d packetio.Device, iface string, exact bool) {
	t.Helper()
	be := d.Capabilities().Backend
	lab := func(q int, dir string, extra ...string) map[string]string {
		l := map[string]string{"backend": be, "interface": iface, "queue": fmt.Sprint(q), "direction": dir}
		if len(extra) == 2 {
			l[extra[0]] = extra[1]
		}
		return l
	}
	check := func(name string, l map[string]string, want uint64) {
		t.Helper()
		k := key(name, l)
		got, ok := s[k]
		if !ok {
			t.Errorf("%s missing", k)
		} else if got != float64(want) {
			t.Errorf("%s = %v, Stats says %d", k, got, want)
		}
	}
	backend := func(q int, dir string, m map[string]uint64) {
		for k, v := range m {
			name := "packetio_backend_total"
			if devmetrics.IsGaugeKey(k) {
				name = "packetio_backend_value"
			}
			check(name, lab(q, dir, "key", k), v)
		}
	}
	for q := range d.NumTxQueues() {
		st, err := d.TxQueue(q).Stats()
		if err != nil {
			t.Fatalf("tx %d Stats: %v", q, err)
		}
		check("packetio_queue_up", lab(q, "tx"), 1)
		for name, v := range map[string]uint64{"packets": st.Packets, "bytes": st.Bytes, "completed": st.Completed,
			"batches": st.Batches, "completions": st.Completions, "ring_full": st.RingFull, "pool_empty": st.PoolEmpty,
			"errors": st.Errors, "refused": st.Refused} {
			check("packetio_"+name+"_total", lab(q, "tx"), v)
		}
		if exact {
			backend(q, "tx", st.Backend)
		}
	}
	for q := range d.NumRxQueues() {
		st, err := d.RxQueue(q).Stats()
		if err != nil {
			t.Fatalf("rx %d Stats: %v", q, err)
		}
		check("packetio_queue_up", lab(q, "rx"), 1)
		for name, v := range map[string]uint64{"packets": st.Packets, "bytes": st.Bytes, "filled": st.Filled,
			"batches": st.Batches, "polls": st.Polls, "completions": st.Completions, "pool_empty": st.PoolEmpty,
			"errors": st.Errors, "dropped": st.Dropped} {
			check("packetio_"+name+"_total", lab(q, "rx"), v)
		}
		if exact {
			backend(q, "rx", st.Backend)
		}
	}
}

func newPipe(t testing.TB, queues int) (a, b packetio.Device) {
	t.Helper()
	a, b, err := pipe.New(pipe.WithQueues(queues), pipe.WithFrames(1024))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestPipeCountersMatchStats(t *testing.T) {
	for _, tc := range []struct {
		name   string
		queues int
		n      int
	}{
		{"one queue, nothing sent", 1, 0},
		{"one queue", 1, 1000},
		{"four queues", 4, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := newPipe(t, tc.queues)
			for q := range tc.queues {
				if got := move(t, a.TxQueue(q), b.RxQueue(q), tc.n); got != tc.n {
					t.Fatalf("queue %d received %d of %d", q, got, tc.n)
				}
			}
			ca, cb := metrics.NewCollector(a, "pipe-a"), metrics.NewCollector(b, "pipe-b")
			s := gather(t, ca, cb)
			checkStats(t, s, a, "pipe-a", true)
			checkStats(t, s, b, "pipe-b", true)
			for q := range tc.queues {
				if v := s[key("packetio_packets_total", map[string]string{"backend": "pipe", "interface": "pipe-a", "queue": fmt.Sprint(q), "direction": "tx"})]; v != float64(tc.n) {
					t.Errorf("tx queue %d packets %v, sent %d", q, v, tc.n)
				}
				if v := s[key("packetio_bytes_total", map[string]string{"backend": "pipe", "interface": "pipe-b", "queue": fmt.Sprint(q), "direction": "rx"})]; v != float64(60*tc.n) {
					t.Errorf("rx queue %d bytes %v, want %d", q, v, 60*tc.n)
				}
			}
			// One family by hand, in the exposition format.
			want := ""
			for q := range tc.queues {
				want += fmt.Sprintf("packetio_packets_total{backend=\"pipe\",direction=\"rx\",interface=\"pipe-b\",queue=\"%d\"} %d\n", q, tc.n)
				want += fmt.Sprintf("packetio_packets_total{backend=\"pipe\",direction=\"tx\",interface=\"pipe-b\",queue=\"%d\"} 0\n", q)
			}
			err := testutil.CollectAndCompare(cb, strings.NewReader("# HELP packetio_packets_total "+devmetrics.Families()[devmetrics.FamPackets].Help+
				"\n# TYPE packetio_packets_total counter\n"+want), "packetio_packets_total")
			if err != nil {
				t.Error(err)
			}
			// The examples' text server says exactly the same.
			if text := scrape(t, devmetrics.Source{Device: a, Interface: "pipe-a"}, devmetrics.Source{Device: b, Interface: "pipe-b"}); !equal(text, s) {
				t.Errorf("the text scrape differs from the Collector:\n%s", diff(text, s))
			}
			for _, c := range []prometheus.Collector{ca, cb} {
				if probs, err := testutil.CollectAndLint(c); err != nil || len(probs) > 0 {
					t.Errorf("lint: %v %v", probs, err)
				}
			}
		})
	}
}

func equal(a, b series) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func diff(a, b series) string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, fmt.Sprintf("text %s %v, collector %v (%v)", k, v, w, ok))
		}
	}
	for k, w := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("collector %s %v, not in the text", k, w))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// A closed device keeps its series: every queue down, reason closed.
func TestClosedDeviceReportsState(t *testing.T) {
	a, b := newPipe(t, 2)
	if got := move(t, a.TxQueue(0), b.RxQueue(0), 10); got != 10 {
		t.Fatalf("received %d of 10", got)
	}
	c := metrics.NewCollector(b, "pipe-b")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	s := gather(t, c)
	for q := range 2 {
		for _, dir := range []string{"tx", "rx"} {
			l := map[string]string{"backend": "pipe", "interface": "pipe-b", "queue": fmt.Sprint(q), "direction": dir}
			if v, ok := s[key("packetio_queue_up", l)]; !ok || v != 0 {
				t.Errorf("%s queue %d: up %v (present %v), want 0", dir, q, v, ok)
			}
			l["reason"] = "closed"
			if v, ok := s[key("packetio_queue_down", l)]; !ok || v != 1 {
				t.Errorf("%s queue %d: down{closed} %v (present %v), want 1", dir, q, v, ok)
			}
		}
	}
	if v := s[key("packetio_packets_total", map[string]string{"backend": "pipe", "interface": "pipe-b", "queue": "0", "direction": "rx"})]; v != 10 {
		t.Errorf("closed pipe queue: packets %v, want the 10 received (its Stats still succeeds)", v)
	}
	if text := scrape(t, devmetrics.Source{Device: b, Interface: "pipe-b"}); !equal(text, s) {
		t.Errorf("the text scrape differs from the Collector:\n%s", diff(text, s))
	}
	if probs, err := testutil.CollectAndLint(c); err != nil || len(probs) > 0 {
		t.Errorf("lint: %v %v", probs, err)
	}
}

// The zero Collector and one over a nil Device are safe and report nothing.
func TestZeroCollector(t *testing.T) {
	for _, c := range []*metrics.Collector{{}, metrics.NewCollector(nil, "x")} {
		if n := testutil.CollectAndCount(c); n != 0 {
			t.Errorf("%d metrics from an empty collector", n)
		}
	}
}

// Two devices on one registry: the interface label keeps them apart; the
// same interface twice is refused by the registry, not reported twice.
func TestRegistryTakesOneCollectorPerInterface(t *testing.T) {
	a, b := newPipe(t, 1)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(metrics.NewCollector(a, "x")); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(metrics.NewCollector(b, "y")); err != nil {
		t.Fatalf("a second interface: %v", err)
	}
	if err := reg.Register(metrics.NewCollector(b, "x")); err == nil {
		t.Fatal("the registry took a second collector for interface x")
	}
}

// Label values that need escaping reach the text format and back intact.
func FuzzTextMatchesCollector(f *testing.F) {
	for _, s := range []string{"eth0", `a"b`, `back\slash`, "new\nline", "ünï", ""} {
		f.Add(s)
	}
	a, b, err := pipe.New(pipe.WithFrames(64), pipe.WithRingSize(16))
	if err != nil {
		f.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	f.Fuzz(func(t *testing.T, iface string) {
		if !utf8.ValidString(iface) {
			t.Skip("label values are UTF-8")
		}
		if text, s := scrape(t, devmetrics.Source{Device: a, Interface: iface}), gather(t, metrics.NewCollector(a, iface)); !equal(text, s) {
			t.Errorf("interface %q: the text scrape differs from the Collector:\n%s", iface, diff(text, s))
		}
	})
}
