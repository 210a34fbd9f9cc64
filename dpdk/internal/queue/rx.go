package queue

import (
	"sync/atomic"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/pool"
)

// Rx is one receive queue: Fill pushes mbufs of free frames into the Supply
// ring the driver allocates from, and Receive turns what one burst returns
// into descriptors.
type Rx struct {
	core
	burst       []uint64
	pending     []uint64 // burst entries taken from the driver, not yet delivered
	descs       []packetio.Desc
	back        []uint64
	outstanding atomic.Int64
	lent        *lending // frames a transmit queue sends in place (see inplace.go)

	packets, bytes, filled, batches, poolEmpty atomic.Uint64
	chained, badLen, notPosted, resupplied     atomic.Uint64
}

// NewRx returns a receive queue over cfg with a full pool and nothing
// posted.
func NewRx(cfg Config) (*Rx, error) {
	if err := cfg.validate(true); err != nil {
		return nil, err
	}
	q := &Rx{}
	if err := q.init(cfg); err != nil {
		return nil, err
	}
	q.burst = make([]uint64, MaxBurst)
	q.descs = make([]packetio.Desc, 0, MaxBurst)
	q.back = make([]uint64, 0, MaxBurst)
	return q, nil
}

// Fill posts up to n free frames to the supply ring, never past
// Config.SupplyDepth, and returns how many it posted. Frames the ring
// refuses go back to the pool.
func (q *Rx) Fill(n int) int { return q.Prime(min(n, q.depthRoom())) }

// Prime is Fill without SupplyDepth, for the driver's setup, which may take
// a ring's worth at once (net_af_xdp: its fill ring).
func (q *Rx) Prime(n int) int {
	if q.Failure() != nil {
		return 0
	}
	q.DrainReturned()
	return q.post(n)
}

// Trim takes the frames posted past SupplyDepth back from the supply ring
// into the pool, the newest first, and returns how many. The device calls
// it once the driver is set up: Prime posted a ring's worth for the setup,
// and what the driver left would wait in the supply, going cold, before it
// took any of it.
func (q *Rx) Trim() int {
	over := q.cfg.Supply.Len() - q.cfg.SupplyDepth
	if q.cfg.SupplyDepth <= 0 || over <= 0 {
		return 0
	}
	q.back = q.cfg.Supply.Unpush(over, q.back[:0])
	for _, va := range q.back {
		q.pool.Done(va - q.cfg.RegionVA - ObjHeader)
	}
	q.outstanding.Add(-int64(len(q.back)))
	return len(q.back)
}

// depthRoom is how many more frames SupplyDepth lets Fill post.
func (q *Rx) depthRoom() int {
	if q.cfg.SupplyDepth <= 0 {
		return q.cfg.Supply.Room()
	}
	return max(q.cfg.SupplyDepth-q.cfg.Supply.Len(), 0)
}

// post moves up to n free frames to the supply ring.
func (q *Rx) post(n int) int {
	posted := 0
	for posted < n {
		q.frame = q.pool.PopFill(min(n-posted, cap(q.frame)), q.frame[:0])
		if len(q.frame) == 0 {
			if posted == 0 {
				q.poolEmpty.Add(1)
			}
			break
		}
		for i, f := range q.frame {
			m := f + ObjHeader
			q.r.resetRx(m, q.cfg.PoolVA)
			q.frame[i] = q.cfg.RegionVA + m
		}
		k := q.cfg.Supply.Push(q.frame)
		for _, va := range q.frame[k:] {
			q.pool.Done(va - q.cfg.RegionVA - ObjHeader) // never reached the driver
		}
		posted += k
		if k < len(q.frame) {
			break
		}
	}
	if posted > 0 {
		q.outstanding.Add(int64(posted))
		q.filled.Add(uint64(posted))
	}
	return posted
}

