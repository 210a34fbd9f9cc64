// Package pool is the free list of frames that every backend draws on: one
// pool per queue per direction, over a disjoint range of one region.
//
// A pool is a LIFO stack of frame start offsets (the frame freed last is the
// one most likely still in cache). It is not synchronised: one goroutine owns
// it, as one goroutine owns a queue. Frame sizes are powers of two, so the
// frame of an address is a shift and its start a mask, never a division.
//
// Push refuses, and counts, a frame the pool cannot own: outside its range,
// not a frame start, or one more than it can hold. Built with the
// packetio_checked tag it also keeps one bit per frame and refuses a frame
// that is already free, which plain counting cannot see.
package pool

import (
	"fmt"
	"math/bits"
	"sync/atomic"
)

// Frames is a free list of frames of one size covering [base, end) of a
// region.
type Frames struct {
	free     []uint64 // LIFO stack of free frame starts; cap is the frame count
	mask     uint64   // frameSize-1
	shift    uint     // log2(frameSize)
	base     uint64   // first byte owned
	end      uint64   // one past the last byte owned
	rejected atomic.Uint64
	marks    marks // duplicate detection in packetio_checked builds
}

// New returns a full pool of count frames of frameSize bytes, starting at
// frame index first of the region: it covers bytes [first*frameSize,
// (first+count)*frameSize). The first pops return the lowest addresses.
// frameSize must be a power of two and count at least zero.
func New(first, count, frameSize int) (*Frames, error) {
	if frameSize <= 0 || frameSize&(frameSize-1) != 0 {
		return nil, fmt.Errorf("pool: frame size %d is not a power of two", frameSize)
	}
	if first < 0 || count < 0 {
		return nil, fmt.Errorf("pool: negative range (first %d, count %d)", first, count)
	}
	p := &Frames{
		free:  make([]uint64, count),
		mask:  uint64(frameSize - 1),
		shift: uint(bits.TrailingZeros(uint(frameSize))),
		base:  uint64(first) * uint64(frameSize),
	}
	p.end = p.base + uint64(count)*uint64(frameSize)
	for i := range p.free {
		// Reverse order, so that Pop (from the top) hands out the
		// lowest address first.
		p.free[i] = p.base + uint64(count-1-i)*uint64(frameSize)
	}
	p.marks.init(count)
	return p, nil
}

// Len is the number of free frames.
func (p *Frames) Len() int { return len(p.free) }

// Cap is the number of frames the pool covers.
func (p *Frames) Cap() int { return cap(p.free) }

// FrameSize is the size of one frame in bytes.
func (p *Frames) FrameSize() int { return int(p.mask) + 1 }

// Owns reports whether addr lies inside the pool's range.
func (p *Frames) Owns(addr uint64) bool { return addr >= p.base && addr < p.end }

// Base rounds addr down to the start of its frame.
func (p *Frames) Base(addr uint64) uint64 { return addr &^ p.mask }

// Pop appends up to n free frame starts to dst and returns it. It appends
// fewer when fewer are free, and nothing when n <= 0. It does not allocate
// when dst has the capacity.
func (p *Frames) Pop(n int, dst []uint64) []uint64 {
	if n > len(p.free) {
		n = len(p.free)
	}
	if n <= 0 {
		return dst
	}
	top := len(p.free)
	for i := top - 1; i >= top-n; i-- {
		a := p.free[i]
		p.marks.take(p.index(a))
		dst = append(dst, a)
	}
	p.free = p.free[:top-n]
	return dst
}

// Push returns one frame, by its start address (round with Base first). A
// foreign, unaligned or surplus frame (and, in a checked build, a frame
// already free) is refused and counted in Rejected; Push reports whether it
// took the frame.
func (p *Frames) Push(addr uint64) bool {
	if addr < p.base || addr >= p.end || addr&p.mask != 0 || len(p.free) == cap(p.free) || !p.marks.give(p.index(addr)) {
		p.rejected.Add(1)
		return false
	}
	p.free = append(p.free, addr)
	return true
}

// Rejected counts refused pushes since New. It is safe to call from any
// goroutine; anything but 0 is a bug above the pool.
func (p *Frames) Rejected() uint64 { return p.rejected.Load() }

// index is the frame's position inside the pool. Only called with an address
// inside the range.
func (p *Frames) index(addr uint64) int { return int((addr - p.base) >> p.shift) }
