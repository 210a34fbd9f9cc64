// Package devqueues owns the queue lists every packetio Device keeps: a
// backend embeds Lists and gets NumTxQueues, NumRxQueues and the
// bounds-checked TxQueue and RxQueue lookups of the packetio.Device
// interface, written once.
package devqueues

import "github.com/packetio/packetio"

// Lists are a device's transmit and receive queues, by index.
type Lists[T packetio.TxQueue, R packetio.RxQueue] struct {
	Tx []T // the transmit queues
	Rx []R // the receive queues
}

// NumTxQueues is the number of transmit queues.
func (l *Lists[T, R]) NumTxQueues() int { return len(l.Tx) }

// NumRxQueues is the number of receive queues.
func (l *Lists[T, R]) NumRxQueues() int { return len(l.Rx) }

// TxQueue returns transmit queue i, or nil when i is out of range.
func (l *Lists[T, R]) TxQueue(i int) packetio.TxQueue {
	if i < 0 || i >= len(l.Tx) {
		return nil
	}
	return l.Tx[i]
}

// RxQueue returns receive queue i, or nil when i is out of range.
func (l *Lists[T, R]) RxQueue(i int) packetio.RxQueue {
	if i < 0 || i >= len(l.Rx) {
		return nil
	}
	return l.Rx[i]
}
