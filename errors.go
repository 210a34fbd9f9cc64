package packetio

import "errors"

// The package sentinels. Backends wrap them with %w and add context (backend,
// interface, queue); callers test them with errors.Is. No other error value
// crosses the API: a dependency's error is translated into one of these.
var (
	// ErrClosed is returned by every method called on a closed queue or
	// device, and by Poll when the queue is closed while it waits.
	ErrClosed = errors.New("packetio: closed")

	// ErrQueueFailed means the kernel or the hardware put the queue out of
	// service for good. It accepts no more work; close the device and open a
	// new one. Err reports it.
	ErrQueueFailed = errors.New("packetio: queue failed")

	// ErrBadLength means a length or an offset supplied by the caller does
	// not fit: a SendFunc build callback returned a length below zero or
	// beyond its frame, or a descriptor, offload or gather argument names
	// bytes it does not own. Nothing of that call was sent.
	ErrBadLength = errors.New("packetio: build returned invalid length")

	// ErrUnsupported means the backend or the device cannot provide an option
	// or an operation. Every steering refusal wraps it, and so does every
	// optional-interface call the opened device cannot honour.
	ErrUnsupported = errors.New("packetio: unsupported")
)
