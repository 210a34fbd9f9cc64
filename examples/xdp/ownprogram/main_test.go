package main

import (
	"testing"

	"github.com/packetio/packetio/internal/testenv"
)

// TestOwnProgram runs what `go run ./examples/xdp/ownprogram` runs: the
// steered datagrams reach the AF_XDP queue, the ones the program passes
// reach a kernel socket, the ones it drops are counted and go nowhere.
func TestOwnProgram(t *testing.T) {
	testenv.NeedRoot(t)
	if err := run(200); err != nil {
		t.Fatal(err)
	}
}

func TestOwnProgramRefusesBadCounts(t *testing.T) {
	for _, n := range []int{0, -1, 10001} {
		if err := run(n); err == nil {
			t.Errorf("-n %d accepted", n)
		}
	}
}
