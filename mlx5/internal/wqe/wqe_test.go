package wqe

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func newSQ(t *testing.T, blocks int) SQ {
	t.Helper()
	q, err := NewSQ(make([]byte, blocks*BlockSize))
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func packet(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i + 1)
	}
	return p
}

// golden compares got with testdata/name as a hex dump, 16 bytes a line.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	var b strings.Builder
	for off := 0; off < len(got); off += 16 {
		b.WriteString(hex.EncodeToString(got[off:min(off+16, len(got))]))
		b.WriteByte('\n')
	}
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if string(want) != b.String() {
		t.Errorf("%s differs from the golden file:\ngot\n%swant\n%s", name, b.String(), want)
	}
}

func TestNewSQRefusesBadSizes(t *testing.T) {
	for _, n := range []int{0, 32, 96, 3 * 64, 64 << 17} {
		if _, err := NewSQ(make([]byte, n)); err == nil {
			t.Errorf("NewSQ(%d bytes) accepted", n)
		}
	}
}

func TestEthOctowords(t *testing.T) {
	for _, tc := range []struct{ inline, want int }{{0, 1}, {2, 1}, {3, 2}, {18, 2}, {22, 3}, {40, 4}} {
		if got := EthOctowords(tc.inline); got != tc.want {
			t.Errorf("EthOctowords(%d) = %d, want %d", tc.inline, got, tc.want)
		}
	}
}

func TestSendEntries(t *testing.T) {
	for _, tc := range []struct {
		name           string
		inline, n      int
		ds, blocks     int
		dseg           bool
		golden         string
		csum           uint8
		signal         bool
		wantInlineSize int
	}{
		{"18 inline + data is one block", 18, 64, 4, 1, true, "send_inline18.hex", 0, true, 18},
		{"no inline + data", 0, 64, 3, 1, true, "send_inline0.hex", CsumL3 | CsumL4, false, 0},
		{"fully inline has no data segment", 18, 14, 3, 1, false, "send_fully_inline.hex", 0, true, 14},
		{"QinQ inline 22", 22, 100, 5, 2, true, "send_inline22.hex", 0, true, 22},
		{"40 inline spans blocks", 40, 300, 6, 2, true, "send_inline40.hex", 0, false, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newSQ(t, 4)
			s := Sender{SQ: q, QPN: 0x1234, LKey: 0xabcd, Inline: tc.inline, CsFlags: tc.csum}
			if err := s.Check(); err != nil {
				t.Fatal(err)
			}
			for i := range q.buf {
				q.buf[i] = 0xee // stale ring contents must not show through
			}
			pkt := packet(tc.n)
			const addr = 0x7f0000001000
			bbs := s.Put(1, pkt, addr, tc.signal)
			if bbs != tc.blocks || s.DS(tc.n) != tc.ds {
				t.Fatalf("blocks %d ds %d, want %d %d", bbs, s.DS(tc.n), tc.blocks, tc.ds)
			}
			c := q.DecodeCtrl(1)
			if c.Opcode != OpSend || c.Index != 1 || c.QPN != 0x1234 || c.DS != tc.ds {
				t.Fatalf("ctrl %+v", c)
			}
			if got := c.FmCeSe&CtrlCQUpdate != 0; got != tc.signal {
				t.Fatalf("CQ update %v, want %v", got, tc.signal)
			}
			if q.EthCs(1) != tc.csum {
				t.Fatalf("cs_flags %#x", q.EthCs(1))
			}
			in := make([]byte, 64)
			if n := q.InlineBytes(1, in); n != tc.wantInlineSize || !bytes.Equal(in[:n], pkt[:n]) {
				t.Fatalf("inline %d bytes %x", n, in[:n])
			}
			if tc.dseg {
				d := q.DecodeData(1, tc.ds-1)
				if d.ByteCount != uint32(tc.n-tc.inline) || d.LKey != 0xabcd || d.Addr != addr+uint64(tc.inline) {
					t.Fatalf("data segment %+v", d)
				}
			}
			golden(t, tc.golden, q.buf[BlockSize:BlockSize+tc.ds*OctowordSize])
		})
	}
}

