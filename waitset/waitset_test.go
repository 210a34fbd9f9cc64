//go:build linux

package waitset_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/pipe"
	"github.com/packetio/packetio/waitset"
)

// newSet returns a set closed at the end of the test.
func newSet(t testing.TB, opts ...waitset.Option) *waitset.Set {
	t.Helper()
	s, err := waitset.New(opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newPipe returns a pipe pair closed at the end of the test.
func newPipe(t testing.TB, opts ...pipe.Option) (a, b packetio.Device) {
	t.Helper()
	a, b, err := pipe.New(opts...)
	if err != nil {
		t.Fatalf("pipe.New: %v", err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// send transmits n frames of size bytes on tx, reclaiming completions.
func send(t testing.TB, tx packetio.TxQueue, frames [][]byte) {
	t.Helper()
	for i := 0; i < len(frames); {
		tx.Complete(1 << 20)
		k, err := tx.SendFunc(len(frames)-i, func(j int, f []byte) int { return copy(f, frames[i+j]) })
		if err != nil {
			t.Fatalf("SendFunc: %v", err)
		}
		if k == 0 {
			time.Sleep(100 * time.Microsecond)
		}
		i += k
	}
	tx.Complete(1 << 20)
}

func frames(n, size int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		f := make([]byte, size)
		f[0] = byte(i)
		out[i] = f
	}
	return out
}

// drain receives everything rx holds and returns the count.
func drain(rx packetio.RxQueue) int {
	n := 0
	for {
		rx.Fill(rx.NumFreeFillSlots())
		d := rx.Receive(256)
		if len(d) == 0 {
			return n
		}
		n += len(d)
		rx.Recycle(d)
	}
}

func TestPipeWait(t *testing.T) {
	a, b := newPipe(t, pipe.WithQueues(2))
	s := newSet(t)
	for i := range 2 {
		b.RxQueue(i).Fill(b.RxQueue(i).NumFreeFillSlots())
		if err := s.AddRx(b.RxQueue(i), 10+i); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddRx(b.RxQueue(0), 0); !errors.Is(err, packetio.ErrInvalid) {
		t.Errorf("adding a queue twice: %v, want ErrInvalid", err)
	}
	if err := s.AddTx(a.TxQueue(1), 21); err != nil {
		t.Fatal(err)
	}
	if got := s.Len(); got != 3 {
		t.Errorf("Len = %d, want 3", got)
	}
	evs, err := s.Wait(0)
	if err != nil || len(evs) != 0 {
		t.Fatalf("idle Wait(0) = %v, %v; want nothing", evs, err)
	}
	send(t, a.TxQueue(1), frames(5, 60))
	got := 0
	for got < 5 {
		evs, err := s.Wait(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			t.Fatalf("Wait timed out with %d of 5 frames", got)
		}
		for _, ev := range evs {
			if ev.Err != nil {
				t.Fatalf("event %+v", ev)
			}
			if ev.Rx != nil {
				if ev.Rx != b.RxQueue(1) || ev.Tag != 11 {
					t.Errorf("event for queue tag %d, want 11", ev.Tag)
				}
				got += drain(ev.Rx)
			}
		}
	}
	if !s.RemoveTx(a.TxQueue(1)) || s.RemoveTx(a.TxQueue(1)) {
		t.Error("RemoveTx: want true then false")
	}
}

func TestWaitZeroAllocs(t *testing.T) {
	a, b := newPipe(t)
	s := newSet(t)
	rx := b.RxQueue(0)
	rx.Fill(rx.NumFreeFillSlots())
	if err := s.AddRx(rx, 0); err != nil {
		t.Fatal(err)
	}
	send(t, a.TxQueue(0), frames(1, 60))
	allocs := testing.AllocsPerRun(100, func() {
		if evs, err := s.Wait(0); err != nil || len(evs) != 1 {
			t.Fatalf("Wait(0) = %v, %v", evs, err)
		}
	})
	if allocs != 0 {
		t.Errorf("Wait allocates %v times per call, want 0", allocs)
	}
}

func TestPolledQueueClosed(t *testing.T) {
	_, b := newPipe(t)
	s := newSet(t)
	rx := b.RxQueue(0)
	if err := s.AddRx(rx, 7); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		rx.Close()
	}()
	evs, err := s.Wait(-1)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Tag != 7 || !errors.Is(evs[0].Err, packetio.ErrClosed) {
		t.Fatalf("Wait = %+v, want one event with ErrClosed", evs)
	}
	if s.Len() != 0 {
		t.Errorf("a closed queue stays in the set")
	}
	if err := s.AddRx(rx, 0); !errors.Is(err, packetio.ErrClosed) {
		t.Errorf("AddRx of a closed queue: %v, want ErrClosed", err)
	}
}

func TestCloseWakesWait(t *testing.T) {
	s := newSet(t)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(20 * time.Millisecond)
		s.Close()
	}()
	if _, err := s.Wait(-1); !errors.Is(err, packetio.ErrClosed) {
		t.Errorf("Wait interrupted by Close: %v, want ErrClosed", err)
	}
	wg.Wait()
	if _, err := s.Wait(0); !errors.Is(err, packetio.ErrClosed) {
		t.Errorf("Wait after Close: %v, want ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		d  time.Duration
		ok bool
	}{
		{time.Millisecond, true}, {time.Microsecond, true}, {time.Second, true},
		{0, false}, {-1, false}, {time.Second + 1, false},
	} {
		s, err := waitset.New(waitset.WithPollInterval(tc.d))
		if (err == nil) != tc.ok {
			t.Errorf("WithPollInterval(%v): %v", tc.d, err)
		}
		if err == nil {
			s.Close()
		} else if !errors.Is(err, packetio.ErrInvalid) {
			t.Errorf("WithPollInterval(%v): %v, want ErrInvalid", tc.d, err)
		}
	}
	if _, err := waitset.New(nil); err != nil {
		t.Errorf("New(nil option): %v", err)
	}
}

func FuzzOptions(f *testing.F) {
	f.Add(int64(time.Millisecond))
	f.Add(int64(-5))
	f.Fuzz(func(t *testing.T, d int64) {
		s, err := waitset.New(waitset.WithPollInterval(time.Duration(d)))
		if err != nil {
			if !errors.Is(err, packetio.ErrInvalid) {
				t.Fatalf("%v", err)
			}
			return
		}
		if evs, err := s.Wait(0); err != nil || len(evs) != 0 {
			t.Fatalf("empty Wait(0) = %v, %v", evs, err)
		}
		s.Close()
	})
}
