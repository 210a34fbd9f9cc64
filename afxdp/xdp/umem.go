package xdp

import (
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/packetio/packetio/internal/numa"

	"golang.org/x/sys/unix"
)

const hugePageSize = 2 << 20

// umem is one mapping of frame memory shared with the kernel: registered by
// one socket and, with WithSharedMemory or the packetio backend, shared by
// the others of its fleet (XDP_SHARED_UMEM). It is unmapped when the last
// socket using it closes: a frame slice must never outlive the mapping while
// a socket can still hand it out.
type umem struct {
	mem       []byte // the frames (and the caller's extra area)
	mapping   []byte // what was mapped: mem rounded up to whole pages
	frameSize int
	mask      uint64
	shift     uint
	// chunk is the buffer the kernel writes a received packet into: the
	// frame, or with colours its 2048-byte half at the frame's colour.
	chunk      int
	colourMask uint64 // colours less one, 0 without colours
	huge       bool   // backed by 2 MiB pages
	hugeNote   string // why not, when they were asked for
	node       int    // the NUMA node the frames are bound to, numa.Unset for none
	refs       atomic.Int32
}

// newUMEM maps size bytes of zeroed, populated memory in frames of
// frameSize bytes, on 2 MiB pages when huge is asked and the host has them,
// bound to NUMA node node unless it is numa.Unset. A bound mapping is made
// without MAP_POPULATE, bound, and only then faulted in, so that every page
// comes from the node.
func newUMEM(size, frameSize int, huge bool, node int) (*umem, error) {
	if size <= 0 || size%frameSize != 0 {
		return nil, fmt.Errorf("umem of %d bytes is not a whole number of %d-byte frames", size, frameSize)
	}
	u := &umem{frameSize: frameSize, mask: uint64(frameSize - 1), shift: uint(bits.TrailingZeros(uint(frameSize))), chunk: frameSize, node: node}
	flags := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_POPULATE
	if node != numa.Unset {
		flags &^= unix.MAP_POPULATE
	}
	if huge {
		rounded := (size + hugePageSize - 1) &^ (hugePageSize - 1)
		mem, err := unix.Mmap(-1, 0, rounded, unix.PROT_READ|unix.PROT_WRITE, flags|unix.MAP_HUGETLB)
		if err == nil {
			err = u.bind(mem)
		}
		if err == nil {
			u.mem, u.mapping, u.huge = mem[:size:size], mem, true
			u.refs.Store(1)
			return u, nil
		}
		u.hugeNote = fmt.Sprintf("2 MiB pages refused (%v: reserve them in /proc/sys/vm/nr_hugepages); normal pages used", err)
	}
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		if errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EAGAIN) {
			return nil, fmt.Errorf("map %d bytes of frame memory: %w (raise RLIMIT_MEMLOCK or use fewer frames)", size, err)
		}
		return nil, fmt.Errorf("map %d bytes of frame memory: %w", size, err)
	}
	if err := u.bind(mem); err != nil {
		return nil, err
	}
	u.mem, u.mapping = mem, mem
	u.refs.Store(1)
	return u, nil
}

// bind binds a fresh mapping to u.node and faults it in; on failure the
// mapping is gone.
func (u *umem) bind(mem []byte) error {
	if u.node == numa.Unset {
		return nil
	}
	err := numa.Bind(mem, u.node)
	if err == nil {
		err = numa.Populate(mem)
	}
	if err != nil {
		_ = unix.Munmap(mem)
	}
	return err
}

// acquire adds a user of the mapping.
func (u *umem) acquire() { u.refs.Add(1) }

// release drops a user, and with the last one gives the frames back to
// the system. It does not unmap the address range: a frame slice the
// caller took before Close (Region().Frame, GetFrame, UMEM) still points
// into it, and touching an unmapped page is a SIGSEGV no recover catches.
// Instead the range is replaced in place (MAP_FIXED) by fresh private
// anonymous memory, not populated and not reserved: the frames' pages go
// back to the system at once, a stale read finds zeros (the shared zero
// page, which costs no memory), and a stale write lands in a page of its
// own that nothing reads. Only the address range stays taken, for the
// life of the process, because nothing can tell when the last stale slice
// is gone (the garbage collector does not track memory it did not
// allocate); address space is plentiful (47 bits), memory is not. If the
// replacement fails, the range is unmapped as before.
func (u *umem) release() {
	if u.refs.Add(-1) == 0 {
		if err := remapZero(u.mapping); err != nil {
			_ = unix.Munmap(u.mapping)
		}
	}
}

// base rounds an address down to its frame start. Frames are aligned to
// their size (with colours too: only the kernel's buffer inside a frame
// moves), so this is a mask.
func (u *umem) base(addr uint64) uint64 { return addr &^ u.mask }

// colour gives the kernel half of each frame, at an offset of colourStep
// bytes times the frame number modulo the colours that fit in the other
// half: what WithCacheColours registers (see there), before the UMEM is.
func (u *umem) colour() {
	u.chunk = u.frameSize / 2
	u.colourMask = uint64(u.chunk/colourStep - 1)
}

// colours is how many offsets the kernel's buffers start at: 0 without
// colours.
func (u *umem) colours() int {
	if u.colourMask == 0 {
		return 0
	}
	return int(u.colourMask) + 1
}

// fillAddr is the fill-ring address of frame base: where the kernel's buffer
// in it starts (the frame itself, without colours).
func (u *umem) fillAddr(base uint64) uint64 {
	return base + (base>>u.shift&u.colourMask)*colourStep
}

// rxAddr turns a receive descriptor's address into a plain UMEM offset. In
// the unaligned-chunk mode (colours) the kernel hands back the fill address
// in the low 48 bits and the packet's offset from it in the high 16
// (XSK_UNALIGNED_BUF_OFFSET_SHIFT, include/uapi/linux/if_xdp.h); in the
// aligned mode the high bits are zero and this changes nothing.
func rxAddr(kernel uint64) uint64 {
	return kernel&(1<<unalignedOffsetShift-1) + kernel>>unalignedOffsetShift
}

// unalignedOffsetShift is XSK_UNALIGNED_BUF_OFFSET_SHIFT.
const unalignedOffsetShift = 48

// span returns the bytes [addr, addr+n) when they lie inside one frame.
func (u *umem) span(addr uint64, n uint32) []byte {
	if addr >= uint64(len(u.mem)) || n == 0 || uint64(n)-1 >= uint64(u.frameSize)-addr&u.mask {
		return nil
	}
	return u.mem[addr : addr+uint64(n) : addr+uint64(n)]
}

// rest returns the bytes from addr to the end of its frame.
func (u *umem) rest(addr uint64) []byte {
	if addr >= uint64(len(u.mem)) {
		return nil
	}
	end := u.base(addr) + uint64(u.frameSize)
	if end > uint64(len(u.mem)) {
		end = uint64(len(u.mem))
	}
	return u.mem[addr:end:end]
}
