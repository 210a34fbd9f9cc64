package queue

import (
	"fmt"
	"sync/atomic"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/pool"
)

// Tx is one transmit queue: frames from its pool (or forwarded from a
// receive queue of the same region) go to the driver as mbufs, and come back
// through the Returned ring when the driver frees them, on the driver's
// schedule.
type Tx struct {
	core
	descs    []packetio.Desc
	mbufs    []uint64
	back     []uint64
	inFlight atomic.Int64
	inPlace  inPlace // a receive queue's frames sent with its pool (see inplace.go)
	rearm    uint64  // txRearm

	packets, bytes, completed, batches, completions atomic.Uint64
	ringFull, poolEmpty, badDesc, pokes, badOffload atomic.Uint64
	sentInPlace                                     atomic.Uint64
}

// NewTx returns a transmit queue over cfg with a full pool.
func NewTx(cfg Config) (*Tx, error) {
	if err := cfg.validate(false); err != nil {
		return nil, err
	}
	t := &Tx{}
	if err := t.init(cfg); err != nil {
		return nil, err
	}
	t.rearm = txRearm
	t.descs = make([]packetio.Desc, 0, min(cfg.Depth, MaxBurst))
	t.mbufs = make([]uint64, min(cfg.Depth, MaxBurst))
	t.back = make([]uint64, 0, MaxBurst)
	return t, nil
}

// Alloc takes up to n frames, never more than the driver ring has room for,
// with Addr past the headroom and Len 0. The slice is reused by the next
// Alloc.
func (t *Tx) Alloc(n int) []packetio.Desc {
	if t.Failure() != nil {
		return nil
	}
	room := t.NumFreeSlots()
	n = min(n, room, cap(t.descs))
	if n <= 0 {
		if room <= 0 {
			t.ringFull.Add(1)
		}
		return nil
	}
	t.frame = t.pool.Pop(n, t.frame[:0])
	if len(t.frame) == 0 {
		t.poolEmpty.Add(1)
		return nil
	}
	d := t.descs[:len(t.frame)]
	for i, f := range t.frame {
		d[i] = packetio.Desc{Addr: f + DataStart}
	}
	return d
}

// Transmit hands a prefix of descs to the driver in one burst and returns
// its length. A descriptor that does not name bytes inside one frame ends
// the prefix and the error wraps ErrBadLength; it is returned only when
// everything before it was taken. A short count with a nil error is
// backpressure.
func (t *Tx) Transmit(descs []packetio.Desc) (int, error) {
	return t.transmit(descs, nil)
}

// TransmitOffload is Transmit with one Offload per descriptor.
func (t *Tx) TransmitOffload(descs []packetio.Desc, offs []packetio.Offload) (int, error) {
	if len(offs) != len(descs) {
		return 0, fmt.Errorf("%s: %d offloads for %d descriptors: %w", t.cfg.Name, len(offs), len(descs), packetio.ErrBadLength)
	}
	if !t.cfg.TxChecksums {
		return 0, fmt.Errorf("%s: the device did not keep transmit checksum offload: %w", t.cfg.Name, packetio.ErrUnsupported)
	}
	return t.transmit(descs, offs)
}

func (t *Tx) transmit(descs []packetio.Desc, offs []packetio.Offload) (int, error) {
	if err := t.Failure(); err != nil {
		return 0, err
	}
	n := min(len(descs), t.NumFreeSlots(), len(t.mbufs))
	if n <= 0 {
		if len(descs) > 0 {
			t.ringFull.Add(1)
		}
		return 0, nil
	}
	var refusal error
	built, inPlace := 0, 0
	var bytes uint64
	for ; built < n; built++ {
		d := descs[built]
		// The driver holds the frame from here on; a checked build
		// refuses a frame the caller does not hold.
		if d == (packetio.Desc{}) || pool.Checked() && !t.pool.Send(t.pool.Base(d.Addr)) {
			refusal = t.refuse(d)
			break
		}
		if !t.descOK(d) {
			t.unsend(descs[built : built+1])
			t.badDesc.Add(1)
			refusal = fmt.Errorf("%s: descriptor {Addr %#x, Len %d} does not name bytes inside one frame: %w", t.cfg.Name, d.Addr, d.Len, packetio.ErrBadLength)
			break
		}
		frame := d.Addr &^ t.mask
		var flags, lens uint64
		if offs != nil {
			var err error
			if flags, lens, err = t.offload(d, offs[built]); err != nil {
				t.unsend(descs[built : built+1])
				t.badOffload.Add(1)
				refusal = err
				break
			}
		} else if t.cfg.TxChecksums {
			flags, lens = t.checksumFlags(d)
		}
		m := frame + ObjHeader
		pool := t.cfg.PoolVA
		if t.inPlace.owns(frame) {
			pool = t.inPlace.pool
			inPlace++
		}
		t.r.prepareTx(m, pool, t.rearm|(d.Addr-frame-BufferStart), d.Len, flags, lens)
		t.mbufs[built] = t.cfg.RegionVA + m
		bytes += uint64(d.Len)
	}
	if built == 0 {
		return 0, refusal
	}
	sent := t.cfg.PMD.TxBurst(t.mbufs[:built])
	if sent < 0 || sent > built {
		sent = 0
	}
	if sent < built {
		t.unsend(descs[sent:built])
		bytes, inPlace = 0, 0
		for _, d := range descs[:sent] {
			bytes += uint64(d.Len)
			if t.inPlace.owns(d.Addr &^ t.mask) {
				inPlace++
			}
		}
		refusal = nil // the refused suffix came first
	}
	if sent > 0 {
		t.inFlight.Add(int64(sent))
		t.packets.Add(uint64(sent))
		t.bytes.Add(bytes)
		t.batches.Add(1)
		if inPlace > 0 {
			t.sentInPlace.Add(uint64(inPlace))
		}
	}
	return sent, refusal
}

