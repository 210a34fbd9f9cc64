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
