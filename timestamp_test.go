package packetio_test

import (
	"fmt"

	"github.com/packetio/packetio"
)

// Departure stamps are matched to packets by Seq: the queue numbers the
// packets it hands over from 0, so a program that remembers what it sent
// as packet n finds its stamp by n. Here tx is a queue from a device opened
// with stamps asked for (afpacket.WithTxTimestamps).
func ExampleTimestampTransmitter() {
	var tx packetio.TxQueue // = dev.TxQueue(0)
	if tx == nil {
		return
	}
	ts, ok := tx.(packetio.TimestampTransmitter)
	if !ok {
		return
	}
	sentAt := make(map[uint64]string) // what packet n was
	next := uint64(0)
	frame := []byte("...")
	n, _ := tx.SendFunc(32, func(i int, f []byte) int { return copy(f, frame) })
	for range n {
		sentAt[next] = "ping"
		next++
	}
	tx.Complete(n)
	stamps := make([]packetio.TxStamp, 0, 64) // made once, reused
	for _, s := range ts.TxTimestamps(stamps[:0]) {
		fmt.Printf("packet %d (%s) left at %d ns\n", s.Seq, sentAt[s.Seq], s.Time)
	}
}
