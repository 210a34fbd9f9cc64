//go:build linux

package afpacket

import (
	"bytes"
	"encoding/binary"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The hand-written offsets must match the kernel's structs as x/sys/unix
// mirrors them.
func TestKernelLayout(t *testing.T) {
	var h unix.Tpacket3Hdr
	var bd unix.TpacketBlockDesc
	var bh unix.TpacketHdrV1
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof tpacket3_hdr", unsafe.Sizeof(h), hSize},
		{"tp_next_offset", unsafe.Offsetof(h.Next_offset), hNextOffset},
		{"tp_sec", unsafe.Offsetof(h.Sec), hSec},
		{"tp_nsec", unsafe.Offsetof(h.Nsec), hNsec},
		{"tp_snaplen", unsafe.Offsetof(h.Snaplen), hSnaplen},
		{"tp_len", unsafe.Offsetof(h.Len), hLen},
		{"tp_status", unsafe.Offsetof(h.Status), hStatus},
		{"tp_mac", unsafe.Offsetof(h.Mac), hMac},
		{"hv1", unsafe.Offsetof(h.Hv1), hVLANTCI - 4},
		{"block hdr", unsafe.Offsetof(bd.Hdr), bdBlockStatus},
		{"num_pkts", unsafe.Offsetof(bh.Num_pkts), bdNumPkts - bdBlockStatus},
		{"offset_to_first_pkt", unsafe.Offsetof(bh.Offset_to_first_pkt), bdFirstPkt - bdBlockStatus},
		{"sizeof tpacket_req3", unsafe.Sizeof(unix.TpacketReq3{}), 28},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
}

// forged is a synthetic TPACKET_V3 ring, laid out as the kernel lays it out.
type forged struct {
	mem       []byte
	blockSize int
	blocks    int
}

func newForged(blocks, blockSize int) *forged {
	// Back the bytes with uint64s so the status words are aligned.
	words := make([]uint64, blocks*blockSize/8)
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), blocks*blockSize)
	return &forged{mem: mem, blockSize: blockSize, blocks: blocks}
}

type fpkt struct {
	data    []byte
	wireLen uint32 // 0: len(data)
	status  uint32
	tci     uint16
	tpid    uint16
	vnet    []byte // 10 bytes before data, vnet rings
	sec     uint32
}

const forgedMac = 80 // tp_mac of forged packets: room for a virtio header

// arm writes pkts into block i and hands it to "user space".
func (f *forged) arm(i int, pkts ...fpkt) {
	b := f.mem[i*f.blockSize : (i+1)*f.blockSize]
	clear(b)
	ne.PutUint32(b[bdNumPkts:], uint32(len(pkts)))
	ne.PutUint32(b[bdFirstPkt:], 64)
	off := 64
	for k, p := range pkts {
		h := b[off:]
		wl := p.wireLen
		if wl == 0 {
			wl = uint32(len(p.data))
		}
		ne.PutUint32(h[hSec:], p.sec+1)
		ne.PutUint32(h[hNsec:], 5)
		ne.PutUint32(h[hSnaplen:], uint32(len(p.data)))
		ne.PutUint32(h[hLen:], wl)
		ne.PutUint32(h[hStatus:], p.status|tpStatusUser)
		ne.PutUint16(h[hMac:], forgedMac)
		ne.PutUint32(h[hVLANTCI:], uint32(p.tci))
		ne.PutUint16(h[hVLANTPID:], p.tpid)
		copy(h[forgedMac-vnetLen:], p.vnet)
		copy(h[forgedMac:], p.data)
		next := (forgedMac + len(p.data) + 7) &^ 7
		if k == len(pkts)-1 {
			next = 0
		}
		ne.PutUint32(h[hNextOffset:], uint32(next))
		off += next
	}
	storeStatus(b, tpStatusUser)
}

func (f *forged) status(i int) uint32 { return loadStatus(f.mem[i*f.blockSize:]) }

func (f *forged) ring(vnet bool) *ring { return newRing(f.mem, f.blockSize, f.blocks, vnet) }

// walker is a receive ring walk: ring (TPACKET_V3) or ring2 (TPACKET_V2).
type walker interface {
	peek(*packet) peekResult
	advance()
	retire()
}

// drain reads every ready packet, copying each out as Receive would, and
// returns them and how many blocks (slots, on V2) were corrupt.
func drain(r walker, max int) (out [][]byte, corrupt int) {
	var p packet
	for len(out) < max {
		switch r.peek(&p) {
		case peekEmpty:
			return out, corrupt
		case peekCorrupt:
			corrupt++
			r.retire()
			continue
		}
		buf := make([]byte, p.frameLen())
		n, _ := p.copyOut(buf)
		out = append(out, buf[:n])
		r.advance()
	}
	return out, corrupt
}

