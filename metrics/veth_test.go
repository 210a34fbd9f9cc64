package metrics_test

import (
	"testing"

	"github.com/packetio/packetio/afpacket"
	"github.com/packetio/packetio/internal/devmetrics"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/metrics"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Over a veth pair (root; a failure under PACKETIO_CONFORM_REQUIRED=1,
// which netns.New enforces): afpacket on both ends, N frames from A to B.
// The core counters are compared, not the backend entries: afpacket's
// Stats reads the kernel's socket counters on every call, so they may move
// between the scrape and the check.
func TestAfpacketVethCountersMatchStats(t *testing.T) {
	const n = 500
	pair := netns.New(t)
	open := func(h *netns.Host) *afpacket.Device {
		var d *afpacket.Device
		if err := h.Do(func() (err error) {
			d, err = afpacket.Open(h.Link, afpacket.WithQueues(1), afpacket.WithFrames(256))
			return err
		}); err != nil {
			t.Fatalf("afpacket.Open(%s): %v", h.Link, err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	a, b := open(pair.A), open(pair.B)
	got := move(t, a.TxQueue(0), b.RxQueue(0), n)
	if got < n {
		t.Fatalf("received %d of %d", got, n)
	}
	ca, cb := metrics.NewCollector(a, pair.A.Link), metrics.NewCollector(b, pair.B.Link)
	s := gather(t, ca, cb)
	checkStats(t, s, a, pair.A.Link, false)
	checkStats(t, s, b, pair.B.Link, false)
	tx := map[string]string{"backend": "afpacket", "interface": pair.A.Link, "queue": "0", "direction": "tx"}
	if v := s[key("packetio_packets_total", tx)]; v != n {
		t.Errorf("tx packets %v, sent %d", v, n)
	}
	for _, c := range []*metrics.Collector{ca, cb} {
		if probs, err := testutil.CollectAndLint(c); err != nil || len(probs) > 0 {
			t.Errorf("lint: %v %v", probs, err)
		}
	}
	// The text server has every series the Collector has (values of the
	// kernel-read backend entries may have moved in between).
	text := scrape(t, devmetrics.Source{Device: a, Interface: pair.A.Link}, devmetrics.Source{Device: b, Interface: pair.B.Link})
	for k := range s {
		if _, ok := text[k]; !ok {
			t.Errorf("%s is not in the text scrape", k)
		}
	}
	if len(text) != len(s) {
		t.Errorf("text scrape %d series, Collector %d", len(text), len(s))
	}
	// Closed, it says so.
	a.Close()
	s = gather(t, ca)
	tx["reason"] = "closed"
	if v, ok := s[key("packetio_queue_down", tx)]; !ok || v != 1 {
		t.Errorf("closed afpacket tx queue: down{closed} %v (present %v)", v, ok)
	}
}
