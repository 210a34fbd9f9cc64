package xdp

import (
	"testing"
	"unsafe"
)

// TestHalvesOwnCacheLines: everything the receive side writes per call and
// everything the transmit side writes per call lie at least a cache line
// apart, and apart from the fields both read (closing), so two goroutines
// driving the two halves on two cores never write one line.
func TestHalvesOwnCacheLines(t *testing.T) {
	const line = 64
	var s Socket
	base := uintptr(unsafe.Pointer(&s))
	span := func(p unsafe.Pointer, size uintptr) [2]uintptr {
		off := uintptr(p) - base
		return [2]uintptr{off, off + size}
	}
	rx := []struct {
		name string
		r    [2]uintptr
	}{
		{"rx fill ring", span(unsafe.Pointer(&s.r.fill), unsafe.Sizeof(s.r.fill))},
		{"rx ring", span(unsafe.Pointer(&s.r.ring), unsafe.Sizeof(s.r.ring))},
		{"rx call count", span(unsafe.Pointer(&s.r.calls), unsafe.Sizeof(s.r.calls))},
		{"rx counters", span(unsafe.Pointer(&s.r.st), unsafe.Sizeof(s.r.st))},
	}
	tx := []struct {
		name string
		r    [2]uintptr
	}{
		{"completion ring", span(unsafe.Pointer(&s.t.comp), unsafe.Sizeof(s.t.comp))},
		{"tx ring", span(unsafe.Pointer(&s.t.ring), unsafe.Sizeof(s.t.ring))},
		{"tx call count", span(unsafe.Pointer(&s.t.calls), unsafe.Sizeof(s.t.calls))},
		{"tx counters", span(unsafe.Pointer(&s.t.st), unsafe.Sizeof(s.t.st))},
	}
	shared := span(unsafe.Pointer(&s.closing), unsafe.Sizeof(s.closing))
	apart := func(a, b [2]uintptr) bool { return a[1]+line <= b[0] || b[1]+line <= a[0] }
	for _, r := range rx {
		if !apart(r.r, shared) {
			t.Errorf("%s [%d,%d) within a line of closing %v", r.name, r.r[0], r.r[1], shared)
		}
		for _, x := range tx {
			if !apart(r.r, x.r) {
				t.Errorf("%s [%d,%d) within a line of %s [%d,%d)", r.name, r.r[0], r.r[1], x.name, x.r[0], x.r[1])
			}
		}
	}
	for _, x := range tx {
		if !apart(x.r, shared) {
			t.Errorf("%s [%d,%d) within a line of closing %v", x.name, x.r[0], x.r[1], shared)
		}
	}
}
