package queue

import (
	"errors"
	"sync"

	"github.com/packetio/packetio"
)

// Backend is the name of the mlx5 backend in Capabilities and errors.
const Backend = "mlx5"

// Device is a packetio.Device over assembled queues.
type Device struct {
	Iface string                // the interface, for errors
	Caps  packetio.Capabilities // what the device really does
	Txs   []*TxQueue            // the transmit queues
	Rxs   []*RxQueue            // the receive queues
	// Release, when set, runs once on the first Close, after every queue
	// is closed: it destroys the hardware objects and unmaps the region.
	Release func() error

	once sync.Once
	err  error
}

var _ packetio.Device = (*Device)(nil)

// Capabilities reports what the device does.
func (d *Device) Capabilities() packetio.Capabilities { return d.Caps }

// NumTxQueues is the number of transmit queues.
func (d *Device) NumTxQueues() int { return len(d.Txs) }

// NumRxQueues is the number of receive queues.
func (d *Device) NumRxQueues() int { return len(d.Rxs) }

// TxQueue returns transmit queue i, or nil when i is out of range.
func (d *Device) TxQueue(i int) packetio.TxQueue {
	if i < 0 || i >= len(d.Txs) {
		return nil
	}
	return d.Txs[i]
}

// RxQueue returns receive queue i, or nil when i is out of range.
func (d *Device) RxQueue(i int) packetio.RxQueue {
	if i < 0 || i >= len(d.Rxs) {
		return nil
	}
	return d.Rxs[i]
}

// Close closes every queue, then releases the hardware. A second call
// returns nil and does nothing.
func (d *Device) Close() error {
	first := false
	d.once.Do(func() {
		first = true
		var errs []error
		for _, q := range d.Rxs {
			errs = append(errs, q.Close())
		}
		for _, q := range d.Txs {
			errs = append(errs, q.Close())
		}
		if d.Release != nil {
			errs = append(errs, d.Release())
		}
		d.err = packetio.NewOpError("close", Backend, d.Iface, packetio.NoQueue, errors.Join(errs...))
	})
	if !first {
		return nil
	}
	return d.err
}
