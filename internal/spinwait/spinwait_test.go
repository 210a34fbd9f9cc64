package spinwait

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	boom := errors.New("closed")
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		readyAt int // the look that sees something; -1 never
		failAt  int // the look that fails; -1 never
		want    int
		err     error
		looks   int // at least
	}{
		{"ready at once", time.Second, 0, -1, 3, nil, 1},
		{"timeout 0 looks once", 0, -1, -1, 0, nil, 1},
		{"ready after yields", time.Second, 300, -1, 3, nil, 301},
		{"error ends the wait", -1, -1, 10, 0, boom, 11},
		{"timeout passes", 5 * time.Millisecond, -1, -1, 0, nil, Yields},
	} {
		t.Run(tc.name, func(t *testing.T) {
			looks := 0
			start := time.Now()
			n, err := Wait(tc.timeout, func() (int, error) {
				looks++
				switch looks - 1 {
				case tc.readyAt:
					return 3, nil
				case tc.failAt:
					return 0, boom
				}
				return 0, nil
			})
			if n != tc.want || !errors.Is(err, tc.err) && err != tc.err {
				t.Fatalf("Wait = %d, %v; want %d, %v", n, err, tc.want, tc.err)
			}
			if looks < tc.looks {
				t.Errorf("%d looks, want at least %d", looks, tc.looks)
			}
			if tc.timeout > 0 && tc.readyAt < 0 && time.Since(start) < tc.timeout {
				t.Errorf("returned after %v, before the %v timeout", time.Since(start), tc.timeout)
			}
			if tc.timeout == 0 && looks != 1 {
				t.Errorf("timeout 0 looked %d times", looks)
			}
		})
	}
}

// TestSleepLetsOthersRun shows that Sleep hands the P to a goroutine
// waiting for it before the thread sleeps: with one P, a goroutine started
// just before two Sleeps has run when they return (one Sleep may find the
// runtime's global queue, which holds the sleeper, first in line). Without
// that, a loop of naps keeps the P for as long as the runtime does not
// notice, and the rest of the program waits.
func TestSleepLetsOthersRun(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for i := range 200 {
		var ran atomic.Bool
		go ran.Store(true)
		Sleep(Nap)
		Sleep(Nap)
		if !ran.Load() {
			t.Fatalf("round %d: a goroutine waiting for the only P did not run during two Sleeps", i)
		}
	}
}

// BenchmarkSleep shows why the naps are not time.Sleep: ns/op is what a
// 20 µs sleep takes (here Sleep about 93 µs, time.Sleep 1.1 ms, the
// runtime's poller rounding a timer under a millisecond up to one).
func BenchmarkSleep(b *testing.B) {
	for _, bc := range []struct {
		name  string
		sleep func(time.Duration)
	}{
		{"Sleep", Sleep},
		{"time.Sleep", time.Sleep},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				bc.sleep(Nap)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	var b Backoff
	us := time.Microsecond
	for i, want := range []time.Duration{20 * us, 40 * us, 80 * us, 160 * us, 320 * us, MaxNap, MaxNap} {
		if got := b.Next(); got != want {
			t.Fatalf("nap %d: %v, want %v", i, got, want)
		}
	}
	b.Reset()
	if got := b.Next(); got != Nap {
		t.Fatalf("after Reset: %v, want %v", got, Nap)
	}
}
