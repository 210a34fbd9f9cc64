// Package ring holds the mlx5 send and receive ring state machines: which
// frame sits in which work-queue slot, which completion releases which
// frames, and when to ring which doorbell.
//
// A ring works over plain memory it is handed: the work queue and the
// completion queue as byte slices, the doorbell records as words, the UAR
// doorbell register as a word, the frame region as a slice with the address
// the device sees it at. On hardware all of these come from mlx5dv_init_obj
// (see mlx5/internal/dv); in tests they are Go allocations shared with the
// model in mlx5/internal/mocknic. The ring cannot tell the difference, which
// is the point: every line of this package runs in the untagged tests.
//
// Indices are free-running 32-bit counters and positions are counters masked
// by the power-of-two ring size. The device sees 16 bits of a work-queue
// index and 24 bits of a CQ consumer index, both as big-endian bytes.
//
// All stores and loads the device takes part in go through doorbell.go, and
// nothing else in the package touches device-shared words.
//
// A ring is driven by one goroutine. Err and the counters are safe from any.
package ring

import (
	"fmt"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/mlx5/internal/wqe"
)

// faults are deliberate bugs a test can switch on to prove the test suite
// catches them. They are unexported, so only this package's tests can set
// them; production code never does.
type faults struct {
	// swapDoorbell publishes every doorbell index in native byte order
	// instead of big-endian.
	swapDoorbell bool
	// releaseOneMore releases one frame past the last completed one.
	releaseOneMore bool
	// trustCounter believes a completion's WQE counter without checking
	// that it names a live entry (send) or the oldest buffer (receive).
	trustCounter bool
}

// Failure is what took a ring down, for Err and for Stats.
type Failure struct {
	Syndrome       uint8  // completion syndrome, 0 for a software-detected failure
	VendorSyndrome uint8  // vendor syndrome
	QPN            uint32 // the QP the error CQE named
	WQECounter     uint16 // the entry or WQE it named
	Reason         string // what went wrong, in words
	err            error
}

// Err is the failure as an error wrapping packetio.ErrQueueFailed.
func (f *Failure) Err() error { return f.err }

func newFailure(what string, syndrome, vendor uint8, qpn uint32, counter uint16, reason string) *Failure {
	f := &Failure{Syndrome: syndrome, VendorSyndrome: vendor, QPN: qpn, WQECounter: counter, Reason: reason}
	if syndrome != 0 {
		f.err = fmt.Errorf("mlx5: %s: %s (syndrome %#02x, vendor syndrome %#02x) at entry %d of QP %#x: %w",
			what, wqe.SyndromeName(syndrome), syndrome, vendor, counter, qpn, packetio.ErrQueueFailed)
	} else {
		f.err = fmt.Errorf("mlx5: %s: %s: %w", what, reason, packetio.ErrQueueFailed)
	}
	return f
}

// checkCQ validates a CQ's size.
func checkCQ(cq []byte) (logSize uint, err error) {
	n := len(cq) / wqe.CQESize
	if len(cq)%wqe.CQESize != 0 || n < 2 || n&(n-1) != 0 || n > 1<<22 {
		return 0, fmt.Errorf("mlx5 ring: CQ of %d bytes is not a power-of-two number of 64-byte entries", len(cq))
	}
	for n > 1 {
		n >>= 1
		logSize++
	}
	return logSize, nil
}

func checkRegion(region []byte, frameSize int) (frames uint64, err error) {
	if frameSize < 64 || frameSize&(frameSize-1) != 0 {
		return 0, fmt.Errorf("mlx5 ring: frame size %d is not a power of two of at least 64", frameSize)
	}
	if len(region) < frameSize {
		return 0, fmt.Errorf("mlx5 ring: region of %d bytes holds no %d-byte frame", len(region), frameSize)
	}
	return uint64(len(region) / frameSize), nil
}

func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }
