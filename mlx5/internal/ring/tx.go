package ring

import (
	"encoding/binary"
	"fmt"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/mlx5/internal/wqe"
)

// TxMode is how a send ring describes packets to the device.
type TxMode uint8

// The send modes.
const (
	// ModeSend writes one ordinary SEND entry per packet.
	ModeSend TxMode = iota + 1
	// ModeMPWPointer packs up to 58 packets per eMPW entry as pointer
	// segments. It needs a port that requires no inline header.
	ModeMPWPointer
	// ModeMPWCopied packs packets up to MPWMaxLen bytes into eMPW entries
	// by copy, and longer ones as pointer segments of the same entry.
	ModeMPWCopied
)

// String names the mode for Info lines.
func (m TxMode) String() string {
	switch m {
	case ModeSend:
		return "send"
	case ModeMPWPointer:
		return "multi-packet (pointer)"
	case ModeMPWCopied:
		return "multi-packet (copied)"
	}
	return fmt.Sprintf("TxMode(%d)", m)
}

// TxConfig is what a send ring works over. On hardware every field comes
// from mlx5dv_init_obj and the region registration.
type TxConfig struct {
	SQ      []byte  // send queue: a power-of-two number of 64-byte blocks
	CQ      []byte  // its CQ: at least as many 64-byte entries as SQ blocks
	SQDbrec *uint32 // the QP's send doorbell record (dbrec[MLX5_SND_DBR])
	CQDbrec *uint32 // the CQ's consumer-index doorbell record
	UAR     *uint64 // the UAR doorbell register (bf.reg)

	QPN  uint32 // the QP number, 24 bits
	LKey uint32 // the region's local key

	Region    []byte // the frame region; descriptor addresses are offsets into it
	RegionVA  uint64 // the address the device knows Region[0] by
	FrameSize int    // power of two

	Mode        TxMode // zero means ModeSend
	Inline      int    // header bytes copied into each SEND entry; 0 in eMPW modes
	MPWMaxLen   int    // ModeMPWCopied: longest packet copied; 0 means 192
	SignalEvery int    // ask for a completion at least every n packets; 0: once per batch
	CsFlags     uint8  // wqe.CsumL3|wqe.CsumL4 for checksum offload
}

// entryMeta describes the entry that starts at one block. It is kept for
// every entry, signalled or not, because an error completion names the entry
// that failed whether or not it asked for a completion.
type entryMeta struct {
	pi      uint32 // the entry's first block, full counter: proves the record is this lap's
	slotEnd uint32 // slot counter just past the entry's last packet
	blocks  uint32 // blocks the entry takes
}

// Tx is a send ring.
type Tx struct {
	sq       wqe.SQ
	send     wqe.Sender
	mpw      wqe.MPW
	sqMask   uint32 // blocks-1
	sqBlocks uint32
	sqDbrec  *uint32
	uar      *uint64
	meta     []entryMeta // per block

	cq      []byte
	cqMask  uint32
	cqLog   uint
	cqDbrec *uint32

	// Free-running counters.
	pi   uint32 // next block to write
	head uint32 // first block not yet completed
	ci   uint32 // next CQE to read

	slots    []packetio.Desc // posted packets, in order
	slotMask uint32
	slotHead uint32 // oldest packet the device owns
	slotTail uint32 // next slot to fill

	region    []byte
	va        uint64
	frameMask uint64
	regionLen uint64
	qpn       uint32

	mode        TxMode
	maxBlocks   uint32 // ModeSend: blocks per packet, worst case
	perPacket   uint32 // ModeMPWCopied: blocks per packet, worst case, amortised
	mpwMaxLen   int
	signalEvery int
	sinceSignal int

	fail  failure
	stuck bool // an undecodable CQE: nothing past it can be read
	stats TxCounters
	fault faults
}

