// Package queue is the dpdk backend's frame-ownership logic, in pure Go: it
// turns packetio descriptors into mbufs and back with arithmetic on the
// region, and crosses into the driver only through PMD, once per batch.
//
// A queue is driven by one goroutine. Counters are atomics so Stats may read
// them from anywhere; nothing else is synchronised.
package queue

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/pool"
)

// PMD is the poll-mode driver queue as the queue logic sees it: three calls,
// each one crossing per batch, never per packet. Addresses are mbuf virtual
// addresses.
type PMD interface {
	// TxBurst offers mbufs to the driver and returns how many it took, a
	// prefix.
	TxBurst(mbufs []uint64) int
	// RxBurst writes up to len(out) received mbufs into out and returns how
	// many.
	RxBurst(out []uint64) int
	// Poke asks the driver to process transmit completions now.
	Poke()
}

// MaxBurst is the most mbufs one burst call carries.
const MaxBurst = 256

// Config describes one queue's share of the region and its driver.
type Config struct {
	// Region is the whole frame memory, as Go sees it.
	Region []byte
	// RegionVA is the virtual address of Region[0], as the driver sees it.
	RegionVA uint64
	// PoolVA is the address of this queue's rte_mempool, written into every
	// mbuf the queue hands out so the driver frees it back here.
	PoolVA uint64
	// FrameSize is the size of one frame (= one mempool object), a power of
	// two.
	FrameSize int
	// FirstFrame and Frames are the queue's slice of the region, in frames.
	FirstFrame, Frames int
	// Depth is the driver ring size: the most frames the queue lets the
	// driver hold on transmit.
	Depth int
	// Supply is the ring the driver takes receive buffers from (receive
	// queues only).
	Supply *Ring
	// Returned is the ring the driver frees mbufs into.
	Returned *Ring
	// SupplyDepth is the most frames Fill keeps in the supply ring (0:
	// as many as it holds); Prime, for the driver's setup, posts past it.
	// The driver takes the frame Fill posted longest ago, so a shallow
	// supply hands it frames still in cache.
	SupplyDepth int
	// RxChecksums maps the driver's receive checksum flags to Options.
	RxChecksums bool
	// TxChecksums sets checksum offload flags on every parseable packet.
	TxChecksums bool
	// TSO allows segmentation offload through TransmitOffload.
	TSO bool
	// PMD is the driver queue.
	PMD PMD
	// Name prefixes errors, e.g. "dpdk net_null0 tx 0".
	Name string
}

func (c *Config) validate(rx bool) error {
	fs := c.FrameSize
	switch {
	case fs < DataStart+64 || fs&(fs-1) != 0 || fs > 65536:
		return fmt.Errorf("queue: frame size %d is not a power of two in [512, 65536]", fs)
	case len(c.Region)%fs != 0:
		return fmt.Errorf("queue: region of %d bytes is not a whole number of %d-byte frames", len(c.Region), fs)
	case c.FirstFrame < 0 || c.Frames <= 0 || (c.FirstFrame+c.Frames)*fs > len(c.Region):
		return fmt.Errorf("queue: frames [%d, %d) are not inside the region", c.FirstFrame, c.FirstFrame+c.Frames)
	case c.Depth <= 0:
		return errors.New("queue: depth must be positive")
	case c.Returned == nil:
		return errors.New("queue: no returned ring")
	case rx && c.Supply == nil:
		return errors.New("queue: receive queue without a supply ring")
	case c.PMD == nil:
		return errors.New("queue: no driver")
	}
	return nil
}

// core is what both directions share: the region view, the pool and the
// failure latch.
type core struct {
	cfg  Config
	r    mbufs
	pool *pool.Frames
	mask uint64
	size uint64 // len(Region)
	dead atomic.Pointer[error]
	fore atomic.Uint64 // foreign addresses from the driver
	// refused counts descriptors Transmit, Free or Recycle turned away as
	// not the caller's: zero, foreign, or (packetio_checked) held by the
	// pool or the driver.
	refused atomic.Uint64
	frame   []uint64 // scratch for the pool
}