// DrainReturned takes back frames the driver freed to this queue's pool
// (dropped packets, a stopped port, a transmit that copied). Frames a
// transmit queue sent in place are kept for ReturnLent.
func (q *Rx) DrainReturned() int {
	got := 0
	for q.cfg.Returned.Len() > 0 {
		q.back = q.cfg.Returned.Pop(cap(q.back), q.back[:0])
		for _, va := range q.back {
			f, ok := q.frameOf(va)
			if !ok || q.backLent(va, f, nil) {
				continue
			}
			q.pool.Done(f)
			got++
		}
	}
	q.outstanding.Add(-int64(got))
	return got
}

// Resupply moves mbufs the driver freed into this queue's pool straight
// back to the supply ring, so they stay posted, and returns how many it
// moved. Frames a transmit queue sent in place, and the transmit queue's
// own frames this queue hosts, go instead to to, the transmit queue's
// returned ring, while it has room, and then to the hand-back ring for
// ReturnLent; to is nil unless the caller is the transmit queue's goroutine
// (the one ring user that is not the driver). It stops at the first
// address that is none of these and leaves it for DrainReturned, which
// refuses it.
//
// It is for drivers that borrow receive buffers for something else:
// net_af_xdp copies every transmitted packet not of this pool into a buffer
// it takes from the receive queue's pool (its UMEM) and frees it there
// when the kernel is done, so frames Fill posted come back through the
// returned ring without ever having been received. Resupply touches only
// the rings, the lent marks and the queue's immutable configuration, never
// the Go-side pool: it may run on another goroutine (the transmitting one)
// as long as every access to them, this queue's and the driver's, is
// serialised.
func (q *Rx) Resupply(to *Ring) int {
	ret, sup := q.cfg.Returned, q.cfg.Supply
	n, room := ret.Len(), sup.Room()
	h, t := *ret.head, *sup.tail
	moved, i := 0, 0
	for ; i < n; i++ {
		va := ret.buf[(h+uint32(i))&ret.mask]
		off, own := q.ownMbuf(va)
		if !own && q.hosts(off) { // the transmit queue's own frame: the hot case
			if to == nil || !to.PushOne(va) {
				q.handBack(va, off)
			}
			continue
		}
		if !own {
			break
		}
		if q.backLent(va, off, to) { // a frame the transmit queue sent in place
			continue
		}
		if moved == room {
			break
		}
		sup.buf[(t+uint32(moved))&sup.mask] = va
		moved++
	}
	*sup.tail = t + uint32(moved)
	*ret.head = h + uint32(i)
	if moved > 0 {
		q.resupplied.Add(uint64(moved))
	}
	return moved
}

// Ready polls the driver once if nothing is pending and returns how many
// packets the next Receive can deliver. Whatever the burst returned is kept
// for Receive, since DPDK cannot peek.
func (q *Rx) Ready() int {
	if len(q.pending) == 0 && q.Failure() == nil {
		q.pending = q.pull(len(q.burst))
	}
	return len(q.pending)
}

// pull asks the driver for up to n packets, and for no more than the
// supply holds: a driver takes a buffer from the supply for every packet it
// hands out, and net_af_xdp takes them all before it hands out any, so
// asking it for more than the supply holds would receive nothing while
// packets wait. With the supply dry it asks anyway: the allocation that
// fails is what supply_empty (and the port's NoBuffer) count.
func (q *Rx) pull(n int) []uint64 {
	if s := q.cfg.Supply.Len(); s > 0 && s < n {
		n = s
	}
	k := q.cfg.PMD.RxBurst(q.burst[:n])
	if k < 0 || k > n {
		k = 0
	}
	return q.burst[:k]
}