// NewTx checks cfg and returns a ring over it. It writes nothing to the
// queues.
func NewTx(cfg TxConfig) (*Tx, error) {
	if cfg.Mode == 0 {
		cfg.Mode = ModeSend
	}
	if cfg.SQDbrec == nil || cfg.CQDbrec == nil || cfg.UAR == nil {
		return nil, fmt.Errorf("mlx5 ring: send ring needs both doorbell records and the UAR")
	}
	sq, err := wqe.NewSQ(cfg.SQ)
	if err != nil {
		return nil, err
	}
	cqLog, err := checkCQ(cfg.CQ)
	if err != nil {
		return nil, err
	}
	if len(cfg.CQ)/wqe.CQESize < sq.Blocks() {
		return nil, fmt.Errorf("mlx5 ring: CQ of %d entries is smaller than the %d-block send queue", len(cfg.CQ)/wqe.CQESize, sq.Blocks())
	}
	frames, err := checkRegion(cfg.Region, cfg.FrameSize)
	if err != nil {
		return nil, err
	}
	if cfg.SignalEvery < 0 {
		return nil, fmt.Errorf("mlx5 ring: SignalEvery %d is negative", cfg.SignalEvery)
	}
	t := &Tx{
		sq:          sq,
		sqMask:      uint32(sq.Blocks() - 1),
		sqBlocks:    uint32(sq.Blocks()),
		sqDbrec:     cfg.SQDbrec,
		uar:         cfg.UAR,
		meta:        make([]entryMeta, sq.Blocks()),
		cq:          cfg.CQ,
		cqMask:      uint32(len(cfg.CQ)/wqe.CQESize - 1),
		cqLog:       cqLog,
		cqDbrec:     cfg.CQDbrec,
		region:      cfg.Region,
		va:          cfg.RegionVA,
		frameMask:   uint64(cfg.FrameSize - 1),
		regionLen:   frames * uint64(cfg.FrameSize),
		qpn:         cfg.QPN,
		mode:        cfg.Mode,
		signalEvery: cfg.SignalEvery,
	}
	t.send = wqe.Sender{SQ: sq, QPN: cfg.QPN, LKey: cfg.LKey, Inline: cfg.Inline, CsFlags: cfg.CsFlags}
	if err := t.send.Check(); err != nil {
		return nil, err
	}
	t.maxBlocks = uint32(t.send.MaxBlocks())
	slots := sq.Blocks()
	switch cfg.Mode {
	case ModeSend:
	case ModeMPWPointer, ModeMPWCopied:
		if cfg.Inline != 0 {
			return nil, fmt.Errorf("mlx5 ring: multi-packet entries carry no inline header, but %d inline bytes were asked for (the port requires them?)", cfg.Inline)
		}
		if sq.Blocks() < wqe.BlocksFor(wqe.MaxDS) {
			return nil, fmt.Errorf("mlx5 ring: multi-packet needs a send queue of at least %d blocks, not %d", wqe.BlocksFor(wqe.MaxDS), sq.Blocks())
		}
		t.mpw = wqe.MPW{SQ: sq, QPN: cfg.QPN, LKey: cfg.LKey, CsFlags: cfg.CsFlags}
		slots = sq.Blocks() * 4 // at most 4 pointer segments per block
		t.mpwMaxLen = cfg.MPWMaxLen
		if t.mpwMaxLen == 0 {
			t.mpwMaxLen = wqe.MPWDefaultMaxLen
		}
		if t.mpwMaxLen < 1 || wqe.CopiedDS(t.mpwMaxLen) > wqe.MaxDS-wqe.MPWHeaderDS {
			return nil, fmt.Errorf("mlx5 ring: multi-packet copy length %d outside 1..%d", t.mpwMaxLen, (wqe.MaxDS-wqe.MPWHeaderDS)*wqe.OctowordSize-4)
		}
		t.perPacket = copiedBound(wqe.CopiedDS(t.mpwMaxLen))
	default:
		return nil, fmt.Errorf("mlx5 ring: unknown send mode %d", cfg.Mode)
	}
	t.slots = make([]packetio.Desc, slots)
	t.slotMask = uint32(slots - 1)
	return t, nil
}

