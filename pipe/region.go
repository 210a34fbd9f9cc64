package pipe

import (
	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/numa"
)

// region is frames end to end, no headroom: Go memory, or with
// WithNUMANode a mapping bound to a node (internal/numa).
type region struct {
	mem       []byte
	frameSize int
	mask      uint64
	bound     bool // mem is a mapping bound to node, given back by release
	node      int
}

// newRegion makes the region on the Go heap, or bound to node unless it is
// numa.Unset.
func newRegion(frames, frameSize, node int) (*region, error) {
	r := &region{frameSize: frameSize, mask: uint64(frameSize - 1), node: numa.Unset}
	if node == numa.Unset {
		r.mem = make([]byte, frames*frameSize)
		return r, nil
	}
	mem, err := numa.Alloc(frames*frameSize, node)
	if err != nil {
		return nil, err
	}
	r.mem, r.bound, r.node = mem, true, node
	return r, nil
}

// release gives a bound region's pages back; the range stays mapped and
// reads as zeros, so a frame slice kept past Close never faults.
func (r *region) release() {
	if r.bound {
		numa.Release(r.mem)
	}
}

func (r *region) Bytes() []byte  { return r.mem }
func (r *region) FrameSize() int { return r.frameSize }
func (r *region) NumFrames() int { return len(r.mem) / r.frameSize }

// Frame returns d's bytes, or nil when they are not all inside the region.
func (r *region) Frame(d packetio.Desc) []byte {
	end := d.Addr + uint64(d.Len)
	if end < d.Addr || end > uint64(len(r.mem)) {
		return nil
	}
	return r.mem[d.Addr:end:end]
}

// Writable returns from d.Addr to the end of its frame, or nil outside.
func (r *region) Writable(d packetio.Desc) []byte {
	if d.Addr >= uint64(len(r.mem)) {
		return nil
	}
	end := (d.Addr &^ r.mask) + uint64(r.frameSize)
	return r.mem[d.Addr:end:end]
}

// inFrame reports whether d names 1+ bytes inside one frame of the region.
func (r *region) inFrame(d packetio.Desc) bool {
	if d.Len == 0 || d.Addr >= uint64(len(r.mem)) {
		return false
	}
	return d.Addr&r.mask+uint64(d.Len) <= uint64(r.frameSize)
}