func TestSendEntryWrapsAroundTheQueue(t *testing.T) {
	q := newSQ(t, 2)
	s := Sender{SQ: q, QPN: 7, LKey: 9, Inline: 40}
	pkt := packet(200)
	if bbs := s.Put(1, pkt, 0x1000, true); bbs != 2 {
		t.Fatalf("blocks %d", bbs)
	}
	// Block 1 is the last one: the inline tail and the data segment are
	// at the start of the buffer.
	in := make([]byte, 40)
	if n := q.InlineBytes(1, in); n != 40 || !bytes.Equal(in, pkt[:40]) {
		t.Fatalf("inline after wrap %x", in)
	}
	d := q.DecodeData(1, 5)
	if d.ByteCount != 160 || d.Addr != 0x1000+40 {
		t.Fatalf("data after wrap %+v", d)
	}
	if &q.Octoword(1, 5)[0] != &q.buf[16] {
		t.Fatal("octoword 5 of block 1 should sit at byte 16 of a 2-block queue")
	}
	if q.DecodeCtrl(1).Index != 1 {
		t.Fatal("ctrl index")
	}
}

func TestSenderCheck(t *testing.T) {
	q := newSQ(t, 1)
	for _, s := range []Sender{
		{SQ: q, Inline: -1},
		{SQ: q, Inline: MaxInline + 1},
		{SQ: q, QPN: 1 << 24},
		{SQ: q, Inline: 100}, // needs more than the one block
	} {
		if s.Check() == nil {
			t.Errorf("Check accepted %+v", s)
		}
	}
	big := newSQ(t, 16)
	s := Sender{SQ: big, Inline: MaxInline}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if s.DS(MaxInline+1) != MaxDS {
		t.Fatalf("DS at MaxInline = %d, want %d", s.DS(MaxInline+1), MaxDS)
	}
}

func TestMPWPointerAndCopied(t *testing.T) {
	q := newSQ(t, 16)
	for i := range q.buf {
		q.buf[i] = 0xee
	}
	m := MPW{SQ: q, QPN: 0x42, LKey: 0x77, CsFlags: CsumL4}
	m.Begin(3)
	m.Pointer(60, 0x1000)
	m.Copied(packet(13))
	m.Copied(packet(12)) // exactly one octoword with its length word
	m.Pointer(1500, 0x2000)
	if !m.Room(MaxDS-m.DS()) || m.Room(MaxDS-m.DS()+1) {
		t.Fatal("Room arithmetic")
	}
	bbs := m.Finish(true)
	wantDS := MPWHeaderDS + 1 + 2 + 1 + 1
	if m.DS() != wantDS || bbs != BlocksFor(wantDS) || m.Packets() != 4 {
		t.Fatalf("ds %d blocks %d packets %d", m.DS(), bbs, m.Packets())
	}
	c := q.DecodeCtrl(3)
	if c.Opcode != OpEMPW || c.DS != wantDS || c.FmCeSe != CtrlCQUpdate || c.Index != 3 {
		t.Fatalf("ctrl %+v", c)
	}
	e := q.Octoword(3, 1)
	if binary.BigEndian.Uint16(e[EthInlineHdrSz:]) != 0 || e[EthCsFlags] != CsumL4 {
		t.Fatalf("eMPW Ethernet segment %x", e)
	}
	k := MPWHeaderDS
	var segs []MPWSegment
	for k < wantDS {
		s := q.DecodeMPWSegment(3, k)
		segs = append(segs, s)
		k += s.DS
	}
	if len(segs) != 4 || segs[0].Copied || segs[0].Addr != 0x1000 || segs[0].LKey != 0x77 ||
		!segs[1].Copied || segs[1].Len != 13 || segs[1].DS != 2 || !segs[2].Copied || segs[2].DS != 1 ||
		segs[3].Copied || segs[3].Len != 1500 {
		t.Fatalf("segments %+v", segs)
	}
	got := make([]byte, 13)
	q.Read(3, segs[1].Off, got)
	if !bytes.Equal(got, packet(13)) {
		t.Fatalf("copied bytes %x", got)
	}
	golden(t, "empw_mixed.hex", q.buf[3*BlockSize:3*BlockSize+m.DS()*OctowordSize])
}

func TestMPWPointerCapacity(t *testing.T) {
	q := newSQ(t, 16)
	m := MPW{SQ: q}
	m.Begin(0)
	n := 0
	for m.Room(1) {
		m.Pointer(64, uint64(n)*2048)
		n++
	}
	if n != MPWMaxPointers || m.Finish(false) != 15 {
		t.Fatalf("%d pointers, want %d in 15 blocks", n, MPWMaxPointers)
	}
}

