package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/forward"
	"github.com/packetio/packetio/examples/internal/frame"
	"github.com/packetio/packetio/examples/internal/metrics"
	"github.com/packetio/packetio/examples/internal/testbed"
)

// errSkip marks a cell that cannot be measured here, for a reason that is
// not a failure (the backend lacks a capability, a tool is missing).
var errSkip = errors.New("skipped")

// running is a measured subject in motion: count is its running total of
// packets, stop ends it and reports the first error it met. A subject that
// only reports rates now and then (testpmd) gives rate instead of count:
// the rate over the window from and to, in Mpps.
type running struct {
	count func() uint64
	// offered is the feeder's running total, nil when nothing feeds.
	offered func() uint64
	rate    func(ctx context.Context, from, to time.Time) (float64, error)
	stop    func() error
}

// measure lets r run for warm, then counts its packets and the machine's
// CPU over window.
func measure(ctx context.Context, r running, warm, window time.Duration) (sample, error) {
	if err := sleep(ctx, warm); err != nil {
		return sample{}, err
	}
	a, err := metrics.ReadCPU()
	if err != nil {
		return sample{}, err
	}
	var c0, c1, o0, o1 uint64
	if r.count != nil {
		c0 = r.count()
	}
	if r.offered != nil {
		o0 = r.offered()
	}
	if err := sleep(ctx, window); err != nil {
		return sample{}, err
	}
	if r.count != nil {
		c1 = r.count()
	}
	if r.offered != nil {
		o1 = r.offered()
	}
	b, err := metrics.ReadCPU()
	if err != nil {
		return sample{}, err
	}
	s := sampleOf(c1-c0, a, b)
	s.offered = math.NaN()
	if r.offered != nil {
		s.offered = sampleOf(o1-o0, a, b).mpps
	}
	if r.rate != nil {
		if s.mpps, err = r.rate(ctx, a.When, b.When); err != nil {
			return sample{}, err
		}
	}
	return s, nil
}

// sampleOf is packets over the interval from a to b, and the CPU meanwhile.
func sampleOf(packets uint64, a, b metrics.Sample) sample {
	secs := b.When.Sub(a.When).Seconds()
	if secs <= 0 {
		return sample{}
	}
	u := metrics.Between(a, b)
	return sample{mpps: float64(packets) / secs / 1e6, cores: u.Cores, softirq: u.SoftIRQ}
}

// sleep waits d or until ctx ends, and says which.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// env is what every cell shares: the pair, the feeder, the frames.
type env struct {
	bed            *testbed.Bed
	feed           feeder
	macA, macB     net.HardwareAddr
	size           int // frame length without FCS
	flows, batch   int
	warmup, window time.Duration
}

// Where the traffic goes. Transmit goes to the peer's own address (its
// kernel drops it at the closed port); receive and forward traffic goes to
// 10.99.1.0/24, which nobody owns: the measured side's kernel drops what
// it is offered (it does not forward), and the router sends it on to the
// peer, whose kernel drops it too. The kernel baseline receives on a port
// of its own address.
var (
	routedNet           = "10.99.1.0/24"
	routedFirst         = netip.MustParseAddr("10.99.1.1")
	baselinePort uint16 = 9000
	discardPort  uint16 = 9
)

// packetioTarget is what the feeder aims at for receive and forward.
func (e *env) packetioTarget() target {
	return target{dstMAC: e.macA, dstIP: routedFirst, dstPort: discardPort, spread: true}
}

// openBackend opens name on side A with q queues each way as the loop
// needs them. dpdk over a kernel interface is net_af_packet with one queue
// pair per queue.
func (e *env) openBackend(name string, txq, rxq int) (packetio.Device, error) {
	d, err := e.bed.Open(func(iface string) (packetio.Device, error) {
		dev := iface
		if name == "dpdk" {
			dev = fmt.Sprintf("net_af_packet0,iface=%s,qpairs=%d", iface, max(txq, rxq, 1))
		}
		return backend.Open(name, dev, backend.Config{TxQueues: txq, RxQueues: rxq})
	})
	if err != nil {
		return nil, fmt.Errorf("open %s on %s: %w", name, e.bed.Name, err)
	}
	return d, nil
}

// startPacketio starts one packetio loop on backend name with q queues.
func (e *env) startPacketio(ctx context.Context, name, loop string, q int) (running, error) {
	switch loop {
	case loopTx:
		return e.startTx(ctx, name, q)
	case loopRx:
		return e.startRx(ctx, name, q)
	case loopFwd:
		return e.startFwd(ctx, name, q)
	}
	return running{}, fmt.Errorf("unknown loop %q", loop)
}

// group runs one worker per queue and gathers their first error.
type group struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
}

func (g *group) goQueue(ctx context.Context, q int, fn func(context.Context) error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := fn(ctx); err != nil {
			g.mu.Lock()
			if g.err == nil {
				g.err = fmt.Errorf("queue %d: %w", q, err)
			}
			g.mu.Unlock()
		}
	}()
}

func (g *group) wait() error {
	g.cancel()
	g.wg.Wait()
	return g.err
}

