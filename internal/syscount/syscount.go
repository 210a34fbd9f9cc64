// Package syscount counts the system calls one thread makes, as the kernel
// sees them: a perf event on the raw_syscalls:sys_enter tracepoint, bound
// to the thread that opens it. The benchmarks report syscalls/pkt with it,
// whoever made the call: packetio, a DPDK driver underneath it, or Go's
// runtime parking the thread. A backend's own counters only see the calls
// it knows it makes.
//
// It is the one door to perf_event_open in this module, and it only reads:
// the event counts, nothing is sampled or traced, and closing the counter
// leaves the tracepoint as it found it. The tracepoint's id comes from
// tracefs; where none is mounted (containers, small VMs), ForThread mounts
// one in a mount namespace of its own, on a thread that ends with it, and
// reads the id there: the host's mounts stay as they were.
package syscount

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// tracefsRoots are where the kernel's tracing filesystem is mounted: its
// own mount point first, then the one under debugfs that older systems use.
func tracefsRoots() []string { return []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} }

// Counter counts the system calls of one thread. It is not safe for
// concurrent use; Count and Close may run on any thread. The zero Counter
// is a closed one.
type Counter struct {
	fd   int
	open bool
}

// ForThread starts counting the system calls of the calling thread. The
// caller holds the thread (runtime.LockOSThread) for as long as the count
// should be its own: an unlocked goroutine may move to another thread,
// whose calls this counter does not see.
func ForThread() (*Counter, error) {
	c, err := forThread(tracefsRoots())
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return c, err
	}
	id, perr := privateTracepointID("raw_syscalls", "sys_enter")
	if perr != nil {
		return nil, fmt.Errorf("%w; and from a tracefs of its own: %w", err, perr)
	}
	return open(id)
}

// forThread is ForThread with the tracefs mount points to look in, and no
// tracefs of its own.
func forThread(roots []string) (*Counter, error) {
	id, err := tracepointID(roots, "raw_syscalls", "sys_enter")
	if err != nil {
		return nil, err
	}
	return open(id)
}

// open counts tracepoint id on the calling thread.
func open(id uint64) (*Counter, error) {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_TRACEPOINT,
		Size:   unix.PERF_ATTR_SIZE_VER7,
		Config: id,
	}
	// pid 0, cpu -1: this thread, on whichever CPU it runs.
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("syscount: perf_event_open raw_syscalls:sys_enter (id %d): %w", id, err)
	}
	return &Counter{fd: fd, open: true}, nil
}

// privateTracepointID reads the id of tracepoint system:event from a
// tracefs mounted in a mount namespace of its own (made private, so the
// mount reaches no other namespace) by a thread that is never handed back
// to Go's scheduler: the goroutine ends locked to it, so the thread ends
// too, and its namespace with it.
func privateTracepointID(system, event string) (uint64, error) {
	type result struct {
		id  uint64
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		var r result
		r.id, r.err = func() (uint64, error) {
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				return 0, fmt.Errorf("syscount: unshare(CLONE_NEWNS): %w", err)
			}
			if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
				return 0, fmt.Errorf("syscount: mount --make-rprivate / in its own namespace: %w", err)
			}
			root := tracefsRoots()[0]
			if err := unix.Mount("tracefs", root, "tracefs", 0, ""); err != nil {
				return 0, fmt.Errorf("syscount: mount tracefs on %s in its own namespace: %w", root, err)
			}
			return tracepointID([]string{root}, system, event)
		}()
		done <- r
	}()
	r := <-done
	return r.id, r.err
}

// Count returns how many system calls the thread has entered since
// ForThread. The read that fetches the count is one of them when Count
// runs on the counted thread.
func (c *Counter) Count() (uint64, error) {
	if c == nil || !c.open {
		return 0, errors.New("syscount: counter closed")
	}
	var b [8]byte
	for {
		n, err := unix.Read(c.fd, b[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("syscount: read: %w", err)
		}
		if n != len(b) {
			return 0, fmt.Errorf("syscount: read %d bytes of a count, want %d", n, len(b))
		}
		return binary.NativeEndian.Uint64(b[:]), nil
	}
}

// Close stops counting. Closing a closed, zero or nil counter does
// nothing.
func (c *Counter) Close() error {
	if c == nil || !c.open {
		return nil
	}
	c.open = false
	return unix.Close(c.fd)
}

// tracepointID reads the id of tracepoint system:event from the first of
// roots that has it.
func tracepointID(roots []string, system, event string) (uint64, error) {
	var errs []error
	for _, root := range roots {
		path := root + "/events/" + system + "/" + event + "/id"
		b, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("syscount: %s: %w", path, err)
		}
		return id, nil
	}
	if len(errs) == 0 {
		return 0, fmt.Errorf("syscount: no tracepoint %s:%s: no tracefs to look in", system, event)
	}
	return 0, fmt.Errorf("syscount: no tracepoint %s:%s (is tracefs mounted?): %w", system, event, errors.Join(errs...))
}
