package netstack

import (
	"os"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/log"
)

// quiet drops gVisor's log lines: its warnings about segments for
// connections a test already tore down are expected and only noise here.
type quiet struct{}

func (quiet) Emit(int, log.Level, time.Time, string, ...any) {}

func TestMain(m *testing.M) {
	if os.Getenv("NETSTACK_TEST_LOG") == "" {
		log.SetTarget(quiet{})
	}
	os.Exit(m.Run())
}
