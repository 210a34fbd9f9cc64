package devqueues_test

import (
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/devqueues"
)

type tx struct{ packetio.TxQueue }
type rx struct{ packetio.RxQueue }

func TestLists(t *testing.T) {
	a, b := &tx{}, &rx{}
	l := devqueues.Lists[*tx, *rx]{Tx: []*tx{a}, Rx: []*rx{b, b}}
	if l.NumTxQueues() != 1 || l.NumRxQueues() != 2 {
		t.Fatalf("counts %d/%d, want 1/2", l.NumTxQueues(), l.NumRxQueues())
	}
	if l.TxQueue(0) != a || l.RxQueue(1) != b {
		t.Error("lookups do not return the queues")
	}
	for _, i := range []int{-1, 1, 1 << 30} {
		if q := l.TxQueue(i); q != nil {
			t.Errorf("TxQueue(%d) = %v, want a nil interface", i, q)
		}
	}
	for _, i := range []int{-1, 2} {
		if q := l.RxQueue(i); q != nil {
			t.Errorf("RxQueue(%d) = %v, want a nil interface", i, q)
		}
	}
}

// TestNilLists: a nil *Lists has no queues and panics on no lookup, which
// is what a nil Device forwards to.
func TestNilLists(t *testing.T) {
	var l *devqueues.Lists[*tx, *rx]
	if l.NumTxQueues() != 0 || l.NumRxQueues() != 0 {
		t.Fatalf("nil lists count %d/%d queues", l.NumTxQueues(), l.NumRxQueues())
	}
	if l.TxQueue(0) != nil || l.RxQueue(0) != nil {
		t.Fatal("nil lists return a queue")
	}
}