// copiedBound is the most blocks per packet, amortised over an entry, that
// copied packets of at most o octowords can take: the bound FreeSlots
// promises in copied mode.
func copiedBound(o int) uint32 {
	worst := 1
	for k := 1; wqe.MPWHeaderDS+o*k <= wqe.MaxDS; k++ {
		b := wqe.BlocksFor(wqe.MPWHeaderDS + o*k)
		if per := (b + k - 1) / k; per > worst {
			worst = per
		}
	}
	return uint32(worst)
}

// Mode is the ring's send mode.
func (t *Tx) Mode() TxMode { return t.mode }

// Blocks is the send queue size in blocks.
func (t *Tx) Blocks() int { return int(t.sqBlocks) }

// CQEntries is the CQ size.
func (t *Tx) CQEntries() int { return int(t.cqMask + 1) }

// Err is nil while the ring is healthy, else the failure wrapping
// packetio.ErrQueueFailed. Safe from any goroutine.
func (t *Tx) Err() error {
	if f := t.fail.get(); f != nil {
		return f.err
	}
	return nil
}

// Failure is what took the ring down, or nil. Safe from any goroutine.
func (t *Tx) Failure() *Failure { return t.fail.get() }

// InFlight is the number of packets the device owns.
func (t *Tx) InFlight() int { return int(t.slotTail - t.slotHead) }

// FreeSlots is how many packets the next Post is sure to accept. It never
// over-promises: in the eMPW modes it counts room in whole entries.
func (t *Tx) FreeSlots() int {
	if t.fail.get() != nil {
		return 0
	}
	slots := uint32(len(t.slots)) - (t.slotTail - t.slotHead)
	free := t.sqBlocks - (t.pi - t.head)
	var n uint32
	switch t.mode {
	case ModeSend:
		n = free / t.maxBlocks
	case ModeMPWPointer:
		full := uint32(wqe.BlocksFor(wqe.MaxDS))
		n = free / full * wqe.MPWMaxPointers
		if r := free % full; r > 0 {
			n += 4*r - wqe.MPWHeaderDS
		}
	case ModeMPWCopied:
		n = free / t.perPacket
	}
	return int(min(n, slots))
}

// descOK reports whether d names at least one byte inside one frame. The
// subtraction form cannot overflow.
func (t *Tx) descOK(d packetio.Desc) bool {
	return d.Addr < t.regionLen && d.Len != 0 && uint64(d.Len)-1 < t.frameMask+1-(d.Addr&t.frameMask)
}

// Post hands descs to the device and returns how many it took: always a
// prefix. It stops at the first descriptor that does not name bytes inside
// one frame, and at the room FreeSlots reports. It rings one doorbell for the
// batch, none for an empty one (ringing again would re-send the stale first
// octoword). A failed ring takes nothing.
func (t *Tx) Post(descs []packetio.Desc) int {
	if t.fail.get() != nil || len(descs) == 0 {
		return 0
	}
	room := t.FreeSlots()
	n := min(len(descs), room)
	ok := 0
	for ok < n && t.descOK(descs[ok]) {
		ok++
	}
	if ok < n {
		t.stats.BadDesc.Add(1)
	}
	if ok == 0 {
		if room == 0 {
			t.stats.RingFull.Add(1)
		}
		return 0
	}
	var last uint32
	switch t.mode {
	case ModeSend:
		last = t.postSend(descs[:ok])
	default:
		last = t.postMPW(descs[:ok])
	}
	t.ringSQ(last)
	var bytes uint64
	for _, d := range descs[:ok] {
		bytes += uint64(d.Len)
	}
	t.stats.Packets.Add(uint64(ok))
	t.stats.Bytes.Add(bytes)
	t.stats.Batches.Add(1)
	return ok
}

