package afpacket

import "github.com/packetio/packetio"

// region is the frame memory of a Device: one anonymous mapping of
// frames*frameSize bytes. Nothing in it is shared with the kernel (receive
// copies out of the ring, transmit hands the kernel iovecs that it copies
// from), so it is mapped only to get stable, page-aligned memory with the
// same layout and descriptor arithmetic as the zero-copy backends.
type region struct {
	mem    []byte
	size   uint64 // len(mem)
	mask   uint64 // frameSize-1
	frames int
}

var _ packetio.Region = (*region)(nil)

func newRegion(mem []byte, frameSize int) *region {
	return &region{mem: mem, size: uint64(len(mem)), mask: uint64(frameSize - 1), frames: len(mem) / frameSize}
}

// Bytes returns the whole region.
func (r *region) Bytes() []byte { return r.mem }

// Frame returns the d.Len bytes at d.Addr, or nil when they are not inside
// the region.
func (r *region) Frame(d packetio.Desc) []byte {
	if d.Addr >= r.size || uint64(d.Len) > r.size-d.Addr {
		return nil
	}
	end := d.Addr + uint64(d.Len)
	return r.mem[d.Addr:end:end]
}

// Writable returns the bytes from d.Addr to the end of its frame, or nil when
// d.Addr is outside the region.
func (r *region) Writable(d packetio.Desc) []byte {
	if d.Addr >= r.size {
		return nil
	}
	end := min((d.Addr|r.mask)+1, r.size)
	return r.mem[d.Addr:end:end]
}

// FrameSize is the size of one frame.
func (r *region) FrameSize() int { return int(r.mask) + 1 }

// NumFrames is the number of frames.
func (r *region) NumFrames() int { return r.frames }

// descOK reports whether d names at least one byte inside one frame of the
// region: Len >= 1, Addr inside the region, and Addr+Len no further than the
// end of the frame holding Addr. Written with subtractions, so a huge Addr or
// Len cannot wrap into a valid range.
func (r *region) descOK(d packetio.Desc) bool {
	if d.Len == 0 || d.Addr >= r.size {
		return false
	}
	room := (d.Addr | r.mask) + 1 - d.Addr // bytes to the end of the frame
	return uint64(d.Len) <= room
}
