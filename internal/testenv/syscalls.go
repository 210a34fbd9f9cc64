package testenv

import (
	"runtime"
	"testing"

	"github.com/packetio/packetio/internal/syscount"
)

// ThreadSyscalls locks the test's goroutine to its thread and has the
// kernel count every system call that thread makes from now on
// (internal/syscount): the backend's, a driver's underneath it (DPDK's
// kicks), and Go's runtime's when the thread parks. When the test ends the
// counter closes and the thread is unlocked. Where the count cannot be
// taken (no tracefs, no perf events) the test cannot run (CannotRun).
func ThreadSyscalls(t testing.TB) *syscount.Counter {
	t.Helper()
	runtime.LockOSThread()
	c, err := syscount.ForThread()
	if err != nil {
		runtime.UnlockOSThread()
		CannotRun(t, "count the thread's system calls: %v", err)
		return nil
	}
	t.Cleanup(func() {
		c.Close()
		runtime.UnlockOSThread()
	})
	return c
}

// CountSyscalls is ThreadSyscalls for a benchmark loop: report(packets)
// adds the syscalls/pkt metric, the calls counted since CountSyscalls over
// the packets moved. Call it once, after the loop.
func CountSyscalls(b *testing.B) (report func(packets int)) {
	b.Helper()
	c := ThreadSyscalls(b)
	start, err := c.Count()
	if err != nil {
		b.Fatal(err)
	}
	return func(packets int) {
		end, err := c.Count()
		if err != nil {
			b.Fatal(err)
		}
		if packets > 0 {
			// The read that fetched end is not the loop's.
			b.ReportMetric(float64(end-start-1)/float64(packets), "syscalls/pkt")
		}
	}
}
