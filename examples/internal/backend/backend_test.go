package backend

import (
	"errors"
	"strings"
	"testing"

	"github.com/packetio/packetio"
)

func TestOpenNamesWhatIsMissing(t *testing.T) {
	for _, tc := range []struct{ backend, want string }{
		{"nosuch", "unknown backend"},
	} {
		if _, err := Open(tc.backend, "x", Config{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) = %v, want %q", tc.backend, err, tc.want)
		}
	}
	for b, tag := range needsTag {
		if _, built := openers[b]; built {
			continue
		}
		if _, err := Open(b, "x", Config{}); err == nil || !strings.Contains(err.Error(), "-tags "+tag) {
			t.Errorf("Open(%q) = %v, want the build tag named", b, err)
		}
	}
}

func TestAfpacketRefusesSteering(t *testing.T) {
	_, err := Open("afpacket", "lo", Config{Steering: packetio.SteeringFilter{Promiscuous: true}})
	if !errors.Is(err, packetio.ErrUnsupported) {
		t.Fatalf("afpacket with a filter: %v", err)
	}
	if !strings.Contains(strings.Join(Names(), ","), "afpacket") {
		t.Fatalf("afpacket not registered: %v", Names())
	}
}

func TestSteers(t *testing.T) {
	f := packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchEtherType(0x88b5)}}
	for _, tc := range []struct {
		backend string
		steers  bool
	}{{"afxdp", true}, {"mlx5", true}, {"afpacket", false}, {"dpdk", false}, {"nosuch", false}} {
		if got := Steers(tc.backend); got != tc.steers {
			t.Errorf("Steers(%q) = %v", tc.backend, got)
		}
		got := Steering(tc.backend, f)
		if tc.steers != (len(got.Match) == 1) {
			t.Errorf("Steering(%q) = %v", tc.backend, got)
		}
	}
}
