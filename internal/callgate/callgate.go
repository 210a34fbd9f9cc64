// Package callgate lets a Close release what calls on other goroutines may
// be using (ring mappings shared with the kernel, file descriptors) without
// a lock on the fast path. A call counts itself in with Enter and out with
// Exit, two uncontended atomic adds; Close sets its closing flag and then
// waits in Drain until no call is counted. Unmapping a ring a call is still
// reading is a SIGSEGV that no recover catches, and closing a descriptor a
// call is about to use lets the kernel hand its number to something else,
// so a call would act on an unrelated file.
//
// The order makes it safe: Enter adds before it reads the flag, Close sets
// the flag before Drain reads the count. So a call either sees the flag and
// backs out, or is counted before Drain looks, and Drain waits for it.
// Counters nest (a call may enter again from inside another), and a call
// that enters after the flag is set is refused, never blocked.
//
// Each Enter and Exit pair costs a caller about 17 ns here
// (BenchmarkEnterExit): count only calls that touch what Close releases,
// once, at the exported method; helpers it calls run inside its count.
//
// A Close called from inside a counted call of its own object (from a
// SendFunc build function, which the call runs) would Drain forever,
// waiting for the call it is inside. Close asks HoldsCaller first, and
// refuses with ErrInside rather than hang.
package callgate

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio"
)

// Calls counts calls in progress on one object. The zero value counts none.
// Put counters of calls that run on different goroutines on different cache
// lines: every Enter writes its counter.
type Calls struct {
	n atomic.Int64
}

// Enter counts a call in unless closing is set, and reports whether it did.
// A call that entered must Exit.
func (c *Calls) Enter(closing *atomic.Bool) bool {
	c.n.Add(1)
	if closing.Load() {
		c.n.Add(-1)
		return false
	}
	return true
}

// Exit counts a call out.
func (c *Calls) Exit() { c.n.Add(-1) }

// Busy reports whether a call is counted.
func (c *Calls) Busy() bool { return c.n.Load() != 0 }

// drainNap is how long Drain sleeps between looks: calls are short (no
// counted call blocks; a Poll is woken before Drain), so a few naps do.
const drainNap = 50 * time.Microsecond

// Drain waits until none of the counters counts a call. Set the closing
// flag every Enter reads first. It must not run inside a counted call of
// the same object (it would wait for itself).
func Drain(cs ...*Calls) {
	for busy(cs) {
		time.Sleep(drainNap)
	}
}

func busy(cs []*Calls) bool {
	for _, c := range cs {
		if c.Busy() {
			return true
		}
	}
	return false
}

// ErrInside is a Close's refusal to run inside a call of its own object,
// which it would wait for forever. It matches packetio.ErrBusy.
var ErrInside = fmt.Errorf("%w: close called from inside a call it would wait for forever (a SendFunc build function on the same device): close after that call returns", packetio.ErrBusy)

// HoldsCaller reports whether a call counted here is the calling
// goroutine's own: whether c counts a call and the goroutine runs inside
// one of fns (method expressions, such as (*TxQueue).SendFunc), the
// methods that run the caller's code. A Close that finds it so must
// refuse (ErrInside): Drain would wait for the call it is inside. It
// walks the goroutine's stack, microseconds, and only while a call is
// counted: for Close, never for a fast path. It tells the method, not the
// object: closing one queue from inside another's call goes ahead, unless
// the first counts a call of its own at that moment, which then reads as
// the caller's (the Close is refused, not hung).
func (c *Calls) HoldsCaller(fns ...any) bool { return c.Busy() && inside(fns...) }

// inside reports whether the calling goroutine's stack holds a frame of
// one of fns, inlined or not, at any depth.
func inside(fns ...any) bool {
	names := make([]string, 0, len(fns))
	for _, fn := range fns {
		if f := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()); f != nil {
			names = append(names, f.Name())
		}
	}
	pcs := make([]uintptr, 64)
	for {
		n := runtime.Callers(2, pcs)
		if n < len(pcs) {
			pcs = pcs[:n]
			break
		}
		pcs = make([]uintptr, 2*len(pcs))
	}
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if slices.Contains(names, f.Function) {
			return true
		}
		if !more {
			return false
		}
	}
}
