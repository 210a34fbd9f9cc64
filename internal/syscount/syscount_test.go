package syscount_test

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/syscount"
	"github.com/packetio/packetio/internal/testenv"
)

// TestCountsTheThreadsCalls: a known number of system calls on the locked
// thread shows up in the count, and calls made on another thread do not.
func TestCountsTheThreadsCalls(t *testing.T) {
	testenv.NeedRoot(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c, err := syscount.ForThread()
	if err != nil {
		testenv.CannotRun(t, "%v", err)
	}
	defer c.Close()

	const calls = 1000
	before, err := c.Count()
	if err != nil {
		t.Fatal(err)
	}
	for range calls {
		unix.Getppid()
	}
	// Calls on another thread are not this counter's.
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		for range calls {
			unix.Getppid()
		}
		close(done)
	}()
	<-done
	after, err := c.Count()
	if err != nil {
		t.Fatal(err)
	}
	// The second read is counted too, and waiting on the channel may
	// park the thread (a futex call or two): a small margin, never less.
	got := after - before
	t.Logf("%d system calls counted for %d getppid and one read", got, calls)
	if got < calls+1 || got > calls+1+50 {
		t.Errorf("counted %d system calls for %d getppid and one read (another thread made %d more)", got, calls, calls)
	}
}

// TestClosedCounter: a closed counter reports it; a second Close, a nil
// and a zero counter are harmless (the zero one never reads fd 0).
func TestClosedCounter(t *testing.T) {
	testenv.NeedRoot(t)
	c, err := syscount.ForThread()
	if err != nil {
		testenv.CannotRun(t, "%v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c.Count(); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Count after Close: %v, want a closed counter", err)
	}
	for name, c := range map[string]*syscount.Counter{"nil": nil, "zero": {}} {
		if _, err := c.Count(); err == nil {
			t.Errorf("Count on a %s counter: no error", name)
		}
		if err := c.Close(); err != nil {
			t.Errorf("Close on a %s counter: %v", name, err)
		}
	}
}

// TestPrivateTracefs: the tracefs ForThread mounts where none is mounted
// gives the tracepoint's id (the host's, where the host has tracefs too),
// a counter opens on it, and the mounts of this process are what they were
// (the mount was in a namespace of its own, on a thread that ended).
func TestPrivateTracefs(t *testing.T) {
	testenv.NeedRoot(t)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	mounts := func() string {
		b, err := os.ReadFile("/proc/thread-self/mountinfo")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	before := mounts()
	id, err := syscount.PrivateTracepointID("raw_syscalls", "sys_enter")
	if err != nil {
		testenv.CannotRun(t, "%v", err)
	}
	if after := mounts(); after != before {
		t.Errorf("the mounts changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if host, err := syscount.TracepointID(syscount.TracefsRoots(), "raw_syscalls", "sys_enter"); err == nil && host != id {
		t.Errorf("id %d from its own tracefs, %d from the host's", id, host)
	}
	c, err := syscount.Open(id)
	if err != nil {
		t.Fatalf("id %d: %v", id, err)
	}
	defer c.Close()
	// It counts this thread's calls: 100 getppid and the second read, with
	// a small margin for the runtime's own (a preemption signal's
	// rt_sigreturn made a fresh counter read 2 once, where 1 was asked).
	first, err := c.Count()
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		unix.Getppid()
	}
	second, err := c.Count()
	if got := second - first; err != nil || got < 101 || got > 101+50 {
		t.Errorf("counted %d system calls (%v) for 100 getppid and one read", got, err)
	}
}
