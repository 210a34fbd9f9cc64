package packetiotest_test

import (
	"fmt"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/packetiotest"
	"github.com/packetio/packetio/pipe"
)

// openPipe opens a device for one check, here one end of an in-memory pipe;
// peer hands the suite the other end, which sends what the traffic checks
// receive. A backend of your own opens its device the same way, on a veth
// pair or whatever link it can build in a test, and returns nil (with the
// reason logged) when it cannot be opened on this machine.
func openPipe() (open, peer packetiotest.OpenFunc) {
	var other packetio.Device
	open = func(t *testing.T) packetiotest.Device {
		a, b, err := pipe.New()
		if err != nil {
			t.Fatalf("pipe.New: %v", err)
		}
		other = b
		t.Cleanup(func() { b.Close() })
		return a
	}
	peer = func(t *testing.T) packetiotest.Device { return other }
	return open, peer
}

// testConformance is the whole of a backend's conformance test: put its
// body in a func TestConformance(t *testing.T) of your backend's package.
// Each check is a subtest (TestConformance/FramesAreConserved, ...).
func testConformance(t *testing.T) {
	open, peer := openPipe()
	packetiotest.Run(t, open, packetiotest.WithPeer(peer))
}

// A backend proves itself against the contract with one test that opens its
// device and hands it to Run, the way a file system does with
// testing/fstest. This package's own tests run testConformance on pipe.
func Example() {
	fmt.Printf("Run checks %d rules:\n", len(packetiotest.Checks()))
	for _, name := range packetiotest.Checks() {
		fmt.Println(" ", name)
	}
	// Output:
	// Run checks 22 rules:
	//   AllocFreeRoundTrip
	//   AllocGivesDistinctFramesInRegion
	//   FramesAreConserved
	//   SendFuncBadLengthAbandonsTheBatch
	//   SendFuncZeroLengthStops
	//   ForeignDescriptorIsRefused
	//   TransmitRefusesADescriptorOutsideAFrame
	//   TransmitTakesAPrefix
	//   ReclaimHandsFramesBack
	//   CloseTwice
	//   MethodsAfterCloseAreSafe
	//   ErrorsAreOpErrors
	//   CapabilitiesAreSelfConsistent
	//   CloseWakesAPoller
	//   CloseDuringCalls
	//   ErrIsNilOnAHealthyQueue
	//   StatsAreSafeFromAnotherGoroutine
	//   FastPathDoesNotAllocate
	//   TrafficArrivesIntact
	//   ReceiveStatsCountBatches
	//   ForwardingConservesFrames
	//   CloseUnderLoad
}
