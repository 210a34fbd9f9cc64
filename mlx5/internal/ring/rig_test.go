package ring

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/pool"
	"github.com/packetio/packetio/mlx5/internal/mocknic"
	"github.com/packetio/packetio/mlx5/internal/wqe"
)

// The test rigs: ring and model over the same Go memory, with a fake device
// address for the region, and an ownership oracle that fails the test the
// moment a frame is handed to the device while the device owns it, or handed
// back while it does not.

const (
	testVA   = 0x7f0000000000
	testLKey = 0x1234abcd
	testQPN  = 0x0000c0de
)

// oracle tracks which frames the device owns.
type oracle struct {
	tb       testing.TB
	frameLen uint64
	device   []bool
}

func newOracle(tb testing.TB, frames, frameSize int) *oracle {
	return &oracle{tb: tb, frameLen: uint64(frameSize), device: make([]bool, frames)}
}

func (o *oracle) give(what string, d packetio.Desc) {
	o.tb.Helper()
	i := d.Addr / o.frameLen
	if o.device[i] {
		o.tb.Fatalf("%s: frame %d handed to the device while it already owns it", what, i)
	}
	o.device[i] = true
}

func (o *oracle) take(what string, d packetio.Desc) {
	o.tb.Helper()
	i := d.Addr / o.frameLen
	if i >= uint64(len(o.device)) || !o.device[i] {
		o.tb.Fatalf("%s: frame %d (addr %#x) handed back but the device does not own it", what, i, d.Addr)
	}
	o.device[i] = false
}

func (o *oracle) deviceOwns() int {
	n := 0
	for _, b := range o.device {
		if b {
			n++
		}
	}
	return n
}

type txOpts struct {
	blocks, cqEntries, frames, frameSize int
	cfg                                  TxConfig // mode, inline, signalling
	empw                                 bool
}

type txRig struct {
	tb      testing.TB
	sq, cq  []byte
	qpRec   [2]uint32
	cqRec   uint32
	uar     uint64
	region  []byte
	ring    *Tx
	nic     *mocknic.TxNIC
	pool    *pool.Frames
	oracle  *oracle
	scratch []uint64
	out     []packetio.Desc
	seq     uint32
	fifo    []packetio.Desc // posted and not yet handed back, in order
	back    int             // frames handed back so far
}

func newTxRig(tb testing.TB, o txOpts, f faults) *txRig {
	tb.Helper()
	if o.blocks == 0 {
		o.blocks = 64
	}
	if o.cqEntries == 0 {
		o.cqEntries = o.blocks
	}
	if o.frameSize == 0 {
		o.frameSize = 2048
	}
	if o.frames == 0 {
		o.frames = 4 * o.blocks
	}
	r := &txRig{
		tb:     tb,
		sq:     make([]byte, o.blocks*wqe.BlockSize),
		cq:     make([]byte, o.cqEntries*wqe.CQESize),
		region: make([]byte, o.frames*o.frameSize),
	}
	cfg := o.cfg
	cfg.SQ, cfg.CQ = r.sq, r.cq
	cfg.SQDbrec, cfg.CQDbrec, cfg.UAR = &r.qpRec[wqe.SndDbr], &r.cqRec, &r.uar
	cfg.QPN, cfg.LKey = testQPN, testLKey
	cfg.Region, cfg.RegionVA, cfg.FrameSize = r.region, testVA, o.frameSize
	var err error
	if r.nic, err = mocknic.NewTx(mocknic.TxConfig{SQ: r.sq, CQ: r.cq, SQDbrec: cfg.SQDbrec, CQDbrec: cfg.CQDbrec,
		Region: r.region, RegionVA: testVA, LKey: testLKey, QPN: testQPN, EMPW: o.empw}); err != nil {
		tb.Fatal(err)
	}
	if r.ring, err = NewTx(cfg); err != nil {
		tb.Fatal(err)
	}
	r.ring.fault = f
	if r.pool, err = pool.New(0, o.frames, o.frameSize); err != nil {
		tb.Fatal(err)
	}
	r.oracle = newOracle(tb, o.frames, o.frameSize)
	r.scratch = make([]uint64, 0, o.frames)
	r.out = make([]packetio.Desc, 0, o.frames)
	return r
}

