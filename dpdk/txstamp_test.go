package dpdk

import (
	"errors"
	"strings"
	"testing"

	"github.com/packetio/packetio"
)

// TestTxTimestampsRefused: WithTxTimestamps is refused before anything
// starts, with ErrUnsupported and a reason naming the option.
func TestTxTimestampsRefused(t *testing.T) {
	c := defaults()
	WithTxTimestamps()(&c)
	err := c.validate()
	if !errors.Is(err, packetio.ErrUnsupported) {
		t.Fatalf("validate with WithTxTimestamps = %v, want ErrUnsupported", err)
	}
	if !strings.Contains(err.Error(), "WithTxTimestamps") || !strings.Contains(err.Error(), "departure") {
		t.Errorf("refusal %q does not name the option and the reason", err)
	}
}
