//go:build linux

package afpacket

import (
	"bytes"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The hand-written TPACKET_V2 offsets must match the kernel's struct as
// x/sys/unix mirrors it.
func TestKernelLayoutV2(t *testing.T) {
	var h unix.Tpacket2Hdr
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof tpacket2_hdr", unsafe.Sizeof(h), h2Size},
		{"tp_status", unsafe.Offsetof(h.Status), h2Status},
		{"tp_len", unsafe.Offsetof(h.Len), h2Len},
		{"tp_snaplen", unsafe.Offsetof(h.Snaplen), h2Snaplen},
		{"tp_mac", unsafe.Offsetof(h.Mac), h2Mac},
		{"tp_net", unsafe.Offsetof(h.Net), h2Net},
		{"tp_sec", unsafe.Offsetof(h.Sec), h2Sec},
		{"tp_nsec", unsafe.Offsetof(h.Nsec), h2Nsec},
		{"tp_vlan_tci", unsafe.Offsetof(h.Vlan_tci), h2VLANTCI},
		{"tp_vlan_tpid", unsafe.Offsetof(h.Vlan_tpid), h2VLANTPID},
		{"sizeof tpacket_req", unsafe.Sizeof(unix.TpacketReq{}), 16},
		{"TPACKET_ALIGNMENT", unix.TPACKET_ALIGNMENT, tpacketAlign},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
}

// forged2 is a synthetic TPACKET_V2 ring, laid out as the kernel lays it
// out: blocks cut into slots, slack at the end of each block.
type forged2 struct {
	mem                  []byte
	blockSize, frameSize int
	blocks               int
}

func newForged2(blocks, blockSize, frameSize int) *forged2 {
	words := make([]uint64, blocks*blockSize/8)
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), blocks*blockSize)
	return &forged2{mem: mem, blockSize: blockSize, frameSize: frameSize, blocks: blocks}
}

func (f *forged2) slot(i int) []byte {
	per := f.blockSize / f.frameSize
	off := i/per*f.blockSize + i%per*f.frameSize
	return f.mem[off : off+f.frameSize]
}

func (f *forged2) ring(vnet bool) *ring2 {
	return newRing2(f.mem, f.blockSize, f.frameSize, f.blocks, vnet)
}

// arm writes p into slot i and hands it to "user space".
func (f *forged2) arm(i int, p fpkt) {
	s := f.slot(i)
	clear(s)
	wl := p.wireLen
	if wl == 0 {
		wl = uint32(len(p.data))
	}
	ne.PutUint32(s[h2Len:], wl)
	ne.PutUint32(s[h2Snaplen:], uint32(len(p.data)))
	ne.PutUint16(s[h2Mac:], forgedMac)
	ne.PutUint16(s[h2Net:], forgedMac+etherLen)
	ne.PutUint32(s[h2Sec:], p.sec+1)
	ne.PutUint32(s[h2Nsec:], 5)
	ne.PutUint16(s[h2VLANTCI:], p.tci)
	ne.PutUint16(s[h2VLANTPID:], p.tpid)
	copy(s[forgedMac-vnetLen:], p.vnet)
	copy(s[forgedMac:], p.data)
	storeSlotStatus(s, p.status|tpStatusUser)
}

func (f *forged2) status(i int) uint32 { return loadSlotStatus(f.slot(i)) }

