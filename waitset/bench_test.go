//go:build linux

package waitset_test

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afpacket"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/pipe"
	"github.com/packetio/packetio/waitset"
)

// polled hides a queue's ReadyNotifier, so the set polls it.
type polled struct{ packetio.RxQueue }

// BenchmarkWake measures the wake-up latency of one Wait (from the moment a
// sender, on another goroutine, transmits one frame after a pause of 2 to 3 ms, to the
// moment Wait returns it) and the CPU the waiting thread uses while idle, for
// an afpacket queue waited on with epoll (TPACKET_V2 and V3) and the same
// queue polled by the fallback, every 1 ms. -benchtime=200x is plenty.
func BenchmarkWake(b *testing.B) {
	for _, m := range []struct {
		name   string
		low    bool
		polled bool
	}{
		{"epoll-v2", true, false},
		{"epoll-v3", false, false},
		{"polled-v2", true, true},
	} {
		b.Run(m.name, func(b *testing.B) {
			p := netns.New(b)
			opts := []afpacket.Option{afpacket.WithTxQueues(0)}
			if m.low {
				opts = append(opts, afpacket.WithLowLatency())
			}
			dst := openAfpacket(b, p.B, opts...)
			src := openAfpacket(b, p.A, afpacket.WithRxQueues(0))
			var rx packetio.RxQueue = dst.RxQueue(0)
			if m.polled {
				rx = polled{rx}
			}
			s := newSet(b)
			if err := s.AddRx(rx, 0); err != nil {
				b.Fatal(err)
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			// Idle CPU over 500 ms of waiting.
			start, cpu0 := time.Now(), threadCPU(b)
			for time.Since(start) < 500*time.Millisecond {
				evs, err := s.Wait(500*time.Millisecond - time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				for _, ev := range evs {
					drain(ev.Rx)
				}
			}
			idle := float64(threadCPU(b)-cpu0) / float64(time.Since(start)) * 100

			frame := testFrames(p.B.MAC, 1)
			var sentAt atomic.Int64
			lat := make([]time.Duration, 0, b.N)
			// The sender is joined before the device closes: a frame can
			// reach the receiver while SendFunc is still looking at the
			// transmit ring, and Close may not race Transmit (it unmaps
			// the ring).
			stop, exited := make(chan struct{}), make(chan struct{})
			defer func() { close(stop); <-exited }()
			next := make(chan struct{}, 1)
			go func() {
				defer close(exited)
				for {
					select {
					case <-stop:
						return
					case <-next:
					}
					// A pause out of phase with the fallback's 1 ms cadence.
					time.Sleep(2*time.Millisecond + rand.N(time.Millisecond))
					sentAt.Store(time.Now().UnixNano())
					send(b, src.TxQueue(0), frame)
				}
			}()
			b.ResetTimer()
			for range b.N {
				next <- struct{}{}
				got := 0
				for got == 0 {
					evs, err := s.Wait(time.Second)
					if err != nil {
						b.Fatal(err)
					}
					if len(evs) == 0 {
						b.Fatal("no wake-up within a second")
					}
					for _, ev := range evs {
						got += drain(ev.Rx)
					}
				}
				lat = append(lat, time.Duration(time.Now().UnixNano()-sentAt.Load()))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "µs-p50-wake")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "µs-p99-wake")
			b.ReportMetric(idle, "%cpu-idle")
		})
	}
}

// BenchmarkWaitScan is the cost of one Wait(0) that finds work on a set of
// 16 polled pipe queues and 1 ready one.
func pipeQueues(n int) pipe.Option { return pipe.WithQueues(n) }

func BenchmarkWaitScan(b *testing.B) {
	a, d := newPipe(b, pipeQueues(16))
	s := newSet(b)
	for i := range 16 {
		d.RxQueue(i).Fill(d.RxQueue(i).NumFreeFillSlots())
		if err := s.AddRx(d.RxQueue(i), i); err != nil {
			b.Fatal(err)
		}
	}
	send(b, a.TxQueue(0), frames(1, 60))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if evs, err := s.Wait(0); err != nil || len(evs) != 1 {
			b.Fatalf("Wait(0) = %v, %v", evs, err)
		}
	}
}

var _ = waitset.DefaultPollInterval
