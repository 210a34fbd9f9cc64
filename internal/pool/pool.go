// Package pool is the free list of frames that every backend draws on: one
// pool per queue per direction, over a disjoint range of one region.
//
// A pool is a LIFO stack of frame start offsets (the frame freed last is the
// one most likely still in cache). It is not synchronised: one goroutine owns
// it, as one goroutine owns a queue. Frame sizes are powers of two, so the
// frame of an address is a shift and its start a mask, never a division.
//
// Push refuses, and counts, a frame the pool cannot own: outside its range,
// not a frame start, or one more than it can hold.
//
// Built with the packetio_checked tag the pool also knows who holds each of
// its frames: the pool, the caller (the program) or the NIC (posted to the
// fill ring, or in flight on transmit). The legal moves are Pop (pool to
// caller), PopFill (pool to NIC), Take (NIC to caller: receive, reclaim),
// Put (caller to pool: recycle, free), Send (caller to NIC: transmit) and
// Done (NIC to pool: complete). Any other move is refused, and the first one
// is kept for Misuse to report, so recycling a frame the NIC still holds
// cannot make two packets land in one frame. In other builds the table and
// every check on it compile to nothing.
package pool

import (
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/packetio/packetio"
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
	misuses  atomic.Uint64
	first    atomic.Pointer[Misused] // the first misuse, kept for Err
	marks    marks                   // who holds each frame, in packetio_checked builds
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
	return p.pop(n, dst, caller)
}

// PopFill is Pop for frames that go straight to the NIC's fill ring: in a
// checked build the NIC holds them until Take(OpReceive) or Done.
func (p *Frames) PopFill(n int, dst []uint64) []uint64 {
	if n > len(p.free) {
		n = len(p.free)
	}
	if n <= 0 {
		return dst
	}
	return p.pop(n, dst, nicFill)
}

// pop takes the top n (1 <= n <= Len) frames for holder h.
func (p *Frames) pop(n int, dst []uint64, h holder) []uint64 {
	top := len(p.free)
	for i := top - 1; i >= top-n; i-- {
		a := p.free[i]
		p.marks.set(p.index(a), h)
		dst = append(dst, a)
	}
	p.free = p.free[:top-n]
	return dst
}

// Push is Put(OpRecycle, addr): the caller returns a frame.
func (p *Frames) Push(addr uint64) bool { return p.give(OpRecycle, addr, caller) }

// Put returns one frame the caller holds, by its start address (round with
// Base first); op (OpRecycle or OpFree) names the call in the misuse report.
// A foreign, unaligned or surplus frame (and, in a checked build, one the
// caller does not hold) is refused and counted in Rejected; Put reports
// whether it took the frame.
func (p *Frames) Put(op Op, addr uint64) bool { return p.give(op, addr, caller) }

// Done returns one frame the NIC has finished with (a completed transmit, a
// posted frame taken back unused) to the pool, with Put's refusals; in a
// checked build the NIC must hold it.
func (p *Frames) Done(addr uint64) bool { return p.give(OpComplete, addr, nicAny) }

// TryPut is the common case of Put and Done, small enough to inline into a
// loop that returns frames a packet at a time: outside a checked build it
// pushes addr when it is the start of one of the pool's frames and there
// is room. Otherwise (and always in a checked build, which must check the
// holder) it takes nothing, counts nothing and reports false, and the
// caller calls Put or Done, which take or refuse the frame.
func (p *Frames) TryPut(addr uint64) bool {
	if Checked() || !p.Owns(addr) || addr&p.mask != 0 || len(p.free) == cap(p.free) {
		return false
	}
	p.free = p.free[:len(p.free)+1]
	p.free[len(p.free)-1] = addr
	return true
}

// give pushes addr when its holder is want.
func (p *Frames) give(op Op, addr uint64, want holder) bool {
	if addr < p.base || addr >= p.end || addr&p.mask != 0 {
		p.rejected.Add(1)
		return false
	}
	// The holder first: in a checked build a frame returned twice is
	// reported as such, not as a surplus.
	if h, ok := p.marks.move(p.index(addr), want, pooled); !ok {
		p.rejected.Add(1)
		p.misuse(op, addr, h)
		return false
	}
	if len(p.free) == cap(p.free) {
		p.rejected.Add(1)
		return false
	}
	p.free = append(p.free, addr)
	return true
}

// Send records that the caller hands frame addr (a frame start) to the NIC
// to transmit. It always reports true outside a checked build and for a
// frame of another pool; in a checked build it refuses, and reports, a frame
// of this pool the caller does not hold. The caller counts the refusal.
func (p *Frames) Send(addr uint64) bool {
	if !Checked() {
		return true
	}
	return p.move(OpTransmit, addr, caller, nicTx)
}

