package packetiotest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/testenv"
)

// Option adds to what Run can check.
type Option func(*options)

type options struct {
	peer     OpenFunc
	loopback bool
	noLink   string
}

// WithPeer names the device at the other end of the link: frames its
// TxQueue(0) sends reach the device under test, and frames the device under
// test sends reach the peer's receive queues. With a peer Run also checks
// traffic: frames arrive byte for byte, receive batches are counted,
// forwarding conserves frames, and Close works under load.
func WithPeer(open OpenFunc) Option { return func(o *options) { o.peer = open } }

// WithLoopback says the device's own transmit queues reach its own receive
// queues, so it can be its own peer.
func WithLoopback() Option { return func(o *options) { o.loopback = true } }

// WithoutLink says the device has no link at all (a null device: what it
// sends vanishes, what it receives is invented), so the traffic checks do not
// apply to it. They say so, with reason, and skip; the bookkeeping checks run
// as on any device.
func WithoutLink(reason string) Option { return func(o *options) { o.noLink = reason } }

// testFrame writes frame number seq of n bytes: a broadcast Ethernet header
// with EtherType, then a header naming seq and n, then bytes derived from
// both, so a frame that arrives can be checked byte for byte.
func testFrame(frame []byte, seq uint32, n int) int {
	if n > len(frame) || n < 60 {
		return 0
	}
	b := frame[:n]
	copy(b[0:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(b[6:12], []byte{0x02, 0x70, 0x69, 0x6f, 0x00, 0x01})
	binary.BigEndian.PutUint16(b[12:], EtherType)
	copy(b[14:18], "PIOC")
	binary.BigEndian.PutUint32(b[18:], seq)
	binary.BigEndian.PutUint16(b[22:], uint16(n))
	for i := 24; i < n; i++ {
		b[i] = byte(uint32(i)*7 + seq)
	}
	return n
}

// parseTestFrame returns the sequence number of a test frame and whether the
// frame is one of ours and intact.
func parseTestFrame(b []byte) (seq uint32, ours, intact bool) {
	if len(b) < 24 || binary.BigEndian.Uint16(b[12:]) != EtherType || string(b[14:18]) != "PIOC" {
		return 0, false, false
	}
	seq = binary.BigEndian.Uint32(b[18:])
	n := int(binary.BigEndian.Uint16(b[22:]))
	if n != len(b) {
		return seq, true, false
	}
	var want [2048]byte
	if n > len(want) {
		return seq, true, false
	}
	testFrame(want[:], seq, n)
	return seq, true, bytes.Equal(want[:n], b)
}

// sizeFor spreads test frame sizes from 60 bytes up to limit.
func sizeFor(seq uint32, limit int) int {
	sizes := [...]int{60, 64, 128, 333, 512, 1024, 1500, 1514}
	n := sizes[seq%uint32(len(sizes))]
	if n > limit {
		n = limit
	}
	return n
}

// sender is the queue that reaches the device under test.
func (o *options) sender(t *testing.T, d Device) (packetio.TxQueue, Device) {
	t.Helper()
	if o.loopback {
		return d.TxQueue(0), d
	}
	if o.peer == nil {
		testenv.CannotRun(t, "%s: no peer device given (packetiotest.WithPeer), so no traffic can reach it", d.Capabilities().Backend)
		return nil, nil
	}
	p := o.peer(t)
	if p == nil {
		cannotOpen(t)
		return nil, nil
	}
	t.Cleanup(func() { p.Close() })
	if p.NumTxQueues() == 0 {
		t.Fatal("the peer device has no transmit queue")
	}
	return p.TxQueue(0), p
}

// link returns the sender that reaches d, its device, and the largest test
// frame both ends carry. It returns a nil queue when the check cannot run.
func (o *options) link(t *testing.T, d Device) (packetio.TxQueue, Device, int) {
	t.Helper()
	needRx(t, d)
	q, p := o.sender(t, d)
	if q == nil {
		return nil, nil, 0
	}
	return q, p, min(d.Capabilities().MaxFrameSize, p.Capabilities().MaxFrameSize, 1514)
}

// send transmits frames first..first+count-1 on q, waiting out backpressure
// for up to 5 s, and returns how many went.
func send(q packetio.TxQueue, first, count uint32, limit int) int {
	sent := 0
	deadline := time.Now().Add(5 * time.Second)
	for sent < int(count) && time.Now().Before(deadline) {
		q.Complete(1 << 20)
		n, err := q.SendFunc(int(count)-sent, func(i int, frame []byte) int {
			seq := first + uint32(sent+i)
			return testFrame(frame, seq, sizeFor(seq, min(limit, len(frame))))
		})
		sent += n
		if err != nil {
			break
		}
		if n == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	return sent
}

// rxAll drives every receive queue of d from one goroutine.
type rxAll struct {
	d    Device
	next int
}

func (r *rxAll) fill() {
	for i := 0; i < r.d.NumRxQueues(); i++ {
		q := r.d.RxQueue(i)
		q.Fill(q.NumFreeFillSlots())
	}
}

// receive waits up to timeout for packets on any queue and calls fn with
// each, then recycles and refills. It returns the queue they came from.
func (r *rxAll) receive(timeout time.Duration, fn func(q packetio.RxQueue, d packetio.Desc)) {
	nq := r.d.NumRxQueues()
	step := timeout / time.Duration(nq)
	for k := 0; k < nq; k++ {
		q := r.d.RxQueue((r.next + k) % nq)
		n, err := q.Poll(step)
		if err != nil || n == 0 {
			continue
		}
		descs := q.Receive(256)
		for _, d := range descs {
			fn(q, d)
		}
		q.Recycle(descs)
		q.Fill(q.NumFreeFillSlots())
		r.next = (r.next + k + 1) % nq
		return
	}
}

func needRx(t *testing.T, d Device) {
	t.Helper()
	if d.NumRxQueues() == 0 {
		t.Fatalf("%s: traffic checks need receive queues; open the device with one", d.Capabilities().Backend)
	}
}

func runTraffic(t *testing.T, open OpenFunc, o *options) {
	if o.noLink != "" {
		t.Run("TrafficChecks", func(t *testing.T) {
			t.Skipf("does not apply: the device has no link (%s)", o.noLink)
		})
		return
	}
	for _, c := range trafficChecks {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open, o) })
	}
}

