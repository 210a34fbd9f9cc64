//go:build linux

package afpacket

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/packetio/packetio/internal/trafficgen"
)

// feedIfaceEnv names the interface TestTrafficgenFeed floods from (in the
// current namespace), for scripts/trafgen-compare.sh; feedSecondsEnv how long.
const (
	feedIfaceEnv   = "PACKETIO_FEED_IFACE"
	feedSecondsEnv = "PACKETIO_FEED_SECONDS"
)

// TestTrafficgenFeed is not a test of this package: it is the in-kernel
// feeder scripts/trafgen-compare.sh runs against every receiver (ours,
// netsniff-ng, tcpdump), so they all get the same traffic. It floods 64-byte
// frames (benchFrame) out of $PACKETIO_FEED_IFACE with internal/trafficgen,
// pinned to CPU 0, for $PACKETIO_FEED_SECONDS (default 5) and logs how many
// it sent. Without the variable it does nothing.
func TestTrafficgenFeed(t *testing.T) {
	iface := os.Getenv(feedIfaceEnv)
	if iface == "" {
		t.Skip(feedIfaceEnv + " not set: the feeder runs only under scripts/trafgen-compare.sh")
	}
	secs := 5.0
	if s := os.Getenv(feedSecondsEnv); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v <= 0 {
			t.Fatalf("%s=%q: want a positive number of seconds", feedSecondsEnv, s)
		}
		secs = v
	}
	g, err := trafficgen.New(iface, benchFrame(), trafficgen.WithCPU(0))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	stop := make(chan struct{})
	timer := time.AfterFunc(time.Duration(secs*float64(time.Second)), func() { close(stop) })
	defer timer.Stop()
	start := time.Now()
	n, err := g.Run(stop, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("feeder: %d frames in %v (%.0f pps)", n, time.Since(start).Round(time.Millisecond), float64(n)/time.Since(start).Seconds())
}