// refuse counts a descriptor transmit turned away (zero, or in a
// packetio_checked build not the caller's) in TxStats.Refused and returns an
// error matching packetio.ErrNotOwned; Err reports the first.
func (t *Tx) refuse(d packetio.Desc) error {
	t.refused.Add(1)
	if d == (packetio.Desc{}) {
		t.pool.RefuseZero(pool.OpTransmit)
		return fmt.Errorf("%s: a zero descriptor names no frame: %w", t.cfg.Name, packetio.ErrNotOwned)
	}
	return fmt.Errorf("%s: frame %#x is not the caller's to send: %w", t.cfg.Name, t.pool.Base(d.Addr), packetio.ErrNotOwned)
}

// unsend hands frames transmit gave the driver, which it did not take, back
// to the caller (packetio_checked builds; a no-op otherwise).
func (t *Tx) unsend(descs []packetio.Desc) {
	if !pool.Checked() {
		return
	}
	for _, d := range descs {
		t.pool.Take(pool.OpReclaim, t.pool.Base(d.Addr))
	}
}

// reclaim takes up to max frames the driver has freed and gives them to
// each, a burst at a time, as frame offsets. When none are waiting but some
// are in flight it pokes the driver once.
func (t *Tx) reclaim(max int, each func(frames []uint64)) int {
	if t.Failure() != nil || max <= 0 {
		return 0
	}
	ret := t.cfg.Returned
	if ret.Len() == 0 {
		if t.inFlight.Load() == 0 {
			return 0
		}
		t.cfg.PMD.Poke()
		t.pokes.Add(1)
	}
	got := 0
	for got < max && ret.Len() > 0 {
		t.back = ret.Pop(min(max-got, cap(t.back)), t.back[:0])
		frames := t.back[:0] // converted in place
		for _, va := range t.back {
			f, ok := t.mbufFrame(va)
			if !ok {
				t.foreign(va)
				continue
			}
			frames = append(frames, f)
		}
		each(frames)
		got += len(frames)
		if t.Failure() != nil {
			break
		}
	}
	if got > 0 {
		t.inFlight.Add(-int64(got))
		t.completed.Add(uint64(got))
		t.completions.Add(1)
	}
	return got
}

// Complete returns finished frames to this queue's pool and reports how
// many came back.
func (t *Tx) Complete(max int) int {
	return t.reclaim(max, func(frames []uint64) {
		for _, f := range frames {
			if !t.pool.TryPut(f) {
				t.pool.Done(f)
			}
		}
	})
}

// Reclaim appends finished frames to out, as descriptors at their data
// start, for the caller to Recycle or Free.
func (t *Tx) Reclaim(max int, out []packetio.Desc) []packetio.Desc {
	t.reclaim(max, func(frames []uint64) {
		for _, f := range frames {
			t.pool.Take(pool.OpReclaim, f)
			out = append(out, packetio.Desc{Addr: f + DataStart})
		}
	})
	return out
}

// Free returns frames to the pool without sending them. A zero Desc, a
// foreign or surplus frame and (packetio_checked) one the caller does not
// hold, such as a frame in flight, are refused and counted in Refused and
// pool_rejected; Err reports the first misuse.
func (t *Tx) Free(descs []packetio.Desc) {
	var refused uint64
	for _, d := range descs {
		if d == (packetio.Desc{}) {
			t.pool.RefuseZero(pool.OpFree)
			refused++
			continue
		}
		if !t.pool.Put(pool.OpFree, t.pool.Base(d.Addr)) {
			refused++
		}
	}
	if refused != 0 {
		t.refused.Add(refused)
	}
}

// NumCompleted is how many frames the driver has freed and not yet been
// collected.
func (t *Tx) NumCompleted() int { return t.cfg.Returned.Len() }

// NumInFlight is how many frames the driver holds.
func (t *Tx) NumInFlight() int { return int(t.inFlight.Load()) }

// NumFreeSlots is how many more frames Transmit would take now.
func (t *Tx) NumFreeSlots() int { return max(t.cfg.Depth-int(t.inFlight.Load()), 0) }

// NumFreeFrames is how many frames the pool holds.
func (t *Tx) NumFreeFrames() int { return t.pool.Len() }

// Stats returns the counters.
func (t *Tx) Stats() packetio.TxStats {
	return packetio.TxStats{
		Packets:     t.packets.Load(),
		Bytes:       t.bytes.Load(),
		Completed:   t.completed.Load(),
		Batches:     t.batches.Load(),
		Completions: t.completions.Load(),
		RingFull:    t.ringFull.Load(),
		PoolEmpty:   t.poolEmpty.Load(),
		Errors:      t.fore.Load(),
		Refused:     t.refused.Load(),
		Backend: map[string]uint64{
			"in_flight":     uint64(max(t.inFlight.Load(), 0)),
			"bad_desc":      t.badDesc.Load(),
			"bad_offload":   t.badOffload.Load(),
			"pokes":         t.pokes.Load(),
			"foreign":       t.fore.Load(),
			"pool_rejected": t.pool.Rejected(),
			"sent_in_place": t.sentInPlace.Load(),
		},
	}
}