func TestRing2Walk(t *testing.T) {
	// 3 slots of 1360 bytes per 4096-byte block, 16 bytes of slack: the
	// walk must find slots by block and index, not by multiplying.
	f := newForged2(2, 4096, 1360)
	r := f.ring(false)
	if r.frames != 6 {
		t.Fatalf("%d slots, want 6", r.frames)
	}
	if r.ready() != 0 {
		t.Fatal("empty ring reports packets")
	}
	for i := range 4 {
		f.arm(i, fpkt{data: seqFrame(byte(i+1), 60+i*300)})
	}
	if r.ready() != 4 {
		t.Fatalf("ready %d, want 4", r.ready())
	}
	got, _ := drain(r, 2)
	if len(got) != 2 || !bytes.Equal(got[1], seqFrame(2, 360)) {
		t.Fatalf("first two packets wrong: %d", len(got))
	}
	if f.status(0) != tpStatusKernel || f.status(1) != tpStatusKernel || f.status(2)&tpStatusUser == 0 {
		t.Fatal("a slot went back before (or stayed after) being read")
	}
	got, _ = drain(r, 10)
	if len(got) != 2 || !bytes.Equal(got[0], seqFrame(3, 660)) || !bytes.Equal(got[1], seqFrame(4, 960)) {
		t.Fatalf("rest wrong: %d packets", len(got))
	}
	if r.cur != 4 || r.released != 4 {
		t.Fatalf("cursor %d, released %d; want 4, 4", r.cur, r.released)
	}
	// A slot the kernel still owns stops the walk even when later ones
	// are ready (the kernel fills in order), and the cursor wraps.
	f.arm(0, fpkt{data: seqFrame(9, 60)})
	f.arm(5, fpkt{data: seqFrame(8, 60)})
	if got, _ := drain(r, 10); len(got) != 0 || r.ready() != 0 {
		t.Fatal("read past a kernel-owned slot")
	}
	f.arm(4, fpkt{data: seqFrame(7, 60)})
	if r.ready() != 3 {
		t.Fatalf("ready %d across the wrap, want 3", r.ready())
	}
	got, _ = drain(r, 10)
	if len(got) != 3 || got[0][0] != 7 || got[1][0] != 8 || got[2][0] != 9 || r.cur != 1 {
		t.Fatalf("wrap: got %d packets, cursor %d", len(got), r.cur)
	}
}

// Other status bits (TP_STATUS_LOSING, CSUMNOTREADY, CSUM_VALID) ride along
// with TP_STATUS_USER and do not hide the packet.
func TestRing2StatusBits(t *testing.T) {
	f := newForged2(1, 4096, 2048)
	r := f.ring(false)
	f.arm(0, fpkt{data: seqFrame(1, 60), status: 1<<2 | 1<<3 | 1<<7})
	var p packet
	if r.peek(&p) != peekOK || p.status&(1<<3) == 0 || p.vlanTagged() {
		t.Fatalf("status %#x", p.status)
	}
	if p.wireLen != 60 || p.sec != 1 || p.nsec != 5 {
		t.Fatalf("len %d, stamp %d.%d", p.wireLen, p.sec, p.nsec)
	}
	r.advance()
	if f.status(0) != tpStatusKernel {
		t.Fatal("slot not handed back")
	}
}

// Every kernel-written offset is checked against the slot: a forged slot is
// skipped, handed back and counted, never read out of bounds.
func TestRing2RejectsForgedOffsets(t *testing.T) {
	const bs, fs = 4096, 2048
	for _, c := range []struct {
		name  string
		vnet  bool
		forge func(s []byte)
	}{
		{"snaplen past the slot", false, func(s []byte) { ne.PutUint32(s[h2Snaplen:], fs-forgedMac+1) }},
		{"snaplen that wraps", false, func(s []byte) { ne.PutUint32(s[h2Snaplen:], 0xffffffff) }},
		{"mac past the slot", false, func(s []byte) { ne.PutUint16(s[h2Mac:], fs+1) }},
		{"mac at the slot end with data", false, func(s []byte) { ne.PutUint16(s[h2Mac:], fs) }},
		{"mac at 0xffff", false, func(s []byte) { ne.PutUint16(s[h2Mac:], 0xffff) }},
		{"mac inside the header", false, func(s []byte) { ne.PutUint16(s[h2Mac:], h2Size-1) }},
		{"vnet ring with no room for the header", true, func(s []byte) { ne.PutUint16(s[h2Mac:], h2Size+vnetLen-1) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newForged2(1, bs, fs)
			r := f.ring(c.vnet)
			f.arm(0, fpkt{data: seqFrame(1, 60)})
			f.arm(1, fpkt{data: seqFrame(2, 60)})
			c.forge(f.slot(0))
			got, corrupt := drain(r, 10)
			if corrupt != 1 || len(got) != 1 || got[0][0] != 2 {
				t.Fatalf("corrupt %d, got %d packets; want 1 and the next slot's packet", corrupt, len(got))
			}
			if f.status(0) != tpStatusKernel {
				t.Fatal("corrupt slot not handed back")
			}
		})
	}
	t.Run("largest packet that fits", func(t *testing.T) {
		f := newForged2(1, bs, fs)
		r := f.ring(true)
		f.arm(0, fpkt{data: seqFrame(1, fs-forgedMac), vnet: make([]byte, vnetLen)})
		var p packet
		if r.peek(&p) != peekOK || len(p.data) != fs-forgedMac || len(p.vnet) != vnetLen {
			t.Fatalf("a packet filling the slot was refused")
		}
	})
}