func TestCQERoundTrip(t *testing.T) {
	for _, c := range []CQE{
		{Opcode: CQEReq, Owner: 1, WQECounter: 0xfffe, QPN: 0x1234},
		{Opcode: CQERespSend, WQECounter: 7, ByteCount: 60, Timestamp: 1 << 40, HdsIPExt: CQEL2OK | CQEL3OK | CQEL4OK, L3Type: L3IPv4, RxHash: 0xdeadbeef},
		{Opcode: CQEReqErr, Owner: 1, WQECounter: 3, Syndrome: SyndromeLocalLength, VendorSyndrome: 0x99, WQEOpcode: OpSend, QPN: 0xabcdef},
		{Opcode: CQERespErr, Syndrome: SyndromeWRFlush},
	} {
		b := make([]byte, CQESize)
		for i := range b {
			b[i] = 0x5a
		}
		if !c.Encode(b) {
			t.Fatal("Encode refused 64 bytes")
		}
		got, ok := DecodeCQE(b)
		if !ok || got != c {
			t.Fatalf("round trip\n got %+v\nwant %+v", got, c)
		}
		h := binary.BigEndian.Uint32(b[CQEHeader:])
		if HeaderOpcode(h) != c.Opcode || HeaderOwner(h) != c.Owner || HeaderCounter(h) != c.WQECounter || HeaderFormat(h) != 0 {
			t.Fatalf("header word %#x", h)
		}
	}
	if _, ok := DecodeCQE(make([]byte, 63)); ok {
		t.Fatal("decoded a short CQE")
	}
	if (CQE{}).Encode(make([]byte, 10)) {
		t.Fatal("encoded into a short slice")
	}
}

func TestSoftwareOwns(t *testing.T) {
	const log = 3 // 8 entries
	fresh := uint32(CQEInvalid) << 4
	for _, tc := range []struct {
		name string
		h    uint32
		ci   uint32
		want bool
	}{
		{"fresh memory", fresh, 0, false},
		{"lap 0 entry", uint32(CQEReq) << 4, 0, true},
		{"lap 0 entry seen on lap 1", uint32(CQEReq) << 4, 8, false},
		{"lap 1 entry", uint32(CQEReq)<<4 | 1, 9, true},
		{"lap 1 entry seen on lap 2", uint32(CQEReq)<<4 | 1, 16, false},
		{"invalid with matching owner", fresh | 1, 8, false},
	} {
		if got := SoftwareOwns(tc.h, tc.ci, log); got != tc.want {
			t.Errorf("%s: SoftwareOwns = %v", tc.name, got)
		}
	}
	cq := make([]byte, 4*CQESize)
	InitCQ(cq)
	for i := 0; i < 4; i++ {
		if cq[i*CQESize+CQEOpOwn] != 0xf0 {
			t.Fatal("InitCQ")
		}
	}
}

func TestSyndromeNames(t *testing.T) {
	if SyndromeName(SyndromeLocalLength) != "local length error" || SyndromeName(0xff) != "unknown syndrome" {
		t.Fatal("names")
	}
}

// FuzzDecodeCQE: decoding any 64 bytes never panics, and decoding is a fixed
// point of encode-then-decode.
func FuzzDecodeCQE(f *testing.F) {
	seed := make([]byte, CQESize)
	CQE{Opcode: CQERespSend, ByteCount: 64, Timestamp: 99}.Encode(seed)
	f.Add(seed)
	err := make([]byte, CQESize)
	CQE{Opcode: CQEReqErr, Syndrome: SyndromeWRFlush, QPN: 5}.Encode(err)
	f.Add(err)
	f.Add(make([]byte, 10))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, ok := DecodeCQE(b)
		if !ok {
			if len(b) >= CQESize {
				t.Fatal("refused a full CQE")
			}
			return
		}
		out := make([]byte, CQESize)
		if !c.Encode(out) {
			t.Fatal("Encode refused")
		}
		c2, _ := DecodeCQE(out)
		if c2 != c {
			t.Fatalf("not a fixed point:\n%+v\n%+v", c, c2)
		}
		_ = SyndromeName(c.Syndrome)
		_ = SoftwareOwns(binary.BigEndian.Uint32(b[CQEHeader:]), 0, 4)
	})
}
