package callgate

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/packetio/packetio"
)

// TestEnterAfterClosing: a call entering once closing is set is refused
// and not counted; one that entered before is counted until it exits, and
// counts nest.
func TestEnterAfterClosing(t *testing.T) {
	var c Calls
	var closing atomic.Bool
	for range 2 {
		if !c.Enter(&closing) {
			t.Fatal("Enter refused before closing")
		}
	}
	closing.Store(true)
	if c.Enter(&closing) {
		t.Fatal("Enter admitted a call after closing")
	}
	c.Exit()
	if !c.Busy() {
		t.Fatal("the outer call is not counted after the inner one exits")
	}
	c.Exit()
	if c.Busy() {
		t.Fatal("a call is counted after every entered call exited")
	}
	Drain(&c) // returns at once
}

// TestDrainWaitsForCalls: Drain returns only after the last of the calls
// counted on any of its counters has exited.
func TestDrainWaitsForCalls(t *testing.T) {
	var a, b Calls
	var closing atomic.Bool
	if !a.Enter(&closing) || !b.Enter(&closing) {
		t.Fatal("Enter refused before closing")
	}
	closing.Store(true)
	var exited atomic.Int32
	done := make(chan struct{})
	go func() {
		Drain(&a, &b)
		if n := exited.Load(); n != 2 {
			t.Errorf("Drain returned with %d of 2 calls exited", n)
		}
		close(done)
	}()
	exited.Add(1)
	a.Exit()
	exited.Add(1)
	b.Exit()
	<-done
}

// BenchmarkEnterExit is what counting one call costs its caller,
// uncontended: the price every counted queue method pays once per call
// (per batch, never per packet).
func BenchmarkEnterExit(b *testing.B) {
	var c Calls
	var closing atomic.Bool
	for b.Loop() {
		if !c.Enter(&closing) {
			b.Fatal("Enter refused before closing")
		}
		c.Exit()
	}
}

type thing struct{}

//go:noinline
func (t *thing) call(fn func()) { fn() }

func (t *thing) inlined(fn func()) { fn() }

// TestInside: a goroutine inside a method, inlined or not, however deep
// the stack below it, is found inside it; one that is not, is not; and
// HoldsCaller says so only while a call is counted.
func TestInside(t *testing.T) {
	var th thing
	if inside((*thing).call) {
		t.Error("Inside reports a call the goroutine is not in")
	}
	var got, gotInlined, gotDeep bool
	th.call(func() { got = inside((*thing).call) })
	th.inlined(func() { gotInlined = inside((*thing).inlined) })
	var deep func(int)
	deep = func(n int) {
		if n == 0 {
			gotDeep = inside((*thing).call)
			return
		}
		deep(n - 1)
	}
	th.call(func() { deep(500) })
	if !got || !gotInlined || !gotDeep {
		t.Errorf("Inside from inside: %v, inlined %v, 500 frames down %v; want all true", got, gotInlined, gotDeep)
	}
	done := make(chan bool)
	th.call(func() { go func() { done <- inside((*thing).call) }() })
	if <-done {
		t.Error("a goroutine started inside the call reads as inside it")
	}
	var c Calls
	var closing atomic.Bool
	var idle, counted bool
	th.call(func() {
		idle = c.HoldsCaller((*thing).call)
		c.Enter(&closing)
		counted = c.HoldsCaller((*thing).call)
		c.Exit()
	})
	if idle || !counted {
		t.Errorf("HoldsCaller inside the method: %v with no call counted, %v with one; want false, true", idle, counted)
	}
	if !errors.Is(ErrInside, packetio.ErrBusy) {
		t.Error("ErrInside does not match packetio.ErrBusy")
	}
}
