package pipe

import "github.com/packetio/packetio"

// region is Go memory: frames end to end, no headroom.
type region struct {
	mem       []byte
	frameSize int
	mask      uint64
}

func newRegion(frames, frameSize int) *region {
	return &region{mem: make([]byte, frames*frameSize), frameSize: frameSize, mask: uint64(frameSize - 1)}
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
