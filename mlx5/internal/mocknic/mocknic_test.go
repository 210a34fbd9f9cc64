package mocknic

import (
	"encoding/binary"
	"math/bits"
	"strings"
	"testing"

	"github.com/packetio/packetio/mlx5/internal/wqe"
)

const (
	va   = 0x7f0000000000
	lkey = 0x55
	qpn  = 0x77
)

// txBench is a send queue written by hand with the wqe encoders, so each
// test can break exactly one rule.
type txBench struct {
	sq, cq, region []byte
	rec            [2]uint32
	cqRec          uint32
	q              wqe.SQ
	nic            *TxNIC
	pi             uint32
}

func newTxBench(t *testing.T, blocks, cqEntries int, empw bool) *txBench {
	t.Helper()
	b := &txBench{sq: make([]byte, blocks*64), cq: make([]byte, cqEntries*64), region: make([]byte, 8*2048)}
	var err error
	if b.q, err = wqe.NewSQ(b.sq); err != nil {
		t.Fatal(err)
	}
	b.nic, err = NewTx(TxConfig{SQ: b.sq, CQ: b.cq, SQDbrec: &b.rec[1], CQDbrec: &b.cqRec, Region: b.region, RegionVA: va, LKey: lkey, QPN: qpn, EMPW: empw})
	if err != nil {
		t.Fatal(err)
	}
	for i := range b.region {
		b.region[i] = byte(i)
	}
	return b
}

func beWord(v uint32) uint32 {
	var x [4]byte
	binary.BigEndian.PutUint32(x[:], v)
	return binary.NativeEndian.Uint32(x[:])
}

// send writes a SEND entry with s and publishes it.
func (b *txBench) send(s wqe.Sender, off uint64, n int, signal bool) {
	b.pi += uint32(s.Put(b.pi, b.region[off:off+uint64(n)], va+off, signal))
	b.rec[1] = beWord(b.pi & 0xffff)
}

func (b *txBench) sender() wqe.Sender { return wqe.Sender{SQ: b.q, QPN: qpn, LKey: lkey, Inline: 18} }

func (b *txBench) cqe(i int) wqe.CQE {
	c, _ := wqe.DecodeCQE(b.cq[i*64:])
	return c
}

func wantViolation(t *testing.T, n []string, sub string) {
	t.Helper()
	for _, v := range n {
		if strings.Contains(v, sub) {
			return
		}
	}
	t.Fatalf("no violation mentioning %q in %q", sub, n)
}

func TestTxSendsAndCompletes(t *testing.T) {
	b := newTxBench(t, 8, 8, false)
	b.send(b.sender(), 0, 100, false)
	b.send(b.sender(), 2048, 14, true)
	if n := b.nic.Poll(); n != 2 || len(b.nic.Violations) != 0 {
		t.Fatalf("sent %d, violations %q", n, b.nic.Violations)
	}
	p := b.nic.Packets
	if len(p[0].Bytes) != 100 || p[0].Bytes[50] != 50 || p[0].Addr != va+18 || p[1].Addr != 0 || p[1].Inlined != 14 {
		t.Fatalf("packets %+v", p)
	}
	c := b.cqe(0)
	if c.Opcode != wqe.CQEReq || c.WQECounter != 1 || c.QPN != qpn || c.Owner != 0 {
		t.Fatalf("completion %+v", c)
	}
	if b.cqe(1).Opcode != wqe.CQEInvalid {
		t.Fatal("an unsignalled entry completed")
	}
}

