// Package devqueues owns the queue lists every packetio Device keeps: a
// backend embeds Lists and gets NumTxQueues, NumRxQueues and the
// bounds-checked TxQueue and RxQueue lookups of the packetio.Device
// interface, written once. Every method works on a nil *Lists (no queues),
// so a Device that must answer on a nil receiver forwards each lookup to
// its lists through one accessor that returns nil for a nil Device.
package devqueues

import "github.com/packetio/packetio"

// Lists are a device's transmit and receive queues, by index.
type Lists[T packetio.TxQueue, R packetio.RxQueue] struct {
	Tx []T // the transmit queues
	Rx []R // the receive queues
}

// NumTxQueues is the number of transmit queues (0 on a nil Lists).
func (l *Lists[T, R]) NumTxQueues() int {
	if l == nil {
		return 0
	}
	return len(l.Tx)
}

// NumRxQueues is the number of receive queues (0 on a nil Lists).
func (l *Lists[T, R]) NumRxQueues() int {
	if l == nil {
		return 0
	}
	return len(l.Rx)
}

// TxQueue returns transmit queue i, or nil when i is out of range or l is
// nil.
func (l *Lists[T, R]) TxQueue(i int) packetio.TxQueue {
	if l == nil || i < 0 || i >= len(l.Tx) {
		return nil
	}
	return l.Tx[i]
}

// RxQueue returns receive queue i, or nil when i is out of range or l is
// nil.
func (l *Lists[T, R]) RxQueue(i int) packetio.RxQueue {
	if l == nil || i < 0 || i >= len(l.Rx) {
		return nil
	}
	return l.Rx[i]
}
