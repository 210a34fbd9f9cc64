package pipe_test

import (
	"testing"

	"github.com/packetio/packetio/pipe"
)

// BenchmarkSendReceive is one 32-packet batch across a pipe: SendFunc on one
// end, Receive, Recycle and Fill on the other. The checked build's cost
// shows against the default build's here.
func BenchmarkSendReceive(b *testing.B) {
	a, c, err := pipe.New()
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	defer c.Close()
	tx, rx := a.TxQueue(0), c.RxQueue(0)
	rx.Fill(rx.NumFreeFillSlots())
	build := func(i int, f []byte) int { return 64 }
	b.ReportAllocs()
	for b.Loop() {
		tx.SendFunc(32, build)
		rx.Recycle(rx.Receive(64))
		rx.Fill(rx.NumFreeFillSlots())
	}
}
