package live

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio"

	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/cpus"
	"github.com/packetio/packetio/examples/internal/testbed"
)

// socketFeed is what feeds where the kernel refuses live frames: afpacket
// transmit queues on the peer (its TX ring, qdisc bypassed), one sender
// goroutine per CPU of cpus, each pinned there, sending copies of frame
// with the flow field advanced per frame as the generators do. A veth takes
// a packet socket's frames without NAPI, so the example's end needs no GRO.
// It offers what a user-space sender on a veth can (drop read about half a
// million frames a second from one sender, on the machine that refuses live
// frames), which is less than most receivers take: the example's first line
// says so.
type socketFeed struct {
	dev     packetio.Device
	frame   []byte
	flows   Flows
	cpus    []int
	refused error // the kernel's refusal of live frames
	sent    atomic.Uint64
}

// socketBatch is the most frames a sender offers per SendFunc.
const socketBatch = 64

func newSocketFeed(bed *testbed.Bed, frame []byte, flows Flows, cpus []int, refused error) (*socketFeed, error) {
	n := max(len(cpus), 1)
	d, err := bed.OpenPeer(func(name string) (packetio.Device, error) {
		return backend.Open("afpacket", name, backend.Config{TxQueues: n})
	})
	if err != nil {
		return nil, fmt.Errorf("live: the afpacket feeder on %s: %w", bed.Peer, err)
	}
	return &socketFeed{dev: d, frame: append([]byte(nil), frame...), flows: flows, cpus: cpus, refused: refused}, nil
}

// run feeds until ctx ends, at rate frames a second over all senders (0:
// as fast as they go), and returns the first error a queue gave.
func (f *socketFeed) run(ctx context.Context, rate float64) error {
	n := f.dev.NumTxQueues()
	per := rate / float64(n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for q := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if len(f.cpus) > 0 && f.cpus[q%len(f.cpus)] >= 0 {
				if err := cpus.Pin(f.cpus[q%len(f.cpus)]); err != nil {
					errs[q] = err
					return
				}
			}
			errs[q] = f.send(ctx, f.dev.TxQueue(q), q, per)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("live: the afpacket feeder: %w", err)
		}
	}
	return nil
}

// send is one sender: copies of the frame, flow first+i for the i-th,
// paced to rate frames a second when rate is not 0.
func (f *socketFeed) send(ctx context.Context, tx packetio.TxQueue, first int, rate float64) error {
	flow := first
	var base uint16
	if f.flows.N > 1 {
		base = uint16(f.frame[f.flows.Offset])<<8 | uint16(f.frame[f.flows.Offset+1])
	}
	build := func(i int, b []byte) int {
		n := copy(b, f.frame)
		if n < len(f.frame) {
			return 0
		}
		if f.flows.N > 1 {
			v := base + uint16((flow+i)%f.flows.N)
			b[f.flows.Offset], b[f.flows.Offset+1] = byte(v>>8), byte(v)
		}
		return n
	}
	start := time.Now()
	var mine float64
	for ctx.Err() == nil {
		batch := socketBatch
		if rate > 0 {
			ahead := mine - rate*time.Since(start).Seconds()
			if ahead >= 1 {
				if sleep(ctx, time.Duration(ahead/rate*float64(time.Second))) != nil {
					return nil
				}
				continue
			}
			batch = int(min(max(-ahead, 1), socketBatch))
		}
		n, err := tx.SendFunc(batch, build)
		if err != nil {
			return err
		}
		flow += n
		mine += float64(n)
		f.sent.Add(uint64(n))
		if n == 0 {
			time.Sleep(20 * time.Microsecond) // the ring is full
		}
	}
	return nil
}

func (f *socketFeed) close() error { return f.dev.Close() }