// Receive returns up to max packets from one burst (or from what Ready
// kept). The slice is reused by the next call.
func (q *Rx) Receive(max int) []packetio.Desc {
	if max <= 0 || q.Failure() != nil {
		return nil
	}
	if len(q.pending) == 0 {
		q.pending = q.pull(min(max, len(q.burst)))
	}
	take := q.pending[:min(max, len(q.pending))]
	q.pending = q.pending[len(take):]
	out := q.descs[:0]
	var bytes uint64
	taken := 0 // the driver's no longer; one atomic for the burst, not one a packet
	for _, va := range take {
		f, ok := q.mbufFrame(va)
		if !ok {
			q.foreign(va)
			continue
		}
		taken++
		dataOff, segs, n, flags := q.r.rxRead(f + ObjHeader)
		if segs != 1 {
			q.chained.Add(1)
			q.dropChain(f, segs)
			continue
		}
		d := packetio.Desc{Addr: f + BufferStart + uint64(dataOff), Len: uint32(n)}
		if !q.descOK(d) {
			q.badLen.Add(1)
			q.pool.Done(f)
			continue
		}
		if pool.Checked() && !q.pool.Take(pool.OpReceive, f) {
			q.notPosted.Add(1) // a bug below the queue; the pool reports it
		}
		if q.cfg.RxChecksums && flags&RxIPCksumGood != 0 {
			d.Options = packetio.OptL3ChecksumOK
			if flags&RxL4CksumGood != 0 {
				d.Options |= packetio.OptChecksumOK
			}
		}
		out = append(out, d)
		bytes += uint64(n)
	}
	q.outstanding.Add(-int64(taken))
	if len(out) > 0 {
		q.packets.Add(uint64(len(out)))
		q.bytes.Add(bytes)
		q.batches.Add(1)
	}
	return out
}

// dropChain returns every segment of a chained packet to the pool: packets
// never span frames here.
func (q *Rx) dropChain(f uint64, segs uint16) {
	q.pool.Done(f)
	for i := 1; i < int(segs); i++ {
		va := q.r.next(f + ObjHeader)
		if va == 0 {
			return
		}
		var ok bool
		if f, ok = q.frameOf(va); !ok {
			return
		}
		q.outstanding.Add(-1)
		q.pool.Done(f)
	}
}

// NumPending is how many packets Ready kept for the next Receive.
func (q *Rx) NumPending() int { return len(q.pending) }

// Recycle returns received frames to the pool. A zero Desc, a foreign frame
// and (packetio_checked) one the caller does not hold, such as a frame
// posted to the driver, are refused and counted (pool_rejected); Err
// reports the first misuse.
func (q *Rx) Recycle(descs []packetio.Desc) {
	for _, d := range descs {
		if d == (packetio.Desc{}) {
			q.pool.RefuseZero(pool.OpRecycle)
			continue
		}
		if f := q.pool.Base(d.Addr); !q.pool.TryPut(f) {
			q.pool.Put(pool.OpRecycle, f)
		}
	}
}

// NumFreeFillSlots is how many frames Fill could post now.
func (q *Rx) NumFreeFillSlots() int { return min(q.pool.Len(), q.cfg.Supply.Room(), q.depthRoom()) }

// NumFreeFrames is how many frames the pool holds.
func (q *Rx) NumFreeFrames() int { return q.pool.Len() }

// NumOutstanding is how many frames the driver holds or may take.
func (q *Rx) NumOutstanding() int { return int(q.outstanding.Load()) }

// Stats returns the counters.
func (q *Rx) Stats() packetio.RxStats {
	errs := q.chained.Load() + q.badLen.Load() + q.fore.Load() + q.notPosted.Load()
	return packetio.RxStats{
		Packets:     q.packets.Load(),
		Bytes:       q.bytes.Load(),
		Filled:      q.filled.Load(),
		Batches:     q.batches.Load(),
		Completions: q.batches.Load(),
		PoolEmpty:   q.poolEmpty.Load(),
		Errors:      errs,
		Backend: map[string]uint64{
			"outstanding":   uint64(max(q.outstanding.Load(), 0)),
			"chained":       q.chained.Load(),
			"bad_len":       q.badLen.Load(),
			"foreign":       q.fore.Load(),
			"pool_rejected": q.pool.Rejected(),
			"not_posted":    q.notPosted.Load(),
			"resupplied":    q.resupplied.Load(),
		},
	}
}