// build takes n frames from the pool and writes a numbered packet of length
// n(i) into each.
func (r *txRig) build(n int, length func(i int) int, descs []packetio.Desc) []packetio.Desc {
	r.scratch = r.pool.Pop(n, r.scratch[:0])
	for i, a := range r.scratch {
		l := length(i)
		f := r.region[a : a+uint64(l)]
		for j := range f {
			f[j] = byte(j)
		}
		if l >= 4 {
			binary.BigEndian.PutUint32(f, r.seq)
		}
		r.seq++
		descs = append(descs, packetio.Desc{Addr: a, Len: uint32(l)})
	}
	return descs
}

// post posts descs, tells the oracle, and returns the refused suffix to the
// pool.
func (r *txRig) post(descs []packetio.Desc) int {
	r.tb.Helper()
	n := r.ring.Post(descs)
	for _, d := range descs[:n] {
		r.oracle.give("Post", d)
	}
	r.fifo = append(r.fifo, descs[:n]...)
	for _, d := range descs[n:] {
		r.pool.Push(r.pool.Base(d.Addr))
	}
	return n
}

// complete runs Complete(max) and returns the frames to the pool.
func (r *txRig) complete(max int) int {
	r.tb.Helper()
	r.out = r.ring.Complete(max, r.out[:0])
	r.back += len(r.out)
	if fin := r.nic.Finished(); r.back > fin {
		r.tb.Fatalf("Complete: %d frames handed back before the device finished with them (it finished %d)", r.back-fin, fin)
	}
	for _, d := range r.out {
		if len(r.fifo) == 0 || r.fifo[0] != d {
			r.tb.Fatalf("Complete: handed back %+v out of order", d)
		}
		r.fifo = r.fifo[1:]
		r.oracle.take("Complete", d)
		if !r.pool.Push(r.pool.Base(d.Addr)) {
			r.tb.Fatalf("pool refused frame %#x back", d.Addr)
		}
	}
	return len(r.out)
}

func (r *txRig) poll() int {
	r.tb.Helper()
	n := r.nic.Poll()
	r.noViolations()
	return n
}

func (r *txRig) noViolations() {
	r.tb.Helper()
	if len(r.nic.Violations) > 0 {
		r.tb.Fatalf("the model saw violations: %q", r.nic.Violations)
	}
}

// settle drives the model and completions until the ring is empty.
func (r *txRig) settle() {
	r.tb.Helper()
	for i := 0; r.ring.InFlight() > 0; i++ {
		if i > 1000 {
			r.tb.Fatalf("ring does not drain: %d in flight", r.ring.InFlight())
		}
		r.poll()
		r.complete(1 << 20)
	}
}

// checkSent compares the model's packets with what was built.
func (r *txRig) checkSent(from int, lengths []int) {
	r.tb.Helper()
	for i, p := range r.nic.Packets[from:] {
		if len(p.Bytes) != lengths[i] {
			r.tb.Fatalf("packet %d is %d bytes, want %d", from+i, len(p.Bytes), lengths[i])
		}
		for j := 4; j < len(p.Bytes); j++ {
			if p.Bytes[j] != byte(j) {
				r.tb.Fatalf("packet %d byte %d is %#x", from+i, j, p.Bytes[j])
			}
		}
	}
}

type rxRig struct {
	tb     testing.TB
	rq, cq []byte
	wqRec  uint32
	cqRec  uint32
	region []byte
	ring   *Rx
	nic    *mocknic.RxNIC
	pool   *pool.Frames
	oracle *oracle
	frames []uint64
	out    []packetio.Desc
	ts     []uint64
}

type rxOpts struct {
	entries, cqEntries, frames, frameSize, headroom int
	cfg                                             RxConfig
}

