package netstack

import (
	"fmt"
	"sync/atomic"

	"github.com/packetio/packetio"
)

// faultyDevice wraps a device to inject what a pipe never does on its own:
// a transmit queue that stays full, takes only part of a batch or dies, and
// a receive queue that corrupts frames.
type faultyDevice struct {
	packetio.Device
	tx []*faultyTx
	rx []*faultyRx
	// noRx hides the receive queues, noTx the transmit queues.
	noRx, noTx bool
}

type faultyTx struct {
	packetio.TxQueue
	full    atomic.Bool  // NumFreeSlots 0, Transmit takes nothing
	partial atomic.Int32 // > 0: the next multi-frame Transmit takes only this many
	failed  atomic.Bool  // Err reports a dead queue
}

type faultyRx struct {
	packetio.RxQueue
	corruptEvery atomic.Int32 // flip a byte in every n-th frame longer than 100 bytes
	seen         int
	dropped      atomic.Uint64 // added to the queue's RxStats.Dropped
}

func newFaulty(d packetio.Device) *faultyDevice {
	f := &faultyDevice{Device: d}
	for i := 0; i < d.NumTxQueues(); i++ {
		f.tx = append(f.tx, &faultyTx{TxQueue: d.TxQueue(i)})
	}
	for i := 0; i < d.NumRxQueues(); i++ {
		f.rx = append(f.rx, &faultyRx{RxQueue: d.RxQueue(i)})
	}
	return f
}

func (f *faultyDevice) NumTxQueues() int {
	if f.noTx {
		return 0
	}
	return len(f.tx)
}

func (f *faultyDevice) NumRxQueues() int {
	if f.noRx {
		return 0
	}
	return len(f.rx)
}

func (f *faultyDevice) TxQueue(i int) packetio.TxQueue {
	if i < 0 || i >= len(f.tx) {
		return nil
	}
	return f.tx[i]
}

func (f *faultyDevice) RxQueue(i int) packetio.RxQueue {
	if i < 0 || i >= len(f.rx) {
		return nil
	}
	return f.rx[i]
}

func (q *faultyTx) NumFreeSlots() int {
	if q.full.Load() {
		return 0
	}
	return q.TxQueue.NumFreeSlots()
}

func (q *faultyTx) Transmit(descs []packetio.Desc) int {
	if q.full.Load() || q.failed.Load() {
		return 0
	}
	if p := int(q.partial.Load()); p > 0 && len(descs) > p {
		q.partial.Store(0)
		return q.TxQueue.Transmit(descs[:p])
	}
	return q.TxQueue.Transmit(descs)
}

func (q *faultyTx) SendFunc(count int, build func(int, []byte) int) (int, error) {
	panic("netstack does not use SendFunc")
}

func (q *faultyTx) Err() error {
	if q.failed.Load() {
		return fmt.Errorf("faulty tx: %w", packetio.ErrQueueFailed)
	}
	return q.TxQueue.Err()
}

func (q *faultyRx) Stats() (packetio.RxStats, error) {
	s, err := q.RxQueue.Stats()
	s.Dropped += q.dropped.Load()
	return s, err
}

func (q *faultyRx) Receive(max int) []packetio.Desc {
	descs := q.RxQueue.Receive(max)
	if n := int(q.corruptEvery.Load()); n > 0 {
		region := q.Region()
		for _, d := range descs {
			if d.Len <= 100 {
				continue
			}
			q.seen++
			if q.seen%n == 0 {
				region.Frame(d)[d.Len-1] ^= 0x5a
			}
		}
	}
	return descs
}