// signal reports whether the entry just finished, holding k packets, asks
// for a completion: the last of the batch always does, others every
// SignalEvery packets.
func (t *Tx) signal(k int, lastOfBatch bool) bool {
	t.sinceSignal += k
	if lastOfBatch || (t.signalEvery > 0 && t.sinceSignal >= t.signalEvery) {
		t.sinceSignal = 0
		return true
	}
	return false
}

// record notes the entry just written at block pi and advances pi.
func (t *Tx) record(pi uint32, blocks int) {
	t.meta[pi&t.sqMask] = entryMeta{pi: pi, slotEnd: t.slotTail, blocks: uint32(blocks)}
	t.pi = pi + uint32(blocks)
}

// postSend and postMPW write entries with plain stores. Device side: it
// reads no entry before ringSQ moves the doorbell record past it.
func (t *Tx) postSend(descs []packetio.Desc) (last uint32) {
	for i, d := range descs {
		pkt := t.region[d.Addr : d.Addr+uint64(d.Len)]
		t.slots[t.slotTail&t.slotMask] = d
		t.slotTail++
		pi := t.pi
		bbs := t.send.Put(pi, pkt, t.va+d.Addr, t.signal(1, i == len(descs)-1))
		t.record(pi, bbs)
		last = pi
	}
	return last
}

func (t *Tx) postMPW(descs []packetio.Desc) (last uint32) {
	for len(descs) > 0 {
		pi := t.pi
		last = pi
		if t.mode == ModeMPWPointer && len(descs) == 1 {
			// A lone packet goes in an ordinary SEND.
			d := descs[0]
			t.slots[t.slotTail&t.slotMask] = d
			t.slotTail++
			bbs := t.send.Put(pi, t.region[d.Addr:d.Addr+uint64(d.Len)], t.va+d.Addr, t.signal(1, true))
			t.record(pi, bbs)
			return last
		}
		t.mpw.Begin(pi)
		k := 0
		for k < len(descs) {
			d := descs[k]
			if t.mode == ModeMPWCopied && int(d.Len) <= t.mpwMaxLen {
				ds := wqe.CopiedDS(int(d.Len))
				if !t.mpw.Room(ds) {
					break
				}
				t.mpw.Copied(t.region[d.Addr : d.Addr+uint64(d.Len)])
			} else {
				if !t.mpw.Room(1) {
					break
				}
				t.mpw.Pointer(d.Len, t.va+d.Addr)
			}
			t.slots[t.slotTail&t.slotMask] = d
			t.slotTail++
			k++
		}
		descs = descs[k:]
		bbs := t.mpw.Finish(t.signal(k, len(descs) == 0))
		t.record(pi, bbs)
	}
	return last
}

// entryFor maps a completion's 16-bit WQE counter to the live entry it names.
// Stale counters (a previous lap), counters one lap ahead, counters of
// blocks never posted and counters naming the middle of an entry name
// nothing.
func (t *Tx) entryFor(counter uint16) (entryMeta, bool) {
	m := t.meta[uint32(counter)&t.sqMask]
	if t.fault.trustCounter {
		return m, m.blocks != 0
	}
	d := uint32(counter - uint16(t.head))
	if d >= t.pi-t.head {
		return entryMeta{}, false
	}
	if m.pi != t.head+d || m.blocks == 0 {
		return entryMeta{}, false
	}
	return m, true
}

// release hands back every packet up to the end of entry m, in order.
func (t *Tx) release(m entryMeta, out []packetio.Desc) []packetio.Desc {
	end := m.slotEnd
	if t.fault.releaseOneMore && end != t.slotTail {
		end++
	}
	for t.slotHead != end && t.slotHead != t.slotTail {
		out = append(out, t.slots[t.slotHead&t.slotMask])
		t.slotHead++
	}
	t.head = m.pi + m.blocks
	return out
}

