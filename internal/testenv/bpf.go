package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// NeedBPF stops the test when loading a BPF program here would hang it.
//
// Linux 6.18 can deadlock its BPF program allocator: when thousands of
// program frees are queued on the kernel's system workqueue (a fuzz loop
// that loads and closes programs as fast as it can does this), a load that
// has to purge lazily freed vmap areas waits on a work item that can never
// run, while holding the mutex every queued free needs. From then on every
// program load and free blocks in the kernel forever, unkillable, until the
// machine reboots. A test that loads a program would hang rather than fail,
// so it stops here with the reason instead (a failure under
// PACKETIO_CONFORM_REQUIRED).
func NeedBPF(t testing.TB) {
	t.Helper()
	NeedRoot(t)
	if n := bpfAllocatorBlocked("/proc"); n >= 16 {
		CannotRun(t, "the kernel's BPF program allocator is deadlocked (%d tasks blocked in bpf_prog_pack_alloc/free; "+
			"see the hung-task reports in dmesg); any program load would hang this test for ever; reboot the machine", n)
	}
}

// bpfAllocatorBlocked counts tasks asleep uninterruptibly in the BPF program
// pack allocator. A healthy kernel has none for longer than a moment.
func bpfAllocatorBlocked(proc string) int {
	wchans, _ := filepath.Glob(filepath.Join(proc, "[0-9]*/task/[0-9]*/wchan"))
	n := 0
	for _, w := range wchans {
		b, err := os.ReadFile(w)
		if err != nil || !strings.HasPrefix(string(b), "bpf_prog_pack_") {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(filepath.Dir(w), "stat"))
		if err != nil {
			continue
		}
		// The state follows the command, which is in parentheses.
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'D' {
			n++
		}
	}
	return n
}
