//go:build !pcap

package pcapfilter

import (
	"testing"

	"github.com/packetio/packetio/internal/testenv"
)

// TestLibpcapComparison is built with -tags pcap (cgo and libpcap-dev),
// which make test uses; without the tag it cannot run, and says so.
func TestLibpcapComparison(t *testing.T) {
	testenv.CannotRun(t, "the comparison with libpcap is built with -tags pcap (needs cgo and libpcap-dev; make test installs it and sets the tag)")
}