func seqFrame(seq byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seq + byte(i)
	}
	return b
}

func TestRingWalk(t *testing.T) {
	f := newForged(4, 4096)
	r := f.ring(false)
	if r.ready() != 0 {
		t.Fatal("empty ring reports packets")
	}
	f.arm(0, fpkt{data: seqFrame(1, 60)}, fpkt{data: seqFrame(2, 61)}, fpkt{data: seqFrame(3, 100)})
	f.arm(1, fpkt{data: seqFrame(4, 70)})
	if r.ready() != 3 {
		t.Fatalf("ready %d, want 3", r.ready())
	}
	got, _ := drain(r, 2)
	if len(got) != 2 || !bytes.Equal(got[1], seqFrame(2, 61)) {
		t.Fatalf("first two packets wrong: %x", got)
	}
	if f.status(0) != tpStatusUser {
		t.Fatal("a partly read block went back to the kernel")
	}
	if r.ready() != 1 {
		t.Fatalf("ready %d after 2 of 3, want 1", r.ready())
	}
	got, _ = drain(r, 10)
	if len(got) != 2 || !bytes.Equal(got[0], seqFrame(3, 100)) || !bytes.Equal(got[1], seqFrame(4, 70)) {
		t.Fatalf("rest wrong: %d packets", len(got))
	}
	if f.status(0) != tpStatusKernel || f.status(1) != tpStatusKernel {
		t.Fatal("drained blocks not handed back")
	}
	if r.cur != 2 {
		t.Fatalf("cursor at block %d, want 2", r.cur)
	}
	// A block the kernel still owns is not read, and the cursor wraps.
	f.arm(3, fpkt{data: seqFrame(9, 60)})
	if got, _ := drain(r, 10); len(got) != 0 {
		t.Fatal("read past a kernel-owned block")
	}
	f.arm(2, fpkt{data: seqFrame(8, 60)})
	f.arm(0, fpkt{data: seqFrame(7, 60)})
	got, _ = drain(r, 10)
	if len(got) != 3 || got[2][0] != 7 {
		t.Fatalf("wrap: got %d packets", len(got))
	}
}

func TestRingEmptyBlockAndShortChain(t *testing.T) {
	f := newForged(2, 4096)
	r := f.ring(false)
	f.arm(0) // no packets
	f.arm(1, fpkt{data: seqFrame(1, 60)}, fpkt{data: seqFrame(2, 60)}, fpkt{data: seqFrame(3, 60)})
	// next_offset 0 on the first packet ends the block whatever num_pkts says.
	ne.PutUint32(f.mem[4096+64+hNextOffset:], 0)
	got, corrupt := drain(r, 10)
	if len(got) != 1 || corrupt != 0 {
		t.Fatalf("got %d packets, %d corrupt; want 1, 0", len(got), corrupt)
	}
	if f.status(0) != tpStatusKernel || f.status(1) != tpStatusKernel {
		t.Fatal("blocks not retired")
	}
}

// oneSlot builds a ring of each kind (TPACKET_V3 and, for WithLowLatency,
// TPACKET_V2) holding the one packet p.
var oneSlot = []struct {
	name  string
	build func(p fpkt) walker
}{
	{"v3", func(p fpkt) walker { f := newForged(1, 4096); r := f.ring(false); f.arm(0, p); return r }},
	{"v2", func(p fpkt) walker { f := newForged2(1, 4096, 2048); r := f.ring(false); f.arm(0, p); return r }},
}

func TestRingVLANReinsertion(t *testing.T) {
	for _, kind := range oneSlot {
		for _, c := range []struct {
			name string
			tpid uint16
			want uint16
		}{{"default TPID", 0, 0x8100}, {"QinQ TPID", 0x88a8, 0x88a8}} {
			t.Run(kind.name+"/"+c.name, func(t *testing.T) {
				frame := seqFrame(0x10, 64)
				r := kind.build(fpkt{data: frame, status: tpStatusVLANValid | tpStatusVLANTPID, tci: 2053, tpid: c.tpid})
				got, _ := drain(r, 1)
				if len(got) != 1 || len(got[0]) != 68 {
					t.Fatalf("got %d packets", len(got))
				}
				g := got[0]
				if !bytes.Equal(g[:12], frame[:12]) || binary.BigEndian.Uint16(g[12:]) != c.want ||
					binary.BigEndian.Uint16(g[14:]) != 2053 || !bytes.Equal(g[16:], frame[12:]) {
					t.Fatalf("tag not put back: %x", g)
				}
			})
		}
	}
}