func (e *env) startTx(ctx context.Context, name string, q int) (running, error) {
	d, err := e.openBackend(name, q, 0)
	if err != nil {
		return running{}, err
	}
	spec := frame.Spec{SrcMAC: e.macA, DstMAC: e.macB, SrcIP: testbed.AddrA.Addr(), DstIP: testbed.AddrB.Addr(), SrcPort: 1024, DstPort: discardPort, Size: e.size}
	if err := spec.Check(); err != nil {
		d.Close()
		return running{}, err
	}
	tmpl := make([]byte, spec.Len())
	frame.Build(tmpl, spec)
	l4 := spec.HeaderLen() - 8
	var total atomic.Uint64
	ctx, cancel := context.WithCancel(ctx)
	g := &group{cancel: cancel}
	for i := 0; i < d.NumTxQueues(); i++ {
		tx := d.TxQueue(i)
		g.goQueue(ctx, i, func(ctx context.Context) error {
			flow := i * 7
			build := func(j int, b []byte) int {
				n := copy(b, tmpl)
				if n < len(tmpl) {
					return 0
				}
				setFlow(b, l4, (flow+j)%e.flows, false)
				return n
			}
			for ctx.Err() == nil {
				n, err := tx.SendFunc(e.batch, build)
				if err != nil {
					return err
				}
				if n == 0 {
					if err := tx.Err(); err != nil {
						return err
					}
					time.Sleep(20 * time.Microsecond)
				}
				flow += n
				total.Add(uint64(n))
			}
			return nil
		})
	}
	return running{count: total.Load, stop: func() error { err := g.wait(); d.Close(); return err }}, nil
}

func (e *env) startRx(ctx context.Context, name string, q int) (running, error) {
	d, err := e.openBackend(name, 1, q)
	if err != nil {
		return running{}, err
	}
	var total atomic.Uint64
	ctx, cancel := context.WithCancel(ctx)
	g := &group{cancel: cancel}
	for i := 0; i < d.NumRxQueues(); i++ {
		rx := d.RxQueue(i)
		g.goQueue(ctx, i, func(ctx context.Context) error {
			rx.Fill(rx.NumFreeFillSlots())
			for ctx.Err() == nil {
				if _, err := rx.Poll(50 * time.Millisecond); err != nil {
					return err
				}
				descs := rx.Receive(e.batch)
				rx.Recycle(descs)
				rx.Fill(rx.NumFreeFillSlots())
				total.Add(uint64(len(descs)))
			}
			return nil
		})
	}
	fd, err := e.feed.start(ctx, e.packetioTarget())
	if err != nil {
		g.wait()
		d.Close()
		return running{}, err
	}
	return running{count: total.Load, offered: fd.sent, stop: func() error { fd.stop(); err := g.wait(); d.Close(); return err }}, nil
}

func (e *env) startFwd(ctx context.Context, name string, q int) (running, error) {
	d, err := e.openBackend(name, q, q)
	if err != nil {
		return running{}, err
	}
	if c := d.Capabilities(); !c.HandsBackFrames || !c.SharedRegion {
		d.Close()
		return running{}, fmt.Errorf("%w: %s cannot forward in place (HandsBackFrames %v, SharedRegion %v)", errSkip, name, c.HandsBackFrames, c.SharedRegion)
	}
	var fib forward.FIB
	p, h, err := forward.ParseRoute(routedNet+","+e.macB.String(), e.macA)
	if err == nil {
		err = fib.Add(p, h)
	}
	if err != nil {
		d.Close()
		return running{}, fmt.Errorf("route: %w", err)
	}
	n := min(d.NumRxQueues(), d.NumTxQueues())
	var total atomic.Uint64
	ctx, cancel := context.WithCancel(ctx)
	g := &group{cancel: cancel}
	for i := 0; i < n; i++ {
		rx, tx := d.RxQueue(i), d.TxQueue(i)
		g.goQueue(ctx, i, func(ctx context.Context) error { return route(ctx, rx, tx, &fib, e.batch, &total) })
	}
	fd, err := e.feed.start(ctx, e.packetioTarget())
	if err != nil {
		g.wait()
		d.Close()
		return running{}, err
	}
	return running{count: total.Load, offered: fd.sent, stop: func() error { fd.stop(); err := g.wait(); d.Close(); return err }}, nil
}

// route is the forwarding loop of one queue pair: receive, rewrite in
// place, Transmit, and take the frames home with Reclaim and Recycle. It
// counts the frames the transmit ring took.
func route(ctx context.Context, rx packetio.RxQueue, tx packetio.TxQueue, fib *forward.FIB, batch int, total *atomic.Uint64) error {
	rx.Fill(rx.NumFreeFillSlots())
	keep := make([]packetio.Desc, 0, batch)
	back := make([]packetio.Desc, 0, 4096)
	for ctx.Err() == nil {
		if _, err := rx.Poll(50 * time.Millisecond); err != nil {
			return err
		}
		descs := rx.Receive(batch)
		keep = keep[:0]
		for _, desc := range descs {
			if fib.Forward(rx.Region().Frame(desc), desc.Options&packetio.OptL3ChecksumOK != 0) == forward.Forwarded {
				keep = append(keep, desc)
			} else {
				rx.Recycle([]packetio.Desc{desc})
			}
		}
		sent := tx.Transmit(keep)
		rx.Recycle(keep[sent:]) // the ring was full: drop, but keep the frames
		back = tx.Reclaim(1<<20, back[:0])
		rx.Recycle(back)
		rx.Fill(rx.NumFreeFillSlots())
		total.Add(uint64(sent))
	}
	// Bring the frames home before the device closes.
	for i := 0; i < 200 && tx.NumInFlight() > 0; i++ {
		back = tx.Reclaim(1<<20, back[:0])
		rx.Recycle(back)
		time.Sleep(time.Millisecond)
	}
	return nil
}

// packetioNote describes a backend's column for the notes under the table.
func packetioNote(name string) string {
	switch name {
	case "afpacket":
		return "afpacket: TPACKET_V3 receive rings joined in a PACKET_FANOUT_HASH group, transmit rings with PACKET_QDISC_BYPASS; the kernel copies every frame"
	case "dpdk":
		return "dpdk: the packetio dpdk backend over DPDK's net_af_packet PMD (qpairs = queues) on the same veth; it copies every frame too"
	}
	return strings.TrimSpace(name)
}
