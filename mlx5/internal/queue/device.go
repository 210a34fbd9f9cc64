package queue

import (
	"errors"
	"sync"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/devqueues"
)

// Backend is the name of the mlx5 backend in Capabilities and errors.
const Backend = "mlx5"

// Device is a packetio.Device over assembled queues.
type Device struct {
	Iface                               string                // the interface, for errors
	Caps                                packetio.Capabilities // what the device really does
	devqueues.Lists[*TxQueue, *RxQueue]                       // Tx and Rx, with the Device lookups
	// Release, when set, runs once on the first Close, after every queue
	// is closed: it destroys the hardware objects and unmaps the region.
	Release func() error

	once sync.Once
	err  error
}

var _ packetio.Device = (*Device)(nil)

// Capabilities reports what the device does.
func (d *Device) Capabilities() packetio.Capabilities { return d.Caps }

// Close closes every queue, then releases the hardware. A second call
// returns nil and does nothing. From inside a call on a transmit queue (a
// SendFunc build function), which it would wait for forever, it refuses
// with an error matching packetio.ErrBusy and changes nothing.
func (d *Device) Close() error {
	for _, q := range d.Tx {
		if err := q.refuseInside(); err != nil {
			return err
		}
	}
	first := false
	d.once.Do(func() {
		first = true
		var errs []error
		for _, q := range d.Rx {
			errs = append(errs, q.Close())
		}
		for _, q := range d.Tx {
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