// Every kernel-written offset is checked: a forged block is skipped and
// counted, never read out of bounds.
func TestRingRejectsForgedOffsets(t *testing.T) {
	const bs = 4096
	for _, c := range []struct {
		name  string
		forge func(b []byte)
	}{
		{"snaplen past the block", func(b []byte) { ne.PutUint32(b[64+hSnaplen:], bs) }},
		{"snaplen that wraps", func(b []byte) { ne.PutUint32(b[64+hSnaplen:], 0xffffffff) }},
		{"mac past the block", func(b []byte) { ne.PutUint16(b[64+hMac:], 0xffff) }},
		{"mac inside the header", func(b []byte) { ne.PutUint16(b[64+hMac:], 8) }},
		{"first packet past the block", func(b []byte) { ne.PutUint32(b[bdFirstPkt:], bs-10) }},
		{"first packet on the block header", func(b []byte) { ne.PutUint32(b[bdFirstPkt:], 0) }},
		{"first packet offset wraps", func(b []byte) { ne.PutUint32(b[bdFirstPkt:], 0xfffffff0) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newForged(2, bs)
			r := f.ring(false)
			f.arm(0, fpkt{data: seqFrame(1, 60)})
			f.arm(1, fpkt{data: seqFrame(2, 60)})
			c.forge(f.mem[:bs])
			got, corrupt := drain(r, 10)
			if corrupt != 1 || len(got) != 1 || got[0][0] != 2 {
				t.Fatalf("corrupt %d, got %d packets; want 1 and the next block's packet", corrupt, len(got))
			}
			if f.status(0) != tpStatusKernel {
				t.Fatal("corrupt block not handed back")
			}
		})
	}
	t.Run("next offset past the block", func(t *testing.T) {
		f := newForged(1, bs)
		r := f.ring(false)
		f.arm(0, fpkt{data: seqFrame(1, 60)}, fpkt{data: seqFrame(2, 60)})
		ne.PutUint32(f.mem[64+hNextOffset:], bs)
		got, corrupt := drain(r, 10)
		if len(got) != 1 || corrupt != 1 {
			t.Fatalf("got %d, corrupt %d; want 1, 1", len(got), corrupt)
		}
	})
	t.Run("vnet ring with no room for the header", func(t *testing.T) {
		f := newForged(1, bs)
		r := f.ring(true)
		f.arm(0, fpkt{data: seqFrame(1, 60)})
		ne.PutUint16(f.mem[64+hMac:], hSize+vnetLen-1)
		if _, corrupt := drain(r, 10); corrupt != 1 {
			t.Fatal("tp_mac under the virtio header accepted")
		}
	})
	t.Run("a lap of empty USER blocks ends", func(t *testing.T) {
		f := newForged(3, bs)
		r := f.ring(false)
		for i := range 3 {
			f.arm(i)
		}
		if got, _ := drain(r, 10); len(got) != 0 {
			t.Fatal("packets from empty blocks")
		}
	})
}

func TestInsertVLAN(t *testing.T) {
	frame := seqFrame(0, 20)
	for _, c := range []struct {
		name    string
		frame   []byte
		dst     int
		wantLen int
	}{
		{"fits", frame, 24, 24},
		{"dst too small", frame, 23, 0},
		{"frame shorter than the MACs", frame[:11], 20, 0},
		{"only MACs", frame[:12], 16, 16},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := make([]byte, c.dst)
			if n := insertVLAN(dst, c.frame, 0, 0x0fff); n != c.wantLen {
				t.Fatalf("wrote %d, want %d", n, c.wantLen)
			}
		})
	}
}

// FuzzRingBlock feeds arbitrary bytes to the walk as a block: it must never
// panic, never hand out bytes outside the block, and always end.
func FuzzRingBlock(f *testing.F) {
	fr := newForged(1, 4096)
	fr.arm(0, fpkt{data: seqFrame(1, 60), status: tpStatusVLANValid}, fpkt{data: seqFrame(2, 300)})
	f.Add(append([]byte(nil), fr.mem...), false)
	f.Add(append([]byte(nil), fr.mem[:512]...), true)
	f.Fuzz(func(t *testing.T, blk []byte, vnet bool) {
		const bs = 4096
		fr := newForged(2, bs)
		copy(fr.mem, blk)
		storeStatus(fr.mem, tpStatusUser)
		r := fr.ring(vnet)
		var p packet
		for range 2 * bs {
			switch r.peek(&p) {
			case peekEmpty:
				return
			case peekCorrupt:
				r.retire()
				continue
			}
			if len(p.data) > bs {
				t.Fatalf("packet of %d bytes from a %d-byte block", len(p.data), bs)
			}
			buf := make([]byte, p.frameLen())
			p.copyOut(buf)
			if vnet {
				rxOffload(p.vnet, true)
			}
			r.advance()
		}
		t.Fatal("the walk did not end")
	})
}