func (c *core) init(cfg Config) error {
	p, err := pool.New(cfg.FirstFrame, cfg.Frames, cfg.FrameSize)
	if err != nil {
		return err
	}
	c.cfg, c.r, c.pool = cfg, mbufs(cfg.Region), p
	c.mask = uint64(cfg.FrameSize - 1)
	c.size = uint64(len(cfg.Region))
	c.frame = make([]uint64, 0, MaxBurst)
	return nil
}

// Err is the latched failure or else the first frame misuse (a zero Desc,
// or in a packetio_checked build a frame the caller does not hold, matching
// packetio.ErrNotOwned), or nil. A misuse does not stop the queue: the
// queue's own calls look at Failure.
func (c *core) Err() error {
	if err := c.Failure(); err != nil {
		return err
	}
	if err := c.pool.Misuse(); err != nil {
		return fmt.Errorf("%s: %w", c.cfg.Name, err)
	}
	return nil
}

// Failure is the latched failure, or nil: after one the queue refuses all
// work.
func (c *core) Failure() error {
	if e := c.dead.Load(); e != nil {
		return *e
	}
	return nil
}

// Fail latches err as the queue's failure, unless one is latched already:
// every later call refuses work and Err returns it. err should wrap
// packetio.ErrQueueFailed. Safe from any goroutine: the device's watcher
// calls it when the interface goes away.
func (c *core) Fail(err error) { c.dead.CompareAndSwap(nil, &err) }

func (c *core) fail(format string, args ...any) {
	err := fmt.Errorf("%s: %s: %w", c.cfg.Name, fmt.Sprintf(format, args...), packetio.ErrQueueFailed)
	c.dead.CompareAndSwap(nil, &err)
}

// frameOf converts an mbuf address from the driver to its frame's offset,
// or reports that it is not one of this region's mbufs, which fails the
// queue (foreign).
func (c *core) frameOf(va uint64) (uint64, bool) {
	if off, ok := c.mbufFrame(va); ok {
		return off, true
	}
	c.foreign(va)
	return 0, false
}

// mbufFrame is the one place a driver address becomes a region offset: the
// frame whose mbuf is at va, and whether that is one of the region's. Small
// enough to inline into a loop that calls foreign for a false.
func (c *core) mbufFrame(va uint64) (uint64, bool) {
	off := va - c.cfg.RegionVA - ObjHeader
	return off, off < c.size && off&c.mask == 0
}

// foreign counts a driver address that is not an mbuf of this region and
// fails the queue.
func (c *core) foreign(va uint64) {
	c.fore.Add(1)
	c.fail("driver handed back %#x, which is not an mbuf of this region", va)
}

// descOK reports whether d names at least one byte inside one frame, at or
// after the start of the mbuf's buffer (headroom is allowed, for header
// pushes; the mempool header and the mbuf are not).
func (c *core) descOK(d packetio.Desc) bool {
	if d.Addr >= c.size {
		return false
	}
	within := d.Addr & c.mask
	return within >= BufferStart && uint64(d.Len)-1 < uint64(c.cfg.FrameSize)-within
}

// Span is the queue's frames and the mempool it writes into their mbufs.
func (c *core) Span() Span {
	return Span{FirstFrame: c.cfg.FirstFrame, Frames: c.cfg.Frames, PoolVA: c.cfg.PoolVA}
}

// Pool is the queue's free list.
func (c *core) Pool() *pool.Frames { return c.pool }

// Owns reports whether the frame at addr belongs to this queue's slice.
func (c *core) Owns(addr uint64) bool { return c.pool.Owns(addr) }

// Foreign counts driver addresses that were not this region's mbufs.
func (c *core) Foreign() uint64 { return c.fore.Load() }
