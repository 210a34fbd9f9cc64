package backend

import (
	"fmt"

	"github.com/packetio/packetio"
)

// errNoSteering refuses a filter on a backend that has no steering, rather
// than ignore it and deliver more than was asked.
func errNoSteering(backend string) error {
	return fmt.Errorf("%s has no steering (it is a tap: the kernel sees every packet anyway); drop the filter or pick another backend: %w", backend, packetio.ErrUnsupported)
}

// errNoMultiBuffer refuses Config.MultiBuffer on a backend without it,
// rather than open a device that drops every packet bigger than a frame.
func errNoMultiBuffer(backend string) error {
	return fmt.Errorf("%s has no multi-buffer (a packet cannot span frames): %w", backend, packetio.ErrUnsupported)
}
