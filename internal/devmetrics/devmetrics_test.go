package devmetrics

import (
	"fmt"
	"strings"
	"testing"

	"github.com/packetio/packetio"
)

func TestDownReason(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{packetio.NewOpError("rx stats", "x", "y", 0, packetio.ErrClosed), "closed"},
		{packetio.ErrDeviceGone, "device_gone"},
		{fmt.Errorf("ring: %w", packetio.ErrWedged), "wedged"},
		{packetio.ErrQueueFailed, "failed"},
		{fmt.Errorf("other"), "error"},
	} {
		if got := DownReason(tc.err); got != tc.want {
			t.Errorf("DownReason(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestFamilies(t *testing.T) {
	f := Families()
	if len(f) != numFamilies {
		t.Fatalf("%d families, want %d", len(f), numFamilies)
	}
	seen := map[string]bool{}
	for _, x := range f {
		if seen[x.Name] || x.Help == "" || (x.Kind == Counter) != strings.HasSuffix(x.Name, "_total") {
			t.Errorf("family %+v: duplicate, no help, or a counter name without _total (or a gauge with it)", x)
		}
		seen[x.Name] = true
	}
	if !IsGaugeKey("outstanding") || IsGaugeKey("pool_rejected") {
		t.Error("IsGaugeKey")
	}
}

func TestWriteText(t *testing.T) {
	var b strings.Builder
	err := WriteText(&b, []Sample{
		{Family: FamBackendTotal, Backend: "pipe", Interface: "a\"b\\c\nd", Queue: 3, Direction: "rx", Extra: "too_big", Value: 7},
		{Family: FamQueueUp, Backend: "pipe", Interface: "i", Queue: 0, Direction: "tx", Value: 1},
		{Family: FamPackets, Backend: "pipe", Interface: "i", Queue: 0, Direction: "tx", Value: 1e15},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `# HELP packetio_queue_up 1 while the queue is healthy (Err and Stats return nil), 0 once it is closed or failed.
# TYPE packetio_queue_up gauge
packetio_queue_up{backend="pipe",interface="i",queue="0",direction="tx"} 1
# HELP packetio_packets_total Packets Transmit accepted (tx) or Receive handed to the caller (rx).
# TYPE packetio_packets_total counter
packetio_packets_total{backend="pipe",interface="i",queue="0",direction="tx"} 1e+15
# HELP packetio_backend_total A backend-only counter of the queue, named by key (Stats().Backend).
# TYPE packetio_backend_total counter
packetio_backend_total{backend="pipe",interface="a\"b\\c\nd",queue="3",direction="rx",key="too_big"} 7
`
	if b.String() != want {
		t.Errorf("WriteText:\n%s\nwant:\n%s", b.String(), want)
	}
}

// A nil device gives nothing (the metrics module tests real devices).
func TestAppendNil(t *testing.T) {
	if s := Append(nil, nil, "x"); len(s) != 0 {
		t.Fatalf("%d samples from a nil device", len(s))
	}
}