// Take records that the NIC hands frame addr back to the caller: op is
// OpReceive for a frame posted to the fill ring, OpReclaim for one sent. It
// refuses, as Send does, a frame the NIC does not hold.
func (p *Frames) Take(op Op, addr uint64) bool {
	if !Checked() {
		return true
	}
	if op == OpReceive {
		return p.move(op, addr, nicFill, caller)
	}
	return p.move(op, addr, nicTx, caller)
}

// move checks and records one move between holders outside the pool.
func (p *Frames) move(op Op, addr uint64, want, to holder) bool {
	if addr < p.base || addr >= p.end || addr&p.mask != 0 {
		return true
	}
	if h, ok := p.marks.move(p.index(addr), want, to); !ok {
		p.misuse(op, addr, h)
		return false
	}
	return true
}

// RefuseZero records that op was handed a zero Desc, which names no packet
// (every build refuses one): the misuse is reported, and for OpRecycle and
// OpFree counted in Rejected. The caller counts a refused transmit.
func (p *Frames) RefuseZero(op Op) {
	if op == OpRecycle || op == OpFree {
		p.rejected.Add(1)
	}
	p.misuse(op, 0, zeroDesc)
}

// misuse counts a refused move and keeps the first for Misuse. It allocates
// once, for the first.
func (p *Frames) misuse(op Op, addr uint64, h holder) {
	p.misuses.Add(1)
	if p.first.Load() == nil {
		p.first.CompareAndSwap(nil, &Misused{Op: op, Addr: addr, holder: h})
	}
}

// Misuse is the first refused move since New, or nil: an error matching
// packetio.ErrNotOwned that says what was done to which frame. Outside a
// checked build only a zero Desc is reported. Safe from any goroutine.
func (p *Frames) Misuse() error {
	if m := p.first.Load(); m != nil {
		return m
	}
	return nil
}

// Misuses counts the refused moves since New. Safe from any goroutine.
func (p *Frames) Misuses() uint64 { return p.misuses.Load() }

// Counts tallies who holds the pool's frames: the pool, the caller, the NIC.
// It walks every frame; outside a checked build it returns -1s.
func (p *Frames) Counts() (inPool, held, nic int) { return p.marks.counts() }

// Rejected counts refused pushes since New. It is safe to call from any
// goroutine; anything but 0 is a bug above the pool.
func (p *Frames) Rejected() uint64 { return p.rejected.Load() }

// index is the frame's position inside the pool. Only called with an address
// inside the range.
func (p *Frames) index(addr uint64) int { return int((addr - p.base) >> p.shift) }

// Op names the call that misused a frame, in a Misused report.
type Op uint8

// The calls that move a frame between holders.
const (
	OpRecycle  Op = iota // caller to pool, on a receive queue
	OpFree               // caller to pool, on a transmit queue
	OpTransmit           // caller to NIC
	OpComplete           // NIC to pool
	OpReceive            // NIC (fill ring) to caller
	OpReclaim            // NIC (transmit) to caller
)

var opNames = [...]string{"recycle", "free", "transmit", "complete", "receive", "reclaim"}

// String is the call's name as the API spells it.
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return "op " + fmt.Sprint(uint8(o))
}

// holder is who holds a frame. The zero value is the pool.
type holder uint8

const (
	pooled   holder = iota // free in the pool
	caller                 // the program: allocated, received or reclaimed
	nicFill                // the NIC: posted to the fill ring
	nicTx                  // the NIC: in flight on transmit
	nicAny                 // (wanted only) either NIC state
	zeroDesc               // (reported only) the descriptor was zero
)

// Misused is a refused move: Op was asked of the frame at Addr, which its
// holder did not allow. It matches packetio.ErrNotOwned.
type Misused struct {
	Op     Op     // the call
	Addr   uint64 // the frame's start in the region
	holder holder // who held it
}

// Error says what was done to which frame, and who held it:
// "recycle frame 0x1800: the NIC holds it (posted to the fill ring)".
func (m *Misused) Error() string {
	if m.holder == zeroDesc {
		return m.Op.String() + " a zero descriptor: it names no frame"
	}
	why := [...]string{
		pooled:  "it is in the pool",
		caller:  "the caller holds it",
		nicFill: "the NIC holds it (posted to the fill ring)",
		nicTx:   "the NIC holds it (in flight on transmit)",
	}
	return fmt.Sprintf("%s frame %#x: %s", m.Op, m.Addr, why[m.holder])
}

// Unwrap makes the report match packetio.ErrNotOwned.
func (m *Misused) Unwrap() error { return packetio.ErrNotOwned }