func newRxRig(tb testing.TB, o rxOpts, f faults) *rxRig {
	tb.Helper()
	if o.entries == 0 {
		o.entries = 64
	}
	if o.cqEntries == 0 {
		o.cqEntries = o.entries
	}
	if o.frameSize == 0 {
		o.frameSize = 2048
	}
	if o.frames == 0 {
		o.frames = 2 * o.entries
	}
	r := &rxRig{
		tb:     tb,
		rq:     make([]byte, o.entries*wqe.RecvWQESize),
		cq:     make([]byte, o.cqEntries*wqe.CQESize),
		region: make([]byte, o.frames*o.frameSize),
	}
	cfg := o.cfg
	cfg.RQ, cfg.CQ, cfg.RQDbrec, cfg.CQDbrec = r.rq, r.cq, &r.wqRec, &r.cqRec
	cfg.LKey, cfg.Region, cfg.RegionVA, cfg.FrameSize, cfg.Headroom = testLKey, r.region, testVA, o.frameSize, o.headroom
	var err error
	if r.nic, err = mocknic.NewRx(mocknic.RxConfig{RQ: r.rq, CQ: r.cq, RQDbrec: &r.wqRec, CQDbrec: &r.cqRec,
		Region: r.region, RegionVA: testVA, LKey: testLKey}); err != nil {
		tb.Fatal(err)
	}
	if r.ring, err = NewRx(cfg); err != nil {
		tb.Fatal(err)
	}
	r.ring.fault = f
	if r.pool, err = pool.New(0, o.frames, o.frameSize); err != nil {
		tb.Fatal(err)
	}
	r.oracle = newOracle(tb, o.frames, o.frameSize)
	r.frames = make([]uint64, 0, o.frames)
	r.out = make([]packetio.Desc, 0, o.frames)
	r.ts = make([]uint64, 0, o.frames)
	return r
}

// fill posts up to n pool frames.
func (r *rxRig) fill(n int) int {
	r.tb.Helper()
	r.frames = r.pool.Pop(n, r.frames[:0])
	k := r.ring.Fill(r.frames)
	for _, a := range r.frames[:k] {
		r.oracle.give("Fill", packetio.Desc{Addr: a})
	}
	for _, a := range r.frames[k:] {
		r.pool.Push(a)
	}
	return k
}

// receive takes up to max packets, checks and returns every frame (good and
// failed) to the pool; it returns the good descriptors (valid until the next
// call).
func (r *rxRig) receive(max int, stamps bool) []packetio.Desc {
	r.tb.Helper()
	var ts []uint64
	if stamps {
		ts = r.ts[:0]
	}
	r.out, ts = r.ring.Receive(max, r.out[:0], ts)
	r.ts = ts
	good := len(r.out)
	r.out = r.ring.TakeFailed(r.out)
	for _, d := range r.out {
		r.oracle.take("Receive", d)
		if !r.pool.Push(r.pool.Base(d.Addr)) {
			r.tb.Fatalf("pool refused frame %#x", d.Addr)
		}
	}
	return r.out[:good]
}

func (r *rxRig) noViolations() {
	r.tb.Helper()
	if len(r.nic.Violations) > 0 {
		r.tb.Fatalf("the model saw violations: %q", r.nic.Violations)
	}
}

func frame(seq, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i * 7)
	}
	binary.BigEndian.PutUint32(p, uint32(seq))
	return p
}

// lcg is a small deterministic generator for the randomized tests.
type lcg uint64

func (l *lcg) intn(n int) int {
	*l = *l*6364136223846793005 + 1442695040888963407
	return int(uint64(*l>>33) % uint64(n))
}

// failRecorder is a testing.TB that records failures instead of ending the
// real test, so a test can assert that a scenario fails. Only the methods
// the scenarios use are implemented.
type failRecorder struct {
	testing.TB
	mu     sync.Mutex
	failed bool
	msgs   []string
}

func (f *failRecorder) Helper() {}
func (f *failRecorder) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = true
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}
func (f *failRecorder) Error(args ...any) { f.Errorf("%s", fmt.Sprint(args...)) }
func (f *failRecorder) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}
func (f *failRecorder) Fatal(args ...any)             { f.Fatalf("%s", fmt.Sprint(args...)) }
func (f *failRecorder) FailNow()                      { f.Fatalf("FailNow") }
func (f *failRecorder) Logf(string, ...any)           {}
func (f *failRecorder) Failed() bool                  { f.mu.Lock(); defer f.mu.Unlock(); return f.failed }
func (f *failRecorder) Skipf(format string, a ...any) { f.Fatalf("skipped: "+format, a...) }

// caught runs scenario on a recorder in its own goroutine and reports
// whether it failed, and how.
func caught(scenario func(testing.TB)) (bool, []string) {
	rec := &failRecorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		scenario(rec)
	}()
	<-done
	return rec.Failed(), rec.msgs
}
