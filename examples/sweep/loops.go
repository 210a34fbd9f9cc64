package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/cpus"
	"github.com/packetio/packetio/examples/internal/forward"
	"github.com/packetio/packetio/examples/internal/frame"
	"github.com/packetio/packetio/examples/internal/metrics"
	"github.com/packetio/packetio/examples/internal/testbed"
	"github.com/packetio/packetio/internal/spinwait"
	"github.com/packetio/packetio/internal/trafficgen"
)

// errSkip marks a cell that cannot be measured here, for a reason that is
// not a failure (the backend lacks a capability, a tool is missing).
var errSkip = errors.New("skipped")

// reading is a running total of packets and when it was taken, in
// seconds on CLOCK_MONOTONIC (a tool that reports its own counts stamps
// them itself, so the window is its own and not when its line arrived).
type reading struct {
	n  uint64
	at float64
}

// monoNow is CLOCK_MONOTONIC in seconds.
func monoNow() float64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return math.NaN()
	}
	return float64(ts.Sec) + float64(ts.Nsec)/1e9
}

// running is a measured subject in motion: count reads its running total
// of packets (for testpmd, by asking it), stop ends it and reports the
// first error it met.
type running struct {
	count func() (reading, error)
	// offered is the feeder's running total, nil when nothing feeds.
	offered func() uint64
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
	var o0, o1 uint64
	c0, err := r.count()
	if err != nil {
		return sample{}, err
	}
	if r.offered != nil {
		o0 = r.offered()
	}
	if err := sleep(ctx, window); err != nil {
		return sample{}, err
	}
	c1, err := r.count()
	if err != nil {
		return sample{}, err
	}
	if r.offered != nil {
		o1 = r.offered()
	}
	b, err := metrics.ReadCPU()
	if err != nil {
		return sample{}, err
	}
	s := sampleOf(c1.n-c0.n, a, b)
	if secs := c1.at - c0.at; secs > 0 && c1.n >= c0.n {
		s.mpps = float64(c1.n-c0.n) / secs / 1e6
	}
	s.offered = math.NaN()
	if r.offered != nil {
		s.offered = sampleOf(o1-o0, a, b).mpps
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

// rig is one veth pair with as many queues as the rows it serves, and its
// feeder.
type rig struct {
	queues     int
	jumbo      bool // an MTU of 9000: its cells open with multi-buffer
	bed        *testbed.Bed
	macA, macB net.HardwareAddr
	feed       feeder
}

// env is what every cell shares: the rigs, the frames, the placement.
type env struct {
	feeder         string // feederLive or feederAfpacket
	rewrite        string // rewriteRoute or rewriteMAC
	steer          string // steerFilter or steerAll
	write          string // writeFrame or writeHeaders
	sysmon         string // sysmonAnywhere or sysmonFeeder
	frames         int    // WithFrames for packetio's backends; 0: their defaults
	size           int    // the cell's frame length without FCS (runCell sets it)
	flows, batch   int
	warmup, window time.Duration
	cpus           []int // the CPUs this process may use, in order
	log            io.Writer

	rigs map[rigKey]*rig
	// vdevs numbers the DPDK af_xdp devices opened, each under a name of
	// its own (one EAL serves the whole process).
	vdevs int
}

// rigKey names a rig: its queue count and whether it is the jumbo pair.
type rigKey struct {
	queues int
	jumbo  bool
}

// rig returns the pair for rows of q queues, the jumbo one (an MTU of
// 9000, fed by afpacket whatever -feeder says) for jumbo cells, making it
// (and its feeder) the first time.
func (e *env) rig(q int, jumbo bool) (*rig, error) {
	key := rigKey{q, jumbo}
	if r, ok := e.rigs[key]; ok {
		return r, nil
	}
	opts := []testbed.Option{testbed.WithQueues(q)}
	if jumbo {
		opts = append(opts, testbed.WithMTU(jumboMTU))
	}
	bed, err := testbed.Setup("", e.log, opts...)
	if err != nil {
		return nil, fmt.Errorf("testbed: %w", err)
	}
	r := &rig{queues: q, jumbo: jumbo, bed: bed}
	fail := func(err error) (*rig, error) {
		if r.feed != nil {
			r.feed.close()
		}
		bed.Close()
		return nil, err
	}
	if r.macA, err = bed.MAC(); err != nil {
		return fail(err)
	}
	if r.macB, err = bed.PeerMAC(); err != nil {
		return fail(err)
	}
	if err := addSink(bed); err != nil {
		return fail(err)
	}
	gens := make([]int, q)
	for i := range gens {
		gens[i] = e.feederCPU(i)
	}
	var refused error // the kernel's refusal of live frames
	if e.feeder == feederLive && !jumbo {
		if err := bed.InPeer(func() error { refused = trafficgen.Probe(); return nil }); err != nil {
			return fail(err)
		}
	}
	switch {
	case e.feeder == feederAfpacket || jumbo || (refused != nil && len(gens) > 1):
		// Circuits on every CPU would leave the processes measured
		// too little of the machine (trafficgen.Circuit).
		a, err := newAfpacketFeeder(bed, r.macB, e.flows, gens, jumbo)
		if err != nil {
			return fail(err)
		}
		if refused != nil {
			a.instead = refused
			fmt.Fprintf(e.log, "sweep: -feeder live cannot run here for %d queues (%v): the afpacket feeder feeds instead, and the table says so\n", len(gens), refused)
		}
		r.feed = a
	default:
		f, err := startFeederProc(bed, r.macB, e.flows, gens, e.feederKeepsOff(q), refused)
		if err != nil {
			return fail(err)
		}
		if refused != nil {
			fmt.Fprintf(e.log, "sweep: this kernel refuses live frames (%v): an in-kernel circuit feeds instead (trafficgen.Circuit), and the table says so\n", refused)
		}
		r.feed = f
	}
	if e.rigs == nil {
		e.rigs = map[rigKey]*rig{}
	}
	e.rigs[key] = r
	return r, nil
}

// close releases every rig: feeders first, then the pairs (which puts
// back every setting changed on them).
func (e *env) close() error {
	var errs []error
	for _, r := range e.rigs {
		if err := r.feed.close(); err != nil {
			errs = append(errs, err)
		}
		if err := r.bed.Close(); err != nil {
			errs = append(errs, fmt.Errorf("testbed: %w", err))
		}
	}
	e.rigs = nil
	return errors.Join(errs...)
}

// Placement, the same for every column: the worker of queue q runs on CPU
// q+1 and the feeder's generator i on CPU i (modulo the CPUs there are), so
// with one queue the loop under test and the feeder (with the kernel's
// receive work it triggers, in softirq on its CPU) each have a core.
func (e *env) workerCPU(q int) int { return e.cpus[(q+1)%len(e.cpus)] }
func (e *env) feederCPU(i int) int { return e.cpus[i%len(e.cpus)] }

// loopCPUs lists the CPUs of the loops in rows of q queues, each once.
func (e *env) loopCPUs(q int) []int {
	var cpus []int
	for i := range q {
		if c := e.workerCPU(i); !slices.Contains(cpus, c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// feederKeepsOff lists the CPUs the live feeder's process keeps its
// threads off in rows of q queues: the loops' that none of its generators
// use (none, where the loops and the generators share every CPU).
func (e *env) feederKeepsOff(q int) []int {
	gens := make([]int, q)
	for i := range gens {
		gens[i] = e.feederCPU(i)
	}
	return slices.DeleteFunc(e.loopCPUs(q), func(c int) bool { return slices.Contains(gens, c) })
}

// allowedCPUs lists the CPUs this process may run on.
func allowedCPUs() []int {
	var set unix.CPUSet
	var cpus []int
	if unix.SchedGetaffinity(0, &set) == nil {
		for c := 0; c < 1024; c++ {
			if set.IsSet(c) {
				cpus = append(cpus, c)
			}
		}
	}
	if len(cpus) == 0 {
		for c := 0; c < runtime.NumCPU(); c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// Where the traffic goes. Everything the measured side sends (transmit,
// and forward's next hop) goes to the sink, an address on the link with a
// MAC nobody owns (a static neighbour entry in the measured namespace): the
// peer's kernel drops each frame at its first look (not for its MAC), so
// on a veth, where the receiving kernel's work is done on the sender's CPU,
// what is measured is the sender and not the peer's IP stack. Receive and
// forward traffic goes to 10.99.1.0/24, which nobody owns: the measured
// side's kernel drops what it is offered (it does not forward), and the
// router sends it on to the sink. The kernel baseline receives on a port
// of its own address.
var (
	routedNet           = netip.MustParsePrefix("10.99.1.0/24")
	routedFirst         = netip.MustParseAddr("10.99.1.1")
	sinkIP              = netip.MustParseAddr("10.99.0.3")
	sinkMAC             = net.HardwareAddr{0x02, 0x70, 0x69, 0x6f, 0x00, 0x99}
	baselinePort uint16 = 9000
	discardPort  uint16 = 9
)

// addSink makes the sink a permanent neighbour of the measured end, so the
// kernel baseline sends to it without asking (ARP). It goes with the
// namespace; a link that went down (testpmd takes it down and up) loses it,
// so every cell sets it again.
func addSink(bed *testbed.Bed) error {
	err := bed.In(func() error {
		h, err := netlink.NewHandle()
		if err != nil {
			return err
		}
		defer h.Close()
		l, err := h.LinkByName(bed.Name)
		if err != nil {
			return err
		}
		return h.NeighSet(&netlink.Neigh{LinkIndex: l.Attrs().Index, Family: unix.AF_INET, State: netlink.NUD_PERMANENT,
			IP: sinkIP.AsSlice(), HardwareAddr: sinkMAC})
	})
	if err != nil {
		return fmt.Errorf("sink neighbour %s on %s: %w", sinkIP, bed.Name, err)
	}
	return nil
}

// packetioTarget is what the feeder aims at for receive and forward, in
// frames of size bytes (without FCS).
func (r *rig) packetioTarget(size int) target {
	return target{dstMAC: r.macA, dstIP: routedFirst, dstPort: discardPort, spread: true, size: size}
}

// What a backend that steers takes in the receive and forward loops
// (-steer).
const (
	steerFilter = "filter" // feedFilter(): exactly the feeder's traffic
	steerAll    = "all"    // every frame of the queue, as the C reference and testpmd take
)

var steers = []string{steerFilter, steerAll}

// Where the Go runtime's sysmon thread may run while a cell is measured
// (-sysmon).
const (
	sysmonAnywhere = "anywhere" // where the kernel puts it
	sysmonFeeder   = "feeder"   // off the loops' CPUs (host.KeepSysmonOff)
)

var sysmons = []string{sysmonAnywhere, sysmonFeeder}

// feedFilter is what a backend that steers takes in the receive and
// forward loops under -steer filter: exactly the feeder's traffic, nothing
// else from the kernel.
func feedFilter() packetio.SteeringFilter {
	return packetio.SteeringFilter{Match: append([]packetio.Match{packetio.MatchDstIP(routedNet)},
		packetio.MatchDstPort(packetio.IPProtoUDP, discardPort)...)}
}

// steering is what a backend that steers takes in the receive and forward
// loops: the feeder's traffic (-steer filter) or every frame of the queue
// (-steer all: Promiscuous, not the zero filter, which takes only what is
// addressed to the interface).
func (e *env) steering() packetio.SteeringFilter {
	if e.steer == steerAll {
		return packetio.SteeringFilter{Promiscuous: true}
	}
	return feedFilter()
}

// config is how openBackend opens column's backend: txq and rxq queues,
// busy polling for its busy-polling column, multi-buffer and larger frames
// for jumbo frames, and e.steering() where there is a receive queue.
func (e *env) config(jumbo bool, column string, txq, rxq int) backend.Config {
	name := backendOf(column)
	c := backend.Config{TxQueues: txq, RxQueues: rxq, Frames: e.frames, BusyPoll: column == colAfxdpBusy, MultiBuffer: jumbo}
	switch {
	case jumbo && name == "afxdp":
		c.FrameSize = jumboFrameSize
	case jumbo && name == "afpacket" && rxq == 0:
		// Transmit only: one 16 KiB TX ring slot a packet beats a chain
		// of 2 KiB frames over sendmmsg (see jumboRingFrameSize).
		c.MultiBuffer, c.FrameSize = false, jumboRingFrameSize
	}
	if rxq > 0 {
		c.Steering = backend.Steering(name, e.steering())
	}
	return c
}

// openBackend opens column's backend on side A of r with txq and rxq
// queues, laid out for forwarding when forwards (backend.Config.Forwards);
// workers are placed by the sweep, never by the backend.
func (e *env) openBackend(r *rig, column string, txq, rxq int, forwards bool) (packetio.Device, error) {
	c := e.config(r.jumbo, column, txq, rxq)
	c.Forwards = forwards
	vdev := ""
	if column == colDpdkXDP {
		vdev = fmt.Sprintf("net_af_xdp%d,iface=%s,start_queue=0,queue_count=%d", e.vdevs, r.bed.Name, max(txq, rxq, 1))
		e.vdevs++
	}
	var d packetio.Device
	err := retryBusy(func() (err error) {
		d, err = r.bed.Open(func(iface string) (packetio.Device, error) {
			if vdev != "" {
				iface = vdev
			}
			return backend.Open(backendOf(column), iface, c)
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open %s on %s: %w", column, r.bed.Name, err)
	}
	return d, nil
}

// takeFeed makes the measured end able to take what the feeder sends, for
// a receiver: nothing to do for a packet-socket feeder, or for a receiver
// that runs a native XDP program itself (afxdp in native mode); GRO on for
// every other (d is nil for the kernel and testpmd). It returns what puts
// the interface back.
func (e *env) takeFeed(r *rig, d packetio.Device) (restore func() error, err error) {
	if !r.feed.needsNAPI() {
		return func() error { return nil }, nil
	}
	if x, ok := d.(*afxdp.Device); ok && x.Info().Mode == "native" {
		return func() error { return nil }, nil
	}
	return r.bed.GRO(true)
}

// startPacketio starts one packetio loop of column with r's queues.
func (e *env) startPacketio(ctx context.Context, r *rig, name, loop string) (running, error) {
	switch loop {
	case loopTx:
		return e.startTx(ctx, r, name)
	case loopRx:
		return e.startRx(ctx, r, name)
	case loopFwd:
		return e.startFwd(ctx, r, name)
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

// goQueue runs fn for queue q on its own goroutine, pinned to cpu.
func (g *group) goQueue(ctx context.Context, q, cpu int, fn func(context.Context) error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		err := cpus.Pin(cpu)
		if err == nil {
			err = fn(ctx)
		}
		if err != nil {
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

// counter reads an atomic total as running.count.
func counter(n *atomic.Uint64) func() (reading, error) {
	return func() (reading, error) { return reading{n: n.Load(), at: monoNow()}, nil }
}

func (e *env) startTx(ctx context.Context, r *rig, column string) (running, error) {
	rxq := 0
	if column == colDpdkXDP {
		rxq = r.queues // net_af_xdp sends through the receive queue's socket
	}
	d, err := e.openBackend(r, column, r.queues, rxq, false)
	if err != nil {
		return running{}, err
	}
	spec := frame.Spec{SrcMAC: r.macA, DstMAC: sinkMAC, SrcIP: testbed.AddrA.Addr(), DstIP: sinkIP, SrcPort: 1024, DstPort: discardPort, Size: e.size}
	if err := spec.Check(); err != nil {
		d.Close()
		return running{}, err
	}
	tmpl := make([]byte, spec.Len())
	frame.Build(tmpl, spec)
	l4 := spec.HeaderLen() - 8
	written := e.txWritten(tmpl, spec.HeaderLen())
	var total atomic.Uint64
	ctx, cancel := context.WithCancel(ctx)
	g := &group{cancel: cancel}
	chains := len(tmpl) > d.Capabilities().MaxFrameSize
	for i := 0; i < d.NumTxQueues(); i++ {
		tx := d.TxQueue(i)
		if chains {
			cs := &chainSender{tx: tx, reg: tx.Region(), tmpl: tmpl, l4: l4, flows: e.flows}
			g.goQueue(ctx, i, e.workerCPU(i), func(ctx context.Context) error { return sendChainsUntil(ctx, cs, e.batch, i*7, &total) })
			continue
		}
		g.goQueue(ctx, i, e.workerCPU(i), func(ctx context.Context) error {
			flow := i * 7
			build := func(j int, b []byte) int { return txFrame(b, tmpl, written, l4, (flow+j)%e.flows) }
			for ctx.Err() == nil {
				n, err := tx.SendFunc(e.batch, build)
				if err != nil {
					return err
				}
				if n == 0 {
					if err := tx.Err(); err != nil {
						return err
					}
					spinwait.Sleep(20 * time.Microsecond)
				}
				flow += n
				total.Add(uint64(n))
			}
			return nil
		})
	}
	return running{count: counter(&total), stop: func() error { err := g.wait(); return errors.Join(err, d.Close()) }}, nil
}

// feedPacketio starts the feeder for a packetio receiver d on r, with the
// measured end made to take it; stopWorkers stops the loops. It returns
// the running subject, or stops everything on failure.
func (e *env) feedPacketio(ctx context.Context, r *rig, d packetio.Device, total *atomic.Uint64, stopWorkers func() error) (running, error) {
	restore, err := e.takeFeed(r, d)
	if err != nil {
		stopWorkers()
		d.Close()
		return running{}, err
	}
	fd, err := r.feed.start(ctx, r.packetioTarget(e.size))
	if err != nil {
		stopWorkers()
		d.Close()
		restore()
		return running{}, err
	}
	return running{count: counter(total), offered: fd.sent, stop: func() error {
		ferr := fd.stop() // the feed first: nothing arrives at a closing device
		werr := stopWorkers()
		cerr := d.Close()
		return errors.Join(ferr, werr, cerr, restore())
	}}, nil
}

// pollWait is how long a loop of column waits in Poll: not at all when it
// busy-polls (the spin is the point), else up to 50 ms, so it notices when
// to stop.
func pollWait(column string) time.Duration {
	if column == colAfxdpBusy {
		return 0
	}
	return 50 * time.Millisecond
}

// lengths counts the frames the measured loops took that are not want
// bytes long, so a cell whose frames are not the size it says fails
// instead of being reported.
type lengths struct {
	want  uint32
	wrong atomic.Uint64
}

// check counts the packets of the wrong length and returns how many were
// right; a packet is one desc, or a chain of them (multi-buffer).
func (l *lengths) check(descs []packetio.Desc) int {
	right, bad := 0, 0
	for i := 0; i < len(descs); {
		n, k := packetLen(descs[i:])
		if uint32(n) == l.want {
			right++
		} else {
			bad++
		}
		i += k
	}
	if bad > 0 {
		l.wrong.Add(uint64(bad))
	}
	return right
}

// verdict fails the cell when more than 1 % of what it counted was not of
// the size it measures.
func (l *lengths) verdict(right uint64) error {
	if w := l.wrong.Load(); w > 0 && w*100 > right {
		return fmt.Errorf("%d frames of another length than %d bytes against %d of it: not the size this cell measures", w, l.want, right)
	}
	return nil
}

func (e *env) startRx(ctx context.Context, r *rig, column string) (running, error) {
	d, err := e.openBackend(r, column, 1, r.queues, false)
	if err != nil {
		return running{}, err
	}
	var total atomic.Uint64
	ln := &lengths{want: uint32(e.size)}
	wait := pollWait(column)
	ctx, cancel := context.WithCancel(ctx)
	g := &group{cancel: cancel}
	for i := 0; i < d.NumRxQueues(); i++ {
		rx := d.RxQueue(i)
		g.goQueue(ctx, i, e.workerCPU(i), func(ctx context.Context) error {
			rx.Fill(rx.NumFreeFillSlots())
			for ctx.Err() == nil {
				if _, err := rx.Poll(wait); err != nil {
					return err
				}
				descs := rx.Receive(e.batch)
				n := ln.check(descs)
				rx.Recycle(descs)
				rx.Fill(rx.NumFreeFillSlots())
				total.Add(uint64(n))
			}
			return nil
		})
	}
	stop := func() error { return errors.Join(g.wait(), ln.verdict(total.Load())) }
	return e.feedPacketio(ctx, r, d, &total, stop)
}

func (e *env) startFwd(ctx context.Context, r *rig, column string) (running, error) {
	d, err := e.openBackend(r, column, r.queues, r.queues, true)
	if err != nil {
		return running{}, err
	}
	if c := d.Capabilities(); !c.HandsBackFrames || !c.SharedRegion {
		d.Close()
		return running{}, fmt.Errorf("%w: %s cannot forward in place (HandsBackFrames %v, SharedRegion %v)", errSkip, column, c.HandsBackFrames, c.SharedRegion)
	}
	rw, err := e.rewriter(r)
	if err != nil {
		d.Close()
		return running{}, err
	}
	n := min(d.NumRxQueues(), d.NumTxQueues())
	var total atomic.Uint64
	ln := &lengths{want: uint32(e.size)}
	wait := pollWait(column)
	ctx, cancel := context.WithCancel(ctx)
	g := &group{cancel: cancel}
	for i := 0; i < n; i++ {
		rx, tx := d.RxQueue(i), d.TxQueue(i)
		g.goQueue(ctx, i, e.workerCPU(i), func(ctx context.Context) error { return route(ctx, rx, tx, rw, e.batch, wait, ln, &total) })
	}
	stop := func() error { return errors.Join(g.wait(), ln.verdict(total.Load())) }
	return e.feedPacketio(ctx, r, d, &total, stop)
}

// What transmit writes into each frame it sends (-write).
const (
	writeFrame   = "frame"   // the whole frame, every time
	writeHeaders = "headers" // the Ethernet, IPv4 and UDP headers; the payload is whatever the buffer holds, as in testpmd's txonly
)

var writes = []string{writeFrame, writeHeaders}

// txWritten is what transmit writes into each frame (-write): the whole
// template, or its first headerLen bytes.
func (e *env) txWritten(tmpl []byte, headerLen int) []byte {
	if e.write == writeHeaders {
		return tmpl[:headerLen]
	}
	return tmpl
}

// txFrame builds one of transmit's frames in b: written (txWritten) over
// it, then the flow's source port at l4. It returns the frame's length,
// len(tmpl), or 0 when b cannot hold it.
func txFrame(b, tmpl, written []byte, l4, flow int) int {
	if len(b) < len(tmpl) {
		return 0
	}
	copy(b, written)
	setFlow(b, l4, flow, false)
	return len(tmpl)
}

// The rewrites forward can make (-forward).
const (
	rewriteRoute = "route" // an IPv4 router: forward.FIB.Forward
	rewriteMAC   = "mac"   // testpmd's mac forwarding: the two MACs, nothing else
)

var rewrites = []string{rewriteRoute, rewriteMAC}

// rewriter is what forward does to one packet in place: head is its first
// frame, which holds its headers, length its bytes in all (more than
// len(head) for a chain), l3OK whether the device checked its IP header.
type rewriter func(head []byte, length int, l3OK bool) forward.Verdict

// rewriter returns the cell's rewrite: the router, with one route sending
// routedNet to the sink, or the MAC rewrite to the same next hop.
func (e *env) rewriter(r *rig) (rewriter, error) {
	p, h, err := forward.ParseRoute(routedNet.String()+","+sinkMAC.String(), r.macA)
	if err != nil {
		return nil, fmt.Errorf("route: %w", err)
	}
	if e.rewrite == rewriteMAC {
		return macRewrite(h), nil
	}
	fib := new(forward.FIB)
	if err := fib.Add(p, h); err != nil {
		return nil, fmt.Errorf("route: %w", err)
	}
	return fib.ForwardHead, nil
}

// macRewrite is testpmd's mac forwarding: the destination MAC becomes the
// next hop's, the source the port's; the frame is not looked at further.
func macRewrite(h forward.Hop) rewriter {
	return func(head []byte, _ int, _ bool) forward.Verdict {
		if len(head) < 14 {
			return forward.BadHeader
		}
		copy(head[0:6], h.Dst[:])
		copy(head[6:12], h.Src[:])
		return forward.Forwarded
	}
}

// route is the forwarding loop of one queue pair: receive, rewrite in
// place, Transmit, and take the frames home with Reclaim and Recycle. It
// counts the frames the transmit ring took; ln counts those not of the
// measured size.
func route(ctx context.Context, rx packetio.RxQueue, tx packetio.TxQueue, rw rewriter, batch int, wait time.Duration, ln *lengths, total *atomic.Uint64) error {
	rx.Fill(rx.NumFreeFillSlots())
	keep := make([]packetio.Desc, 0, batch)
	drop := make([]packetio.Desc, 0, batch)
	back := make([]packetio.Desc, 0, 4096)
	var warm byte // what WarmHeads read, kept alive below so the reads stay
	for ctx.Err() == nil {
		if _, err := rx.Poll(wait); err != nil {
			return err
		}
		descs := rx.Receive(batch)
		ln.check(descs)
		warm ^= forward.WarmHeads(rx.Region(), descs) // the headers in the cache, all at once
		keep, drop = keep[:0], drop[:0]
		for i := 0; i < len(descs); {
			head := rx.Region().Frame(descs[i])
			p, n, length := descs[i:i+1], 1, len(head)
			if descs[i].Options&packetio.OptContinued != 0 { // a chain (multi-buffer): the headers are in its first frame
				length, n = packetLen(descs[i:])
				p = descs[i : i+n]
			}
			if v := rw(head, length, descs[i].Options&packetio.OptL3ChecksumOK != 0); v == forward.Forwarded {
				keep = append(keep, p...)
			} else {
				drop = append(drop, p...)
			}
			i += n
		}
		rx.Recycle(drop)
		sent := tx.Transmit(keep)
		rx.Recycle(keep[sent:]) // the ring was full: drop, but keep the frames
		back = tx.Reclaim(1<<20, back[:0])
		rx.Recycle(back)
		rx.Fill(rx.NumFreeFillSlots())
		total.Add(uint64(whole(keep[:sent])))
	}
	// Bring the frames home before the device closes.
	for i := 0; i < 200 && tx.NumInFlight() > 0; i++ {
		back = tx.Reclaim(1<<20, back[:0])
		rx.Recycle(back)
		time.Sleep(time.Millisecond)
	}
	runtime.KeepAlive(warm)
	return nil
}

// packetioNote describes a backend's columns for the notes under the table.
func packetioNote(name, steer string) string {
	switch name {
	case "afpacket":
		return "afpacket: TPACKET_V3 receive rings joined in a PACKET_FANOUT_HASH group, transmit rings with PACKET_QDISC_BYPASS; the kernel copies every frame"
	case "afxdp":
		what := "steering " + feedFilter().String()
		if steer == steerAll {
			what = "taking every frame of its queues (-steer all, as the C reference's program does)"
		}
		return "afxdp: one XDP program in native mode on the veth " + what + " to one AF_XDP socket per queue over one shared UMEM, need-wakeup on; copy mode (veth has no zero-copy), so the kernel copies every frame into the UMEM in softirq, and transmit builds an skb per frame. " +
			"The forward loop opens with WithCacheColours (frames of 4096 bytes, 2048 a queue without -frames, each packet at one of 32 cache-line offsets; backend.Config.Forwards, as examples/l3fwd does), receive and transmit with the default layout (frames of 2048 bytes, 4096 a queue without -frames). " +
			"afxdp (its defaults) blocks in Poll up to 50 ms when its ring is empty; afxdp+busypoll opens with WithBusyPoll(50, 64) (SO_PREFER_BUSY_POLL, SO_BUSY_POLL 50 µs, SO_BUSY_POLL_BUDGET 64) and its loops never sleep: Poll(0)"
	case "dpdk":
		return "dpdk: the packetio dpdk backend, in this process, on the same veth over DPDK's drivers: dpdk/af_packet over net_af_packet (qpairs = queues; it copies every frame), dpdk/af_xdp over net_af_xdp (\"net_af_xdpN,iface=IF,start_queue=0,queue_count=Q\" passed to backend.Open as the name; the driver's defaults, so it busy-polls, see testpmd/af_xdp); each is held against testpmd on the same driver"
	}
	return strings.TrimSpace(name)
}

// retryBusy runs open again while it fails because the queue is still
// bound: the kernel releases an AF_XDP socket (and the queue it bound)
// only once the XDP program's map that held it is freed, a moment after
// the previous cell's Close.
func retryBusy(open func() error) error {
	var err error
	for i := 0; i < 10; i++ {
		if err = open(); err == nil || !isBusy(err) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

// isBusy reports whether err says a queue is bound already.
func isBusy(err error) bool {
	return errors.Is(err, unix.EBUSY) || strings.Contains(err.Error(), "resource busy")
}

// clearXDP detaches whatever XDP program a cell left on the measured
// interface (DPDK's net_af_xdp leaves libxdp's, whose map keeps the
// queue bound) and says which, so the next cell finds the interface as
// the sweep made it.
func clearXDP(r *rig) (string, error) {
	var left string
	err := r.bed.In(func() error {
		l, err := netlink.LinkByName(r.bed.Name)
		if err != nil {
			return err
		}
		if x := l.Attrs().Xdp; x != nil && x.Attached {
			left = fmt.Sprintf("XDP program %d", x.ProgId)
			return netlink.LinkSetXdpFd(l, -1)
		}
		return nil
	})
	return left, err
}
