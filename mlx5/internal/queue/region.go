// Package queue implements packetio's Device, TxQueue, RxQueue and Region
// over mlx5 rings and frame pools. It is pure Go and untagged: the public
// mlx5 package (built with -tags mlx5) assembles it over rings whose memory
// comes from the card, and the tests assemble it over rings whose memory is
// shared with mlx5/internal/mocknic, so the conformance suite runs the very
// queue code a ConnectX would.
package queue

import "github.com/packetio/packetio"

// Region is a packetio.Region over one block of frame memory.
type Region struct {
	buf       []byte
	frameSize int
	mask      uint64
	frames    int
}

// NewRegion wraps buf as frames of frameSize bytes (a power of two).
func NewRegion(buf []byte, frameSize int) *Region {
	return &Region{buf: buf, frameSize: frameSize, mask: uint64(frameSize - 1), frames: len(buf) / frameSize}
}

var _ packetio.Region = (*Region)(nil)

// Bytes returns the whole mapping.
func (r *Region) Bytes() []byte { return r.buf }

// Frame returns the d.Len bytes at d.Addr, or nil when they are not inside
// the region.
func (r *Region) Frame(d packetio.Desc) []byte {
	n := uint64(len(r.buf))
	if d.Addr >= n || uint64(d.Len) > n-d.Addr {
		return nil
	}
	end := d.Addr + uint64(d.Len)
	return r.buf[d.Addr:end:end]
}

// Writable returns the bytes from d.Addr to the end of its frame, or nil
// when d.Addr is outside the region.
func (r *Region) Writable(d packetio.Desc) []byte {
	if d.Addr >= uint64(r.frames)*uint64(r.frameSize) {
		return nil
	}
	end := (d.Addr | r.mask) + 1
	return r.buf[d.Addr:end:end]
}

// FrameSize is the size of one frame.
func (r *Region) FrameSize() int { return r.frameSize }

// NumFrames is the number of frames.
func (r *Region) NumFrames() int { return r.frames }
