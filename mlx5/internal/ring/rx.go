package ring

import (
	"encoding/binary"
	"fmt"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/mlx5/internal/arch"
	"github.com/packetio/packetio/mlx5/internal/clock"
	"github.com/packetio/packetio/mlx5/internal/wqe"
)

// RxConfig is what a receive ring works over: a plain RQ (one 16-byte data
// segment per WQE, one buffer per packet), its CQ and the frame region.
type RxConfig struct {
	RQ      []byte  // receive queue: a power-of-two number of 16-byte WQEs
	CQ      []byte  // its CQ: at least as many 64-byte entries as RQ WQEs
	RQDbrec *uint32 // the WQ's doorbell record (dbrec[MLX5_RCV_DBR])
	CQDbrec *uint32 // the CQ's consumer-index doorbell record

	LKey uint32 // the region's local key

	Region    []byte
	RegionVA  uint64
	FrameSize int
	// Headroom is the bytes left free at the start of each frame; the
	// buffer posted is the rest of the frame.
	Headroom int
	// Clock converts CQE timestamps; the zero Info means no timestamps.
	Clock clock.Info
}

// Rx is a receive ring.
type Rx struct {
	rq      []byte
	rqMask  uint32
	rqDbrec *uint32
	posted  []packetio.Desc // the buffer in each WQE slot

	cq      []byte
	cqMask  uint32
	cqLog   uint
	cqDbrec *uint32

	pi   uint32 // WQEs posted
	ci   uint32 // WQEs completed (the RQ is consumed in order)
	cqci uint32 // CQEs consumed

	region    []byte
	regionVA  uint64
	frameMask uint64
	regionLen uint64
	headroom  uint64
	bufSize   uint32

	clock  clock.Counter
	failed []packetio.Desc // buffers of error completions, for the owner to take back

	fail  failure
	stats RxCounters
	fault faults
}

// NewRx checks cfg and returns a ring over it. It writes the constant half
// of every WQE (byte count and key) now, so posting a buffer writes only its
// address.
func NewRx(cfg RxConfig) (*Rx, error) {
	if cfg.RQDbrec == nil || cfg.CQDbrec == nil {
		return nil, fmt.Errorf("mlx5 ring: receive ring needs both doorbell records")
	}
	n := len(cfg.RQ) / wqe.RecvWQESize
	if len(cfg.RQ)%wqe.RecvWQESize != 0 || !isPow2(n) || n > 1<<15 {
		return nil, fmt.Errorf("mlx5 ring: receive queue of %d bytes is not a power-of-two number of 16-byte WQEs up to 32768", len(cfg.RQ))
	}
	cqLog, err := checkCQ(cfg.CQ)
	if err != nil {
		return nil, err
	}
	if len(cfg.CQ)/wqe.CQESize < n {
		return nil, fmt.Errorf("mlx5 ring: CQ of %d entries is smaller than the %d-entry receive queue", len(cfg.CQ)/wqe.CQESize, n)
	}
	frames, err := checkRegion(cfg.Region, cfg.FrameSize)
	if err != nil {
		return nil, err
	}
	if cfg.Headroom < 0 || cfg.Headroom >= cfg.FrameSize-60 {
		return nil, fmt.Errorf("mlx5 ring: headroom %d leaves no room for a minimum frame in %d bytes", cfg.Headroom, cfg.FrameSize)
	}
	r := &Rx{
		rq:        cfg.RQ,
		rqMask:    uint32(n - 1),
		rqDbrec:   cfg.RQDbrec,
		posted:    make([]packetio.Desc, n),
		cq:        cfg.CQ,
		cqMask:    uint32(len(cfg.CQ)/wqe.CQESize - 1),
		cqLog:     cqLog,
		cqDbrec:   cfg.CQDbrec,
		region:    cfg.Region,
		regionVA:  cfg.RegionVA,
		frameMask: uint64(cfg.FrameSize - 1),
		regionLen: frames * uint64(cfg.FrameSize),
		headroom:  uint64(cfg.Headroom),
		bufSize:   uint32(cfg.FrameSize - cfg.Headroom),
		clock:     clock.NewCounter(cfg.Clock),
		failed:    make([]packetio.Desc, 0, n),
	}
	for i := 0; i < n; i++ {
		w := r.rq[i*wqe.RecvWQESize:]
		binary.BigEndian.PutUint32(w[wqe.DataByteCount:], r.bufSize)
		binary.BigEndian.PutUint32(w[wqe.DataLKey:], cfg.LKey)
	}
	return r, nil
}