func TestTxViolations(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		syndrome   uint8
		write      func(b *txBench)
	}{
		{"byte-swapped doorbell", "byte-swapped", 0, func(b *txBench) {
			b.send(b.sender(), 0, 64, true)
			b.rec[1] = bits.ReverseBytes32(b.rec[1]) // the bytes the wrong way round
		}},
		{"producer past free space", "runs 9 blocks past", 0, func(b *txBench) { b.rec[1] = beWord(9) }},
		{"wrong QPN", "names QP", wqe.SyndromeLocalQPOp, func(b *txBench) {
			s := b.sender()
			s.QPN = 5
			b.send(s, 0, 64, true)
		}},
		{"wrong key", "uses key", wqe.SyndromeLocalProtection, func(b *txBench) {
			s := b.sender()
			s.LKey = 9
			b.send(s, 0, 64, true)
		}},
		{"outside the region", "outside the registered region", wqe.SyndromeLocalProtection, func(b *txBench) {
			s := b.sender()
			b.pi += uint32(s.Put(0, make([]byte, 64), va+8*2048, true))
			b.rec[1] = beWord(b.pi)
		}},
		{"zero-length data segment", "zero-length data segment", wqe.SyndromeLocalLength, func(b *txBench) {
			b.send(b.sender(), 0, 64, true)
			b.q.PutData(0, 3, 0, lkey, va)
		}},
		{"wrong block index", "says it is block", wqe.SyndromeLocalQPOp, func(b *txBench) {
			s := b.sender()
			s.Put(5, b.region[:64], va, true) // written as block 5
			copy(b.sq[:64], b.sq[5*64:6*64])
			b.rec[1] = beWord(1)
		}},
		{"ds does not match the inline size", "octowords", wqe.SyndromeLocalLength, func(b *txBench) {
			b.send(b.sender(), 0, 64, true)
			b.q.PutCtrl(0, wqe.OpSend, qpn, 2, wqe.CtrlCQUpdate)
		}},
		{"unknown opcode", "opcode", wqe.SyndromeLocalQPOp, func(b *txBench) {
			b.send(b.sender(), 0, 64, true)
			b.q.PutCtrl(0, wqe.OpTSO, qpn, 4, wqe.CtrlCQUpdate)
		}},
		{"eMPW without the capability", "without enhanced MPW", wqe.SyndromeLocalQPOp, func(b *txBench) {
			m := wqe.MPW{SQ: b.q, QPN: qpn, LKey: lkey}
			m.Begin(0)
			m.Pointer(64, va)
			b.pi += uint32(m.Finish(true))
			b.rec[1] = beWord(b.pi)
		}},
		{"entry past the producer", "runs past the producer", wqe.SyndromeLocalQPOp, func(b *txBench) {
			s := b.sender()
			s.Inline = 40
			s.Put(0, b.region[:100], va, true) // two blocks
			b.rec[1] = beWord(1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newTxBench(t, 8, 8, false)
			tc.write(b)
			b.nic.Poll()
			wantViolation(t, b.nic.Violations, tc.want)
			if tc.syndrome != 0 {
				if c := b.cqe(0); c.Opcode != wqe.CQEReqErr || c.Syndrome != tc.syndrome || !b.nic.Failed() {
					t.Fatalf("completion %+v, failed %v", c, b.nic.Failed())
				}
			}
		})
	}
}

func TestTxEMPW(t *testing.T) {
	b := newTxBench(t, 16, 16, true)
	m := wqe.MPW{SQ: b.q, QPN: qpn, LKey: lkey}
	m.Begin(0)
	m.Pointer(64, va)
	m.Copied(b.region[100:130])
	m.Pointer(1000, va+2048)
	b.pi += uint32(m.Finish(true))
	b.rec[1] = beWord(b.pi)
	if n := b.nic.Poll(); n != 3 || len(b.nic.Violations) > 0 {
		t.Fatalf("sent %d: %q", n, b.nic.Violations)
	}
	if p := b.nic.Packets; len(p[1].Bytes) != 30 || p[1].Bytes[0] != 100 || p[1].Inlined != 30 || len(p[2].Bytes) != 1000 {
		t.Fatalf("%+v", p)
	}
	// An eMPW entry with an inline header is refused.
	m.Begin(b.pi)
	m.Pointer(64, va)
	binary.BigEndian.PutUint16(b.q.Octoword(b.pi, 1)[wqe.EthInlineHdrSz:], 18)
	b.pi += uint32(m.Finish(true))
	b.rec[1] = beWord(b.pi)
	b.nic.Poll()
	wantViolation(t, b.nic.Violations, "inline header")
}

