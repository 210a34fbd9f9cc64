package afxdp

import "github.com/packetio/packetio"

// region is a UMEM seen as a packetio.Region: the fleet's one shared UMEM,
// or one socket's own when the kernel refused to share.
type region struct {
	mem       []byte
	frameSize int
	mask      uint64
}

var _ packetio.Region = (*region)(nil)

func newRegion(mem []byte, frameSize int) *region {
	return &region{mem: mem, frameSize: frameSize, mask: uint64(frameSize - 1)}
}

func (r *region) Bytes() []byte { return r.mem }

func (r *region) Frame(d packetio.Desc) []byte {
	end := d.Addr + uint64(d.Len)
	if d.Addr >= uint64(len(r.mem)) || end > uint64(len(r.mem)) || end < d.Addr {
		return nil
	}
	return r.mem[d.Addr:end:end]
}

func (r *region) Writable(d packetio.Desc) []byte {
	if d.Addr >= uint64(len(r.mem)) {
		return nil
	}
	end := min(d.Addr&^r.mask+uint64(r.frameSize), uint64(len(r.mem)))
	return r.mem[d.Addr:end:end]
}

func (r *region) FrameSize() int { return r.frameSize }

func (r *region) NumFrames() int { return len(r.mem) / r.frameSize }