// va is the device address of region offset off.
func (r *Rx) va(off uint64) uint64 { return r.regionVA + off }

// Entries is the RQ size.
func (r *Rx) Entries() int { return len(r.posted) }

// BufSize is the bytes each posted buffer holds.
func (r *Rx) BufSize() int { return int(r.bufSize) }

// Err is nil while the ring is healthy, else the failure wrapping
// packetio.ErrQueueFailed. Safe from any goroutine.
func (r *Rx) Err() error {
	if f := r.fail.get(); f != nil {
		return f.err
	}
	return nil
}

// Failure is what took the ring down, or nil. Safe from any goroutine.
func (r *Rx) Failure() *Failure { return r.fail.get() }

// Outstanding is the number of buffers the device owns.
func (r *Rx) Outstanding() int { return int(r.pi - r.ci) }

// FreeSlots is how many more buffers Fill can post.
func (r *Rx) FreeSlots() int {
	if r.fail.get() != nil {
		return 0
	}
	return len(r.posted) - int(r.pi-r.ci)
}

// Fill posts the frames whose start offsets are in frames, up to the free
// slots, and returns how many it posted. It stops at an address that is not
// the start of a frame inside the region. One doorbell record update covers
// the batch.
func (r *Rx) Fill(frames []uint64) int {
	n := min(len(frames), r.FreeSlots())
	posted := 0
	for ; posted < n; posted++ {
		a := frames[posted]
		if a >= r.regionLen || a&r.frameMask != 0 {
			r.stats.BadDesc.Add(1)
			break
		}
		slot := r.pi & r.rqMask
		buf := a + r.headroom
		// Device side: it reads this WQE only after publishRQ moves the
		// record past it, so a plain store is enough here.
		binary.BigEndian.PutUint64(r.rq[slot*wqe.RecvWQESize+wqe.DataAddr:], r.va(buf))
		r.posted[slot] = packetio.Desc{Addr: buf}
		r.pi++
	}
	if posted > 0 {
		r.publishRQ()
		r.stats.Filled.Add(uint64(posted))
	}
	return posted
}

