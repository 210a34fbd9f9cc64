package afxdp

import (
	"sync/atomic"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp/xdp"
)

// region is a UMEM seen as a packetio.Region: the fleet's one shared UMEM,
// or one socket's own when the kernel refused to share.
//
// After the device closes, every method returns nil (Bytes, Frame,
// Writable) or 0: the frames are gone. A slice taken before Close stays
// safe to touch: the xdp package replaces the frame memory with zeros
// instead of unmapping it (see xdp's umem release), so it reads zeros and
// never faults.
type region struct {
	mem       []byte
	frameSize int
	mask      uint64
	// owner is a socket registered with this memory, bound by the first
	// Region call: once it closes, the device is closed and the frames
	// are gone.
	owner atomic.Pointer[xdp.Socket]
}

var _ packetio.Region = (*region)(nil)

func newRegion(mem []byte, frameSize int) *region {
	return &region{mem: mem, frameSize: frameSize, mask: uint64(frameSize - 1)}
}

// of binds the region to a socket registered with its memory, once, and
// returns it: what a queue's Region hands out.
func (r *region) of(s *xdp.Socket) *region {
	if r.owner.Load() == nil {
		r.owner.CompareAndSwap(nil, s)
	}
	return r
}

// gone reports whether the memory went with its device.
func (r *region) gone() bool {
	s := r.owner.Load()
	return s != nil && s.Closed()
}

func (r *region) Bytes() []byte {
	if r.gone() {
		return nil
	}
	return r.mem
}

func (r *region) Frame(d packetio.Desc) []byte {
	end := d.Addr + uint64(d.Len)
	if d.Addr >= uint64(len(r.mem)) || end > uint64(len(r.mem)) || end < d.Addr || r.gone() {
		return nil
	}
	return r.mem[d.Addr:end:end]
}

func (r *region) Writable(d packetio.Desc) []byte {
	if d.Addr >= uint64(len(r.mem)) || r.gone() {
		return nil
	}
	end := min(d.Addr&^r.mask+uint64(r.frameSize), uint64(len(r.mem)))
	return r.mem[d.Addr:end:end]
}

func (r *region) FrameSize() int { return r.frameSize }

func (r *region) NumFrames() int { return len(r.mem) / r.frameSize }