func TestTxFailAfterThenFlush(t *testing.T) {
	b := newTxBench(t, 8, 8, false)
	b.nic.FailAfter = 2
	b.nic.Syndrome = wqe.SyndromeLocalLength
	for i := 0; i < 4; i++ {
		b.send(b.sender(), uint64(i)*2048, 64, i == 3)
	}
	b.nic.Poll()
	if c := b.cqe(0); c.Opcode != wqe.CQEReqErr || c.WQECounter != 1 || c.Syndrome != wqe.SyndromeLocalLength {
		t.Fatalf("error completion %+v", c)
	}
	if b.nic.Sent() != 1 || b.nic.Finished() != 2 || b.nic.Outstanding() != 2 {
		t.Fatalf("sent %d finished %d outstanding %d", b.nic.Sent(), b.nic.Finished(), b.nic.Outstanding())
	}
	b.nic.Poll()
	for i := 1; i <= 2; i++ {
		if c := b.cqe(i); c.Opcode != wqe.CQEReqErr || c.Syndrome != wqe.SyndromeWRFlush || c.WQECounter != uint16(i+1) {
			t.Fatalf("flush %d: %+v", i, c)
		}
	}
	if b.nic.Finished() != 4 || len(b.nic.Violations) != 0 {
		t.Fatal("flush")
	}
}

func TestTxBlocksPerPoll(t *testing.T) {
	b := newTxBench(t, 8, 8, false)
	for i := 0; i < 4; i++ {
		b.send(b.sender(), 0, 64, true)
	}
	b.nic.BlocksPerPoll = -1
	if b.nic.Poll() != 0 || b.nic.Outstanding() != 4 {
		t.Fatal("a device holding still sent")
	}
	b.nic.BlocksPerPoll = 3
	if b.nic.Poll() != 3 {
		t.Fatal("budget")
	}
}

func TestTxCQOverrun(t *testing.T) {
	b := newTxBench(t, 8, 2, false)
	for i := 0; i < 3; i++ {
		b.send(b.sender(), 0, 64, true)
	}
	b.nic.Poll()
	wantViolation(t, b.nic.Violations, "CQ overrun")
	// Releasing the entries lets the device go on.
	b2 := newTxBench(t, 8, 2, false)
	for i := 0; i < 3; i++ {
		b2.send(b2.sender(), 0, 64, true)
		b2.nic.Poll()
		b2.cqRec = beWord(uint32(i + 1))
	}
	if len(b2.nic.Violations) != 0 {
		t.Fatalf("%q", b2.nic.Violations)
	}
	if b2.cqe(0).Owner != 1 || b2.cqe(0).WQECounter != 2 {
		t.Fatalf("second lap entry %+v", b2.cqe(0))
	}
}

func TestTxConfigErrors(t *testing.T) {
	var r uint32
	if _, err := NewTx(TxConfig{SQ: make([]byte, 100), CQ: make([]byte, 128), SQDbrec: &r, CQDbrec: &r}); err == nil {
		t.Fatal("bad SQ accepted")
	}
	if _, err := NewTx(TxConfig{SQ: make([]byte, 128), CQ: make([]byte, 100), SQDbrec: &r, CQDbrec: &r}); err == nil {
		t.Fatal("bad CQ accepted")
	}
	if _, err := NewRx(RxConfig{RQ: make([]byte, 24), CQ: make([]byte, 128), RQDbrec: &r, CQDbrec: &r}); err == nil {
		t.Fatal("bad RQ accepted")
	}
}

type rxBench struct {
	rq, cq, region []byte
	rec, cqRec     uint32
	nic            *RxNIC
	pi             uint32
}