// trafficChecks are Run's checks that need a sender, in the order it runs
// them.
var trafficChecks = [...]struct {
	name string
	fn   func(*testing.T, OpenFunc, *options)
}{
	{"TrafficArrivesIntact", trafficArrivesIntact},
	{"ReceiveStatsCountBatches", receiveBatchesAreCounted},
	{"ForwardingConservesFrames", forwardingConservesFrames},
	{"CloseUnderLoad", closeUnderLoad},
}

func trafficArrivesIntact(t *testing.T, open OpenFunc, o *options) {
	d := device(t, open)
	q, _, limit := o.link(t, d)
	if q == nil {
		return
	}
	r := &rxAll{d: d}
	r.fill()
	const count = 200
	got := make(map[uint32]bool)
	bad := 0
	sent := 0
	deadline := time.Now().Add(10 * time.Second)
	for (sent < count || len(got) < sent) && time.Now().Before(deadline) {
		if sent < count {
			// Small bursts, so a kernel ring never overflows.
			sent += send(q, uint32(sent), uint32(min(16, count-sent)), limit)
		}
		r.receive(20*time.Millisecond, func(rq packetio.RxQueue, desc packetio.Desc) {
			seq, ours, intact := parseTestFrame(rq.Region().Frame(desc))
			if !ours {
				return
			}
			if !intact {
				bad++
				if bad <= 3 {
					t.Errorf("frame %d arrived damaged: % x", seq, rq.Region().Frame(desc))
				}
				return
			}
			if got[seq] {
				t.Errorf("frame %d arrived twice", seq)
			}
			got[seq] = true
		})
	}
	if sent != count {
		t.Fatalf("the sender put %d of %d frames on the link", sent, count)
	}
	if len(got) != count || bad != 0 {
		t.Fatalf("%d of %d frames arrived intact, %d damaged", len(got), count, bad)
	}
}

func receiveBatchesAreCounted(t *testing.T, open OpenFunc, o *options) {
	d := device(t, open)
	q, _, limit := o.link(t, d)
	if q == nil {
		return
	}
	before := rxTotals(t, d)
	r := &rxAll{d: d}
	r.fill()
	seen := 0
	for round := 0; round < 50 && seen < 400; round++ {
		send(q, uint32(round*16), 16, limit)
		for i := 0; i < 4; i++ {
			r.receive(10*time.Millisecond, func(packetio.RxQueue, packetio.Desc) { seen++ })
		}
	}
	after := rxTotals(t, d)
	pkts, batches := after.Packets-before.Packets, after.Batches-before.Batches
	if seen == 0 {
		t.Fatal("no packet arrived")
	}
	if pkts != uint64(seen) {
		t.Errorf("RxStats.Packets moved by %d, Receive returned %d", pkts, seen)
	}
	if batches == 0 || batches > pkts {
		t.Errorf("%d packets counted in %d batches", pkts, batches)
	}
	if after.Polls == before.Polls {
		t.Error("RxStats.Polls did not move")
	}
}

func rxTotals(t *testing.T, d Device) packetio.RxStats {
	t.Helper()
	var sum packetio.RxStats
	for i := 0; i < d.NumRxQueues(); i++ {
		s, err := d.RxQueue(i).Stats()
		if err != nil {
			t.Fatalf("rx %d Stats: %v", i, err)
		}
		sum.Packets += s.Packets
		sum.Batches += s.Batches
		sum.Polls += s.Polls
	}
	return sum
}