// Receive consumes up to max completions and appends the packets to out and,
// when ts is not nil and the ring has a clock, their arrival times in
// nanoseconds to ts. Buffers of error completions go to the failed list
// (TakeFailed). A completion that does not name the oldest outstanding
// buffer means the ring has lost track of what the device writes: the ring
// fails rather than hand out a buffer the device may still fill.
func (r *Rx) Receive(max int, out []packetio.Desc, ts []uint64) ([]packetio.Desc, []uint64) {
	if r.fail.get() != nil {
		// Every receive failure means the ring can no longer tell which
		// buffer the device fills: read nothing more.
		return out, ts
	}
	got, consumed, bytes := 0, uint32(0), uint64(0)
	stamps := ts != nil && r.clock.OK()
	for got < max {
		h := cqeHeader(r.cq, r.cqci, r.cqMask)
		if !wqe.SoftwareOwns(h, r.cqci, r.cqLog) {
			break
		}
		if wqe.HeaderFormat(h) != wqe.FormatPlain {
			r.fail.set(newFailure("receive queue", 0, 0, 0, wqe.HeaderCounter(h),
				fmt.Sprintf("completion %d has format %d; the CQ was created uncompressed", r.cqci, wqe.HeaderFormat(h))))
			r.stats.Errors.Add(1)
			break
		}
		op := wqe.HeaderOpcode(h)
		if (op != wqe.CQERespSend && op != wqe.CQERespErr) || r.pi == r.ci {
			// Not a receive, or nothing posted: no buffer to release.
			r.cqci++
			consumed++
			r.stats.Unexpected.Add(1)
			r.stats.Errors.Add(1)
			continue
		}
		slot := r.ci & r.rqMask
		named := uint32(wqe.HeaderCounter(h)) & r.rqMask
		if named != slot {
			if !r.fault.trustCounter {
				r.fail.set(newFailure("receive queue", 0, 0, 0, wqe.HeaderCounter(h),
					fmt.Sprintf("completion names WQE %d but the oldest outstanding is %d; the ring lost track of the device", named, slot)))
				r.stats.Errors.Add(1)
				break
			}
			slot = named
		}
		// Device side: it wrote this body before the owner byte that
		// cqeHeader loaded with acquire order, and will not touch the
		// entry again until releaseCQ passes it.
		off := (r.cqci & r.cqMask) * wqe.CQESize
		cqe := r.cq[off : off+wqe.CQESize]
		d := r.posted[slot]
		r.ci++
		r.cqci++
		consumed++
		arch.Prefetch(&r.region[d.Addr])
		n := binary.BigEndian.Uint32(cqe[wqe.CQEByteCnt:])
		if op == wqe.CQERespErr || n == 0 || n > r.bufSize {
			if op == wqe.CQERespSend {
				r.stats.Oversize.Add(1)
			}
			r.stats.Errors.Add(1)
			r.failed = append(r.failed, d)
			continue
		}
		d.Len = n
		if f := cqe[wqe.CQEHdsIPExt]; f&wqe.CQEL3OK != 0 {
			d.Options = packetio.OptL3ChecksumOK
			if f&wqe.CQEL4OK != 0 {
				d.Options |= packetio.OptChecksumOK
			}
		}
		out = append(out, d)
		if stamps {
			ns := r.clock.NS(binary.BigEndian.Uint64(cqe[wqe.CQETimestamp:]))
			if ns == 0 {
				ns = 1 // a stamp is never zero; this is the clock's very first nanosecond
			}
			ts = append(ts, ns)
		}
		bytes += uint64(n)
		got++
	}
	if consumed > 0 {
		releaseCQ(r.cqDbrec, &r.fault, r.cqci)
		r.stats.Completions.Add(uint64(consumed))
	}
	if got > 0 {
		r.stats.Packets.Add(uint64(got))
		r.stats.Bytes.Add(bytes)
		r.stats.Batches.Add(1)
	}
	return out, ts
}

// Ready is how many completions, up to max, are waiting. It reads only the
// ownership words.
func (r *Rx) Ready(max int) int {
	n := 0
	for ci := r.cqci; n < max && ci-r.cqci <= r.cqMask; ci++ {
		if !wqe.SoftwareOwns(cqeHeaderRaw(r.cq, ci, r.cqMask), ci, r.cqLog) {
			break
		}
		n++
	}
	return n
}

// TakeFailed appends the buffers of error completions since the last call to
// out and forgets them. Their Addr is the buffer start, past the headroom.
func (r *Rx) TakeFailed(out []packetio.Desc) []packetio.Desc {
	out = append(out, r.failed...)
	r.failed = r.failed[:0]
	return out
}

// Drain hands back every buffer still posted and resets the ring to empty.
// Call it only once the device can no longer write them: after the WQ is
// destroyed, or in tests.
func (r *Rx) Drain(out []packetio.Desc) []packetio.Desc {
	for r.ci != r.pi {
		out = append(out, r.posted[r.ci&r.rqMask])
		r.ci++
	}
	return out
}
