package packetiotest

import (
	"errors"
	"testing"

	"github.com/packetio/packetio"
)

// RunSteering checks a backend's handling of SteeringFilter at open:
// promiscuous is accepted, and a filter that contradicts itself is refused
// with ErrUnsupported before anything is installed. openWith returns (nil,
// nil) when the device cannot be opened here.
//
// Backends differ in one thing, which the suite reads from Capabilities
// rather than asking the caller: where steering only copies
// (SteeringCopies, a packet socket is a tap), the kernel keeps its copy of
// every frame, so such a device must coexist with the kernel
// (KernelCoexistence); where it takes frames away, SteeringCopies is
// false. Either way a device opened with a filter says which it is.
func RunSteering(t *testing.T, openWith func(t *testing.T, f packetio.SteeringFilter) (Device, error)) {
	t.Run("PromiscuousIsAccepted", func(t *testing.T) {
		d, err := openWith(t, packetio.SteeringFilter{Promiscuous: true})
		if d != nil {
			defer d.Close()
		}
		if err != nil {
			t.Fatalf("promiscuous filter refused: %v", err)
		}
		if d == nil {
			cannotOpen(t)
		}
		if c := d.Capabilities(); c.SteeringCopies && !c.KernelCoexistence {
			t.Fatalf("Capabilities() = %+v: steering that leaves the kernel its copy (SteeringCopies) needs KernelCoexistence", c)
		}
	})
	for _, c := range []struct {
		name string
		f    packetio.SteeringFilter
	}{
		{"PortWithoutProtocolIsRefused", packetio.SteeringFilter{Match: []packetio.Match{{Kind: packetio.MatchKindDstPort, Port: 9}}}},
		{"TwoProtocolsAreRefused", packetio.SteeringFilter{Match: append(packetio.MatchDstPort(packetio.IPProtoUDP, 9), packetio.MatchIPProto(packetio.IPProtoTCP))}},
		{"PromiscuousWithAMatchIsRefused", packetio.SteeringFilter{Promiscuous: true, Match: []packetio.Match{packetio.MatchEtherType(EtherType)}}},
		{"UnknownKindIsRefused", packetio.SteeringFilter{Match: []packetio.Match{{Kind: 0}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := openWith(t, c.f)
			if d != nil {
				d.Close()
			}
			if !errors.Is(err, packetio.ErrUnsupported) {
				t.Fatalf("%v: open returned %v, want ErrUnsupported", c.f.Match, err)
			}
			if d != nil {
				t.Fatal("a refused filter still returned a device")
			}
		})
	}
}