// forwardingConservesFrames runs Receive -> rewrite -> Transmit -> Reclaim ->
// Recycle for many rounds and checks every frame came home: the receive pool
// and the transmit pool end as they started, and nothing was refused.
func forwardingConservesFrames(t *testing.T, open OpenFunc, o *options) {
	d := device(t, open)
	c := d.Capabilities()
	if !c.HandsBackFrames || !c.SharedRegion {
		t.Skipf("%s: forwarding in place needs HandsBackFrames and SharedRegion (have %v, %v)", c.Backend, c.HandsBackFrames, c.SharedRegion)
	}
	q, p, limit := o.link(t, d)
	if q == nil {
		return
	}
	tx := d.TxQueue(0)
	r := &rxAll{d: d}
	r.fill()
	if p == d {
		// A loopback device is its own sender: put the frames on the
		// link first and take the sender's frames home, so the transmit
		// queue carries only forwarded frames from here on.
		send(q, 0, 128, limit)
		settle(q)
	}
	txFree := tx.NumFreeFrames()
	rxFree := make([]int, d.NumRxQueues())
	for i := range rxFree {
		rxFree[i] = d.RxQueue(i).NumFreeFrames()
	}

	var peerRx *rxAll
	if p != d && p.NumRxQueues() > 0 {
		peerRx = &rxAll{d: p}
		peerRx.fill()
	}
	forwarded, arrived := 0, 0
	back := make([]packetio.Desc, 0, 1024)
	fwd := make([]packetio.Desc, 0, 256)
	for round := 0; round < 64; round++ {
		if p != d {
			send(q, uint32(round*16), 16, limit)
		}
		for i := 0; i < d.NumRxQueues(); i++ {
			rq := d.RxQueue(i)
			if n, _ := rq.Poll(10 * time.Millisecond); n == 0 {
				continue
			}
			fwd = append(fwd[:0], rq.Receive(256)...)
			for _, desc := range fwd {
				f := rq.Region().Frame(desc)
				copy(f[6:12], []byte{0x02, 0x70, 0x69, 0x6f, 0x00, 0x02}) // rewrite in place
			}
			sent := 0
			for k := 0; k < 100 && sent < len(fwd); k++ {
				sent += tx.Transmit(fwd[sent:])
				if sent < len(fwd) {
					time.Sleep(time.Millisecond)
				}
			}
			forwarded += sent
			rq.Recycle(fwd[sent:]) // what the ring never took goes home too
			// Every frame goes back to the queue it came from: wait for
			// the transmit ring to hand them all back.
			for k := 0; k < 500; k++ {
				back = tx.Reclaim(1<<20, back[:0])
				rq.Recycle(back)
				if tx.NumInFlight() == 0 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			rq.Fill(rq.NumFreeFillSlots())
		}
		if peerRx != nil {
			peerRx.receive(time.Millisecond, func(pq packetio.RxQueue, desc packetio.Desc) {
				if b := pq.Region().Frame(desc); len(b) > 12 && b[11] == 0x02 {
					arrived++
				}
			})
		}
	}
	if p == d {
		// Looped frames keep arriving; drain them without forwarding.
		for i := 0; i < 20; i++ {
			r.receive(5*time.Millisecond, func(packetio.RxQueue, packetio.Desc) {})
		}
	}
	if forwarded == 0 {
		t.Fatal("nothing was forwarded")
	}
	if n := tx.NumInFlight(); n != 0 {
		t.Fatalf("%d forwarded frames never came back from the transmit ring", n)
	}
	if got := tx.NumFreeFrames(); got != txFree {
		t.Errorf("transmit pool %d -> %d frames: forwarded frames leaked into it", txFree, got)
	}
	for i := range rxFree {
		rq := d.RxQueue(i)
		rq.Fill(rq.NumFreeFillSlots())
		if got := rq.NumFreeFrames(); got != rxFree[i] {
			t.Errorf("receive queue %d pool %d -> %d frames after %d forwarded", i, rxFree[i], got, forwarded)
		}
	}
	if peerRx != nil && arrived == 0 {
		t.Errorf("%d frames forwarded, none reached the peer", forwarded)
	}
	t.Logf("forwarded %d frames in place, %d seen at the peer", forwarded, arrived)
}

// closeUnderLoad closes the device while traffic arrives, frames are in
// flight and a goroutine waits in Poll.
func closeUnderLoad(t *testing.T, open OpenFunc, o *options) {
	d := device(t, open)
	q, p, limit := o.link(t, d)
	if q == nil {
		return
	}
	r := &rxAll{d: d}
	r.fill()
	stopFlood := make(chan struct{})
	flooded := make(chan struct{})
	if p != d {
		go func() {
			defer close(flooded)
			for seq := uint32(0); ; seq += 32 {
				select {
				case <-stopFlood:
					return
				default:
				}
				q.Complete(1 << 20)
				q.SendFunc(32, func(i int, frame []byte) int {
					return testFrame(frame, seq+uint32(i), min(60, len(frame)))
				})
			}
		}()
	} else {
		close(flooded)
	}
	defer func() { close(stopFlood); <-flooded }()
	d.TxQueue(0).SendFunc(32, func(i int, frame []byte) int { return testFrame(frame, uint32(i), min(limit, 60)) })
	rx := d.RxQueue(0)
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := rx.Poll(time.Second); err != nil {
				done <- err
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond)
	if err := d.Close(); err != nil {
		t.Fatalf("Close under load: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, packetio.ErrClosed) {
			t.Fatalf("Poll ended by Close under load with %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close under load did not wake the poller within 5s")
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
