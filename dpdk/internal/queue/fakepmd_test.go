package queue

import (
	"fmt"
	"testing"

	"github.com/packetio/packetio"
)

// testRegionVA is where the fake pretends the region is mapped.
const testRegionVA = 0x7f0000000000

// fakePMD is a poll-mode driver queue pair over a Go region, with the habits
// of real ones:
//   - a transmit burst may take only a prefix (accept);
//   - transmit completions are processed only at the top of a TxBurst or on
//     Poke, and only once compThresh packets have built up (mlx5 waits for
//     32), so a small batch never comes back by itself;
//   - a freed mbuf goes to the returned ring of the pool written in the
//     mbuf, as rte_pktmbuf_free does;
//   - receive takes buffers from the supply in all-or-nothing bulks, or
//     with refillFirst, as net_af_xdp does, a buffer for every packet it
//     is about to deliver, all before it delivers any, and nothing when the
//     supply cannot give them all.
type fakePMD struct {
	t           testing.TB
	r           mbufs
	returned    map[uint64]*Ring
	supply      *Ring
	accept      int // most a TxBurst takes; 0 = no limit
	compThresh  int
	bulk        int
	refillFirst bool

	pending  []uint64 // transmitted, not completed
	wire     [][]byte // what went out, when keepWire
	keepWire bool
	cache    []uint64 // rx buffers taken from the supply
	cacheBuf []uint64
	incoming [][]byte // packets waiting to be received
	rxFlags  uint64
	chained  bool
	foreign  uint64 // deliver this address once

	txCalls, rxCalls, pokes, noBuf int
}

func (f *fakePMD) free(va uint64) {
	m := va - testRegionVA
	pool := ne.Uint64(f.r[m+offPool:])
	ring, ok := f.returned[pool]
	if !ok {
		f.t.Fatalf("fake: mbuf %#x names pool %#x, which is not registered", va, pool)
	}
	if !ring.PushOne(va) {
		f.t.Fatalf("fake: returned ring of pool %#x overflowed", pool)
	}
}

func (f *fakePMD) complete() {
	if len(f.pending) < f.compThresh {
		return
	}
	for _, va := range f.pending {
		f.free(va)
	}
	f.pending = f.pending[:0]
}

func (f *fakePMD) TxBurst(mbufs []uint64) int {
	f.txCalls++
	f.complete()
	n := len(mbufs)
	if f.accept > 0 && n > f.accept {
		n = f.accept
	}
	for _, va := range mbufs[:n] {
		if f.keepWire {
			m := va - testRegionVA
			dataOff, _, l, _ := f.r.rxRead(m)
			start := m + MbufSize + uint64(dataOff)
			f.wire = append(f.wire, append([]byte(nil), f.r[start:start+uint64(l)]...))
		}
		f.pending = append(f.pending, va)
	}
	return n
}

func (f *fakePMD) Poke() { f.pokes++; f.complete() }

func (f *fakePMD) RxBurst(out []uint64) int {
	f.rxCalls++
	if f.foreign != 0 && len(out) > 0 {
		out[0], f.foreign = f.foreign, 0
		return 1
	}
	if f.refillFirst {
		k := min(len(out), len(f.incoming))
		if k > 0 && !f.supply.PopBulk(f.refill(k)) {
			f.noBuf++
			return 0
		}
		f.cache = f.cacheBuf[:k]
	}
	n := 0
	for n < len(out) && len(f.incoming) > 0 {
		if len(f.cache) == 0 {
			if cap(f.cacheBuf) < f.bulk {
				f.cacheBuf = make([]uint64, f.bulk)
			}
			b := f.cacheBuf[:f.bulk]
			if !f.supply.PopBulk(b) {
				f.noBuf++
				break
			}
			f.cache = b
		}
		va := f.cache[0]
		f.cache = f.cache[1:]
		m := va - testRegionVA
		pkt := f.incoming[0]
		f.incoming = append(f.incoming[:0], f.incoming[1:]...)
		pool := ne.Uint64(f.r[m+offPool:])
		f.r.prepareTx(m, pool, txRearm|Headroom, uint32(len(pkt)), f.rxFlags, 0)
		copy(f.r[m+MbufSize+Headroom:], pkt)
		if f.chained {
			ne.PutUint16(f.r[m+offDataOff+4:], 2)
		}
		out[n] = va
		n++
	}
	return n
}

// refill returns the fake's buffer for k supply entries.
func (f *fakePMD) refill(k int) []uint64 {
	if cap(f.cacheBuf) < k {
		f.cacheBuf = make([]uint64, k)
	}
	return f.cacheBuf[:k]
}

// rig is a region with mbufs initialised, as rte_pktmbuf_init leaves them.
type rig struct {
	t      testing.TB
	region []byte
	pmd    *fakePMD
	next   int // next unused frame
}

const testFrameSize = 2048

func newRig(t testing.TB, frames int) *rig {
	region := make([]byte, frames*testFrameSize)
	pmd := &fakePMD{t: t, r: mbufs(region), returned: map[uint64]*Ring{}, compThresh: 32, bulk: 4}
	return &rig{t: t, region: region, pmd: pmd}
}

func (g *rig) cfg(frames int, poolVA uint64) Config {
	ret := NewRing(1024)
	g.pmd.returned[poolVA] = ret
	for i := g.next; i < g.next+frames; i++ {
		mbufs(g.region).initBuffer(uint64(i*testFrameSize), testRegionVA, poolVA, testFrameSize)
	}
	c := Config{
		Region: g.region, RegionVA: testRegionVA, PoolVA: poolVA, FrameSize: testFrameSize,
		FirstFrame: g.next, Frames: frames, Depth: 512, Returned: ret, PMD: g.pmd,
		Name: fmt.Sprintf("fake pool %#x", poolVA),
	}
	g.next += frames
	return c
}

func (g *rig) tx(frames int) *Tx {
	g.t.Helper()
	q, err := NewTx(g.cfg(frames, 0xa000+uint64(g.next)))
	if err != nil {
		g.t.Fatal(err)
	}
	return q
}

func (g *rig) rx(frames, supply int) *Rx {
	g.t.Helper()
	c := g.cfg(frames, 0xb000+uint64(g.next))
	c.Supply = NewRing(supply)
	g.pmd.supply = c.Supply
	q, err := NewRx(c)
	if err != nil {
		g.t.Fatal(err)
	}
	return q
}

// build allocates n frames and writes a 64-byte packet with the frame's
// sequence number into each.
func build(t testing.TB, q *Tx, n int) []packetio.Desc {
	t.Helper()
	d := q.Alloc(n)
	for i := range d {
		b := q.cfg.Region[d[i].Addr : d[i].Addr+64]
		for j := range b {
			b[j] = byte(i + j)
		}
		d[i].Len = 64
	}
	return d
}