func newRxBench(t *testing.T, entries int) *rxBench {
	t.Helper()
	b := &rxBench{rq: make([]byte, entries*16), cq: make([]byte, entries*64), region: make([]byte, 8*2048)}
	var err error
	if b.nic, err = NewRx(RxConfig{RQ: b.rq, CQ: b.cq, RQDbrec: &b.rec, CQDbrec: &b.cqRec, Region: b.region, RegionVA: va, LKey: lkey}); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *rxBench) post(key uint32, addr uint64, size uint32) {
	w := b.rq[(b.pi%uint32(len(b.rq)/16))*16:]
	binary.BigEndian.PutUint32(w, size)
	binary.BigEndian.PutUint32(w[4:], key)
	binary.BigEndian.PutUint64(w[8:], addr)
	b.pi++
	b.rec = beWord(b.pi)
}

func TestRxDeliver(t *testing.T) {
	b := newRxBench(t, 4)
	b.post(lkey, va+64, 1984)
	b.post(lkey, va+2048+64, 1984)
	b.nic.TicksPerPacket = 5
	pkt := make([]byte, 60)
	binary.BigEndian.PutUint16(pkt[12:], 0x0800)
	pkt[20] = 0xab
	if n := b.nic.Deliver(pkt, pkt, pkt); n != 2 || b.nic.Dropped != 1 {
		t.Fatalf("delivered %d dropped %d", n, b.nic.Dropped)
	}
	c, _ := wqe.DecodeCQE(b.cq)
	if c.Opcode != wqe.CQERespSend || c.ByteCount != 60 || c.L3Type != wqe.L3IPv4 || c.Timestamp != 5 || c.HdsIPExt != 7 {
		t.Fatalf("%+v", c)
	}
	if c2, _ := wqe.DecodeCQE(b.cq[64:]); c2.WQECounter != 1 || c2.Timestamp != 10 {
		t.Fatalf("%+v", c2)
	}
	if b.region[64+20] != 0xab {
		t.Fatal("not scattered")
	}
}

func TestRxViolations(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		post       func(b *rxBench)
	}{
		{"byte-swapped", "byte-swapped", func(b *rxBench) { b.post(lkey, va, 2048); b.rec = bits.ReverseBytes32(b.rec) }},
		{"too many posted", "claims", func(b *rxBench) { b.rec = beWord(5) }},
		{"wrong key", "uses key", func(b *rxBench) { b.post(7, va, 2048) }},
		{"outside the region", "outside the registered region", func(b *rxBench) { b.post(lkey, va+8*2048-100, 2048) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newRxBench(t, 4)
			tc.post(b)
			b.nic.Deliver(make([]byte, 60))
			wantViolation(t, b.nic.Violations, tc.want)
		})
	}
}

func TestRxFailEveryAndTooLong(t *testing.T) {
	b := newRxBench(t, 4)
	for i := 0; i < 4; i++ {
		b.post(lkey, va+uint64(i)*2048, 100)
	}
	b.nic.FailEvery = 2
	b.nic.Deliver(make([]byte, 60), make([]byte, 60), make([]byte, 101), make([]byte, 60))
	want := []struct {
		op  uint8
		syn uint8
	}{{wqe.CQERespSend, 0}, {wqe.CQERespErr, wqe.SyndromeLocalProtection}, {wqe.CQERespErr, wqe.SyndromeLocalLength}, {wqe.CQERespErr, wqe.SyndromeLocalProtection}}
	for i, w := range want {
		c, _ := wqe.DecodeCQE(b.cq[i*64:])
		if c.Opcode != w.op || c.Syndrome != w.syn {
			t.Fatalf("completion %d: %+v", i, c)
		}
	}
}

func TestRxCQOverrun(t *testing.T) {
	b := &rxBench{rq: make([]byte, 4*16), cq: make([]byte, 2*64), region: make([]byte, 8*2048)}
	var err error
	if b.nic, err = NewRx(RxConfig{RQ: b.rq, CQ: b.cq, RQDbrec: &b.rec, CQDbrec: &b.cqRec, Region: b.region, RegionVA: va, LKey: lkey}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		b.post(lkey, va+uint64(i)*2048, 2048)
	}
	if n := b.nic.Deliver(make([]byte, 60), make([]byte, 60), make([]byte, 60)); n != 2 {
		t.Fatalf("delivered %d into a 2-entry CQ nobody released", n)
	}
	wantViolation(t, b.nic.Violations, "CQ overrun")
}
