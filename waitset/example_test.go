//go:build linux

package waitset_test

import (
	"fmt"
	"time"

	"github.com/packetio/packetio/pipe"
	"github.com/packetio/packetio/waitset"
)

// One goroutine serves the two receive queues of a device.
func Example() {
	a, b, err := pipe.New(pipe.WithQueues(2))
	if err != nil {
		panic(err)
	}
	defer a.Close()
	defer b.Close()

	s, err := waitset.New()
	if err != nil {
		panic(err)
	}
	defer s.Close()
	for i := range b.NumRxQueues() {
		rx := b.RxQueue(i)
		rx.Fill(rx.NumFreeFillSlots())
		if err := s.AddRx(rx, i); err != nil {
			panic(err)
		}
	}

	// Three frames arrive on queue 1.
	a.TxQueue(1).SendFunc(3, func(i int, frame []byte) int { return copy(frame, make([]byte, 60)) })

	received := 0
	for received < 3 {
		evs, err := s.Wait(time.Second)
		if err != nil {
			panic(err)
		}
		for _, ev := range evs {
			if ev.Err != nil {
				fmt.Println("queue", ev.Tag, "ended:", ev.Err)
				continue
			}
			for {
				descs := ev.Rx.Receive(256)
				if len(descs) == 0 {
					break
				}
				received += len(descs)
				fmt.Println("queue", ev.Tag, "received", len(descs))
				ev.Rx.Recycle(descs)
				ev.Rx.Fill(ev.Rx.NumFreeFillSlots())
			}
		}
	}
	// Output: queue 1 received 3
}