// Complete consumes completions and appends the packets they release to out,
// oldest first. max bounds the work, not the result: it stops once it has
// released max packets, but one completion is never split. An error
// completion latches the ring's failure and still releases the entry it
// names and everything before it; later flush completions release the rest.
func (t *Tx) Complete(max int, out []packetio.Desc) []packetio.Desc {
	if t.stuck {
		return out
	}
	released := 0
	consumed := uint32(0)
	for released < max {
		h := cqeHeader(t.cq, t.ci, t.cqMask)
		if !wqe.SoftwareOwns(h, t.ci, t.cqLog) {
			break
		}
		if wqe.HeaderFormat(h) != wqe.FormatPlain {
			t.fail.set(newFailure("send queue", 0, 0, t.qpn, wqe.HeaderCounter(h),
				fmt.Sprintf("completion %d has format %d; the CQ was created uncompressed", t.ci, wqe.HeaderFormat(h))))
			t.stats.Errors.Add(1)
			t.stuck = true
			break
		}
		// Device side: the body was written before the owner byte
		// cqeHeader loaded with acquire order; the entry stays ours
		// until releaseCQ passes it.
		off := (t.ci & t.cqMask) * wqe.CQESize
		t.ci++
		consumed++
		switch wqe.HeaderOpcode(h) {
		case wqe.CQEReq:
		case wqe.CQEReqErr:
			cqe := t.cq[off : off+wqe.CQESize]
			syn := cqe[wqe.CQESyndrome]
			if syn != wqe.SyndromeWRFlush || t.fail.get() == nil {
				t.fail.set(newFailure("send queue", syn, cqe[wqe.CQEVendorSyndrome],
					binary.BigEndian.Uint32(cqe[wqe.CQESopDropQPN:])&0xffffff, wqe.HeaderCounter(h), ""))
			}
			t.stats.Errors.Add(1)
		default:
			t.stats.Unexpected.Add(1)
			continue
		}
		m, ok := t.entryFor(wqe.HeaderCounter(h))
		if !ok {
			t.stats.Stale.Add(1)
			continue
		}
		before := len(out)
		out = t.release(m, out)
		released += len(out) - before
	}
	if consumed > 0 {
		releaseCQ(t.cqDbrec, &t.fault, t.ci)
		t.stats.Completions.Add(uint64(consumed))
		t.stats.Completed.Add(uint64(released))
	}
	return out
}

// Completable is how many packets Complete would release now, without
// consuming anything.
func (t *Tx) Completable() int {
	head, slotHead := t.head, t.slotHead
	n := 0
	for ci := t.ci; ci-t.ci <= t.cqMask; ci++ {
		h := cqeHeaderRaw(t.cq, ci, t.cqMask)
		if !wqe.SoftwareOwns(h, ci, t.cqLog) || wqe.HeaderFormat(h) != wqe.FormatPlain {
			break
		}
		if op := wqe.HeaderOpcode(h); op != wqe.CQEReq && op != wqe.CQEReqErr {
			continue
		}
		counter := wqe.HeaderCounter(h)
		d := uint32(counter - uint16(head))
		m := t.meta[uint32(counter)&t.sqMask]
		if d >= t.pi-head || m.pi != head+d || m.blocks == 0 {
			continue
		}
		n += int(m.slotEnd - slotHead)
		head, slotHead = m.pi+m.blocks, m.slotEnd
	}
	return n
}

// Drain hands back every packet the ring still holds, as if completed, and
// resets the ring to empty. Call it only once the device can no longer read
// the queue: after the QP is destroyed or flushed, or in tests.
func (t *Tx) Drain(out []packetio.Desc) []packetio.Desc {
	for t.slotHead != t.slotTail {
		out = append(out, t.slots[t.slotHead&t.slotMask])
		t.slotHead++
	}
	t.head = t.pi
	return out
}

// Slots is the most packets the ring can hold in flight.
func (t *Tx) Slots() int { return len(t.slots) }