// The geometry asked of the kernel: slots aligned and big enough for the
// kernel's header placement, blocks of whole pages holding at least one
// slot, and about RingBytes in all.
func TestRing2Geometry(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []Option
		cap  int
	}{
		{"default", nil, DefaultFrameSize - frameHeadroom},
		{"small frames", []Option{WithFrameSize(256)}, 256 - frameHeadroom},
		{"gso", []Option{WithGSO()}, maxFrameSize},
		{"multi-buffer", []Option{WithMultiBuffer()}, maxFrameSize},
		{"big blocks", []Option{WithBlockSize(1 << 20)}, DefaultFrameSize - frameHeadroom},
	} {
		t.Run(c.name, func(t *testing.T) {
			var cfg config
			for _, o := range append(c.opts, WithLowLatency()) {
				o(&cfg)
			}
			r, err := cfg.resolve()
			if err != nil {
				t.Fatal(err)
			}
			const kernelMacoff = 66 + vnetLen // Ethernet, TPACKET2_HDRLEN 52, with a virtio header
			switch {
			case !r.lowLatency:
				t.Fatal("lowLatency not resolved")
			case r.v2FrameSize%tpacketAlign != 0:
				t.Errorf("frame size %d not aligned", r.v2FrameSize)
			case r.v2FrameSize-kernelMacoff < c.cap:
				t.Errorf("frame size %d holds %d bytes, need %d", r.v2FrameSize, r.v2FrameSize-kernelMacoff, c.cap)
			case r.v2BlockSize%pageSize != 0 || r.v2BlockSize < r.v2FrameSize || r.v2BlockSize > maxBlockSize:
				t.Errorf("block size %d for %d-byte frames", r.v2BlockSize, r.v2FrameSize)
			case r.v2Blocks < minBlocks || r.v2Blocks*r.v2BlockSize > 2*RingBytes:
				t.Errorf("%d blocks of %d bytes", r.v2Blocks, r.v2BlockSize)
			}
		})
	}
	var cfg config
	r, _ := cfg.resolve()
	if r.lowLatency || r.v2FrameSize != 0 {
		t.Fatal("V2 ring without WithLowLatency")
	}
}

// FuzzRing2Slot feeds arbitrary bytes to the V2 walk as a slot: it must
// never panic, never hand out bytes outside the slot, and always end.
func FuzzRing2Slot(f *testing.F) {
	fr := newForged2(1, 4096, 2048)
	fr.arm(0, fpkt{data: seqFrame(1, 60), status: tpStatusVLANValid})
	fr.arm(1, fpkt{data: seqFrame(2, 300), vnet: make([]byte, vnetLen)})
	f.Add(append([]byte(nil), fr.slot(0)...), false)
	f.Add(append([]byte(nil), fr.slot(1)[:256]...), true)
	f.Fuzz(func(t *testing.T, slot []byte, vnet bool) {
		const bs, fs = 4096, 1360
		fr := newForged2(2, bs, fs)
		for i := range 6 {
			s := fr.slot(i)
			copy(s, slot)
			storeSlotStatus(s, loadSlotStatus(s)|tpStatusUser)
		}
		r := fr.ring(vnet)
		var p packet
		for range 7 {
			if r.released == 6 {
				break
			}
			switch r.peek(&p) {
			case peekEmpty:
				t.Fatal("a ready slot reported empty")
			case peekCorrupt:
				r.retire()
				continue
			}
			if len(p.data) > fs || (vnet && len(p.vnet) != vnetLen) {
				t.Fatalf("packet of %d bytes from a %d-byte slot", len(p.data), fs)
			}
			buf := make([]byte, p.frameLen())
			p.copyOut(buf)
			if vnet {
				rxOffload(p.vnet, true)
			}
			r.advance()
		}
		if r.released != 6 || r.peek(&p) != peekEmpty {
			t.Fatalf("released %d of 6 slots", r.released)
		}
	})
}
