package dpdk

import (
	"errors"
	"testing"

	"github.com/packetio/packetio"
)

func TestOptionsAreValidated(t *testing.T) {
	for name, o := range map[string]Option{
		"negative tx":       WithTxQueues(-1),
		"no tx":             WithTxQueues(0),
		"too many rx":       WithRxQueues(MaxQueues + 1),
		"depth":             WithTxDepth(1000),
		"rx depth":          WithRxDepth(0),
		"frame size":        WithFrameSize(3000),
		"small frame":       WithFrameSize(256),
		"frames":            WithFrames(1000),
		"memory":            WithMemory(-1),
		"numa node":         WithNUMANode(-2),
		"huge numa node":    WithNUMANode(1024),
		"contradiction":     WithSteering(packetio.SteeringFilter{Match: []packetio.Match{{Kind: packetio.MatchKindDstPort, Port: 9}}}),
		"promisc and match": WithSteering(packetio.SteeringFilter{Promiscuous: true, Match: []packetio.Match{packetio.MatchVLAN(1)}}),
		"steering without rx": func(c *config) {
			c.rxQueues = 0
			c.steering = &packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchVLAN(1)}}
		},
	} {
		c := defaults()
		o(&c)
		if c.validate() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	c := defaults()
	for _, o := range []Option{WithTxQueues(2), WithRxQueues(0), WithFrameSize(4096), WithFrames(1024), WithNoHuge(), WithMemory(128), WithTSO(), WithNUMANode(0)} {
		o(&c)
	}
	if err := c.validate(); err != nil || !c.checksums {
		t.Fatalf("good options refused: %v", err)
	}
	bad := defaults()
	WithSteering(packetio.SteeringFilter{Match: []packetio.Match{{Kind: packetio.MatchKindDstPort, Port: 9}}})(&bad)
	if err := bad.validate(); !errors.Is(err, packetio.ErrUnsupported) {
		t.Fatalf("contradiction: %v, want ErrUnsupported", err)
	}
}

func TestFramesFor(t *testing.T) {
	c := defaults()
	if c.framesFor(1024, 0) != 2048 || c.framesFor(64, 0) != 512 || c.framesFor(1024, 4096) != 4096 || c.framesFor(300, 0) != 1024 {
		t.Fatal("frame counts")
	}
	WithFrames(256)(&c)
	if c.framesFor(1024, 4096) != 256 {
		t.Fatal("explicit frames ignored")
	}
}

// TestNilOptionIsRefused: a nil Option is ErrInvalid naming its position,
// not a panic.
func TestNilOptionIsRefused(t *testing.T) {
	c := defaults()
	err := c.apply([]Option{WithTxQueues(2), nil})
	if !errors.Is(err, packetio.ErrInvalid) || err.Error() != "option 2 of 2 is nil: packetio: invalid argument" {
		t.Fatalf("apply with a nil option: %v", err)
	}
	if c.txQueues != 2 {
		t.Fatal("the options before the nil one were not applied")
	}
}
