// Command l3fwd is an IPv4 router: it forwards every packet in the frame it
// arrived in, with a longest-prefix-match table, the TTL decremented and the
// header checksum updated, and it takes the frames home with Reclaim and
// Recycle, so nothing is copied and nothing is lost. Its first line says
// what runs: backend, interface, queues, the mode the kernel granted,
// need-wakeup, busy-poll, batch, the worker's CPU, what feeds the router and
// where what it forwards goes.
//
// With no -i it makes its own veth pair and feeds it as the sweep does: from
// inside the far end's kernel (the in-kernel generator, internal/trafficgen:
// BPF_PROG_RUN live frames, XDP_TX) on CPU 0, 60-byte UDP to 10.99.1.1 on 64
// flows, with the router on CPU 1 (on a machine with 2 CPUs or more). The
// one route sends it back to the far end, whose kernel drops it at its
// routing look (it does not forward); the far end's receive counter says
// how much came back. The router's end gets GRO on when it runs no native
// XDP program itself (its veth takes XDP frames only then).
//
// On a backend that steers (afxdp) the router takes only what it routes:
// IPv4 addressed to its MAC for a destination inside one of the routes'
// prefixes (at most 16 routes, packetio.MaxRules); the rest, traffic for
// the host itself included, stays with the kernel. afpacket is a tap: the
// router sees everything and forwards what its table matches.
//
// Before it routes a burst it reads the first byte of every packet in it
// (forward.WarmHeads), so the cache misses on headers another CPU wrote
// overlap instead of stalling one packet at a time: testpmd's engines
// prefetch for the same reason (dpdk/README.md, "Where forwarding on
// net_af_xdp spends its time").
//
// -busy-poll (afxdp) busy-polls the queues and never sleeps in Poll; -cpu
// pins the router; -frames sets the frames a queue (the backend's
// WithFrames; the second line says what the device has). Fewer frames
// leave less depth to ride out a stall of the router; on its own pair,
// afxdp, 2048 and 1024 frames forwarded 1.00 and 1.01 times what the
// default 4096 did (6 December, 5 alternating rounds of 4 s), though the
// sweep's forward loop gains from fewer (afxdp/README.md, "Frames in
// circulation"). A flag the backend has not got is refused (exit status
// 2).
//
//	sudo go run ./examples/l3fwd -duration 5s
//	sudo go run ./examples/l3fwd -backend afxdp -busy-poll
//	sudo go run ./examples/l3fwd -i veth0 -route 10.0.0.0/8,02:00:00:00:00:02
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/cpus"
	"github.com/packetio/packetio/examples/internal/forward"
	"github.com/packetio/packetio/examples/internal/frame"
	"github.com/packetio/packetio/examples/internal/live"
	"github.com/packetio/packetio/examples/internal/metrics"
	"github.com/packetio/packetio/examples/internal/promserve"
	"github.com/packetio/packetio/examples/internal/testbed"
)

type routes []string

func (r *routes) String() string     { return strings.Join(*r, " ") }
func (r *routes) Set(s string) error { *r = append(*r, s); return nil }

// defaultBatch is -batch's default. On afxdp a router under load forwards
// more the more it takes per call: on the own veth pair (6 December, 5
// alternating rounds of 4 s, medians of the per-round ratio), 1024 against
// 64 forwarded 1.09 times as much (256: 0.99); on dpdk over net_af_packet
// 1.02 (0.98-1.31) and on afpacket 0.97 (0.91-1.07), no change beyond the
// noise (9 rounds over two sets: 1.19 and 1.00). A lightly loaded router
// takes what waits, so a large batch adds no delay there; under load, up to
// a batch's worth of frames waits for the whole batch to be routed.
const defaultBatch = 1024

type options struct {
	backend, iface   string
	routes           routes
	batch            int
	frames           int // each queue's WithFrames; 0: the backend's default
	duration, report time.Duration
	cpu              string
	busyPoll         bool
	feedPPS          float64 // the feeder's rate, 0: flat out (tests slow it)
	metricsAddr      string  // -metrics: serve the counters there
}

func main() {
	var o options
	flag.StringVar(&o.backend, "backend", "afpacket", "backend: "+fmt.Sprint(backend.Names()))
	flag.StringVar(&o.iface, "i", "", "interface (default: a veth pair in throwaway namespaces, fed from and routed back to its far end; needs root)")
	flag.Var(&o.routes, "route", "prefix,nexthop-mac (repeatable; required with -i)")
	flag.IntVar(&o.batch, "batch", defaultBatch, "most packets per Receive call")
	flag.IntVar(&o.frames, "frames", 0, "frames a queue (the backend's WithFrames; 0: its default); fewer leave less depth to ride out a stall")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "how long to route")
	flag.DurationVar(&o.report, "report", time.Second, "interval between report lines")
	flag.StringVar(&o.cpu, "cpu", "", "CPU to pin the router to, e.g. 1 (default: CPU 1 on the own pair of a 2+ CPU machine, the feeder taking CPU 0; else the scheduler's choice)")
	flag.BoolVar(&o.busyPoll, "busy-poll", false, fmt.Sprintf("busy-poll the queues (afxdp: SO_BUSY_POLL %dus, budget %d) and never sleep in Poll", backend.BusyPollUsecs, backend.BusyPollBudget))
	flag.StringVar(&o.metricsAddr, "metrics", "", promserve.Flag)
	testbed.Main("l3fwd", "usage: l3fwd [flags]\n\nForwards IPv4 in place. Exit status: 0 if every frame was accounted for at the\nend, 1 otherwise or on failure, 2 for bad flags.\n\n", func() error { return o.check() }, func(ctx context.Context) error {
		_, err := run(ctx, o, os.Stdout)
		return err
	})
}

// check refuses bad flags, and flags the backend has not got.
func (o options) check() error {
	if o.batch < 1 || o.batch > 4096 || o.frames < 0 || o.duration <= 0 || o.report <= 0 || (o.iface != "" && len(o.routes) == 0) {
		return errors.New("-batch 1-4096, -frames 0 or more, positive -duration and -report, and at least one -route with -i")
	}
	if err := backend.CheckFlags(o.backend, backend.Flags{BusyPoll: o.busyPoll}); err != nil {
		return err
	}
	_, err := cpus.Parse(o.cpu)
	return err
}

type result struct {
	received, forwarded, arrived uint64
	verdicts                     [forward.NumVerdicts]uint64
	first                        string // the first line
	frames                       int    // the frames of the device's region (-frames)
}

// routed is where the feeder sends on the own pair: a /24 the one route
// covers, which nobody owns.
var routed = netip.MustParseAddr("10.99.1.1")

func run(ctx context.Context, o options, w io.Writer) (result, error) {
	var res result
	if err := o.check(); err != nil {
		return res, err
	}
	// What Setup did, and the routes, are said after the first line.
	var setup bytes.Buffer
	bed, err := testbed.Setup(o.iface, &setup)
	if err != nil {
		return res, err
	}
	defer bed.Close()
	self, err := bed.MAC()
	if err != nil {
		return res, err
	}
	var peerMAC net.HardwareAddr
	if bed.Own() {
		if peerMAC, err = bed.PeerMAC(); err != nil {
			return res, err
		}
		o.routes = append(o.routes, "10.99.1.0/24,"+peerMAC.String())
	}
	var fib forward.FIB
	var prefixes []netip.Prefix
	for _, r := range o.routes {
		p, h, err := forward.ParseRoute(r, self)
		if err != nil {
			return res, err
		}
		if err := fib.Add(p, h); err != nil {
			return res, fmt.Errorf("route %s: %w", r, err)
		}
		prefixes = append(prefixes, p)
		fmt.Fprintf(&setup, "route %s via %s\n", p, net.HardwareAddr(h.Dst[:]))
	}
	steer, err := steering(o.backend, self, prefixes)
	if err != nil {
		return res, err
	}
	workers, _ := cpus.Parse(o.cpu)
	if o.cpu == "" && bed.Own() {
		workers = cpus.Measured()
	}
	cfg := backend.Config{TxQueues: 1, RxQueues: 1, Frames: o.frames, Steering: steer, BusyPoll: o.busyPoll, Forwards: true}
	d, err := bed.Open(func(name string) (packetio.Device, error) { return backend.Open(o.backend, name, cfg) })
	if err != nil {
		return res, err
	}
	if c := d.Capabilities(); !c.HandsBackFrames || !c.SharedRegion {
		return res, fmt.Errorf("%s cannot forward in place here (HandsBackFrames %v, SharedRegion %v)", o.backend, c.HandsBackFrames, c.SharedRegion)
	}
	line := backend.Line{Program: "l3fwd", Backend: o.backend, Iface: bed.Name, Dev: d, Config: cfg, Rx: true, Tx: true, Batch: o.batch, CPUs: workers}
	var feeder *live.Feeder
	var arrivedBase uint64
	if bed.Own() {
		if feeder, err = newFeeder(bed, self, d); err != nil {
			return res, err
		}
		defer feeder.Close()
		if arrivedBase, err = peerReceived(bed); err != nil {
			return res, err
		}
		line.Feed = fmt.Sprintf("%s, 60-byte UDP to %s port 9, 64 flows; routed back to %s (%s), whose kernel drops it at its routing look", feeder, routed, bed.Peer, peerMAC)
	} else {
		line.Feed = "routing what arrives on " + bed.Name
	}
	if backend.Steers(o.backend) {
		line.Feed += "; taking " + steer.String() + ", the rest left to the kernel"
	} else {
		line.Feed += "; a tap: the router sees every frame and forwards what its table matches"
	}
	res.first = line.String()
	reg := d.RxQueue(0).Region()
	res.frames = reg.NumFrames()
	fmt.Fprintln(w, res.first)
	fmt.Fprintf(w, "frame memory: %d frames of %d bytes (-frames)\n", res.frames, reg.FrameSize())
	w.Write(setup.Bytes())
	ms, err := promserve.ForDevice(o.metricsAddr, d, bed.Name, w)
	if err != nil {
		return res, err
	}
	defer ms.Close() // before the device closes

	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var counts [forward.NumVerdicts]atomic.Uint64
	var received atomic.Uint64
	errc := make(chan error, 1)
	go func() {
		if err := cpus.Pin(cpus.For(workers, 0)); err != nil {
			errc <- err
			return
		}
		errc <- route(ctx, d, &fib, o, &received, &counts)
	}()
	if feeder != nil {
		feeder.Start(ctx, o.feedPPS)
	}
	merr := metrics.Every(ctx, w, o.report, func() (uint64, string) {
		return counts[forward.Forwarded].Load(), fmt.Sprintf("  in %d", received.Load())
	})
	var ferr error
	if feeder != nil {
		ferr = feeder.Stop() // the feed first: nothing arrives at a closing device
	}
	cancel() // stop the router before the device closes
	rerr := <-errc
	if merr != nil {
		return res, merr
	}
	res.received, res.forwarded = received.Load(), counts[forward.Forwarded].Load()
	for i := range counts {
		res.verdicts[i] = counts[i].Load()
	}
	if feeder != nil {
		n, err := peerReceived(bed)
		if err != nil {
			return res, err
		}
		res.arrived = n - arrivedBase
	}
	fmt.Fprintf(w, "received %d, forwarded %d", res.received, res.forwarded)
	for v := forward.Verdict(1); int(v) < forward.NumVerdicts; v++ {
		if n := res.verdicts[v]; n > 0 {
			fmt.Fprintf(w, ", dropped %d (%s)", n, v)
		}
	}
	if feeder != nil {
		fmt.Fprintf(w, "; %s received %d", bed.Peer, res.arrived)
	}
	fmt.Fprintln(w)
	if rerr != nil {
		return res, rerr
	}
	if ferr != nil {
		return res, fmt.Errorf("feeder: %w", ferr)
	}
	return res, nil
}

// newFeeder loads the in-kernel generator on the far end: 60-byte UDP to
// the router's MAC for 10.99.1.1, 64 flows (source ports), on CPU 0.
func newFeeder(bed *testbed.Bed, router net.HardwareAddr, d packetio.Device) (*live.Feeder, error) {
	spec := frame.Spec{SrcMAC: net.HardwareAddr{2, 0x70, 0x69, 0x6f, 0, 2}, DstMAC: router,
		SrcIP: testbed.AddrB.Addr(), DstIP: routed, SrcPort: 1024, DstPort: 9, Size: 60}
	buf := make([]byte, spec.Len())
	frame.Build(buf, spec)
	allowed, err := cpus.Allowed()
	if err != nil {
		return nil, err
	}
	x, ok := d.(*afxdp.Device)
	native := ok && x.Info().Mode == "native"
	return live.NewFeeder(bed, buf, live.Flows{Offset: spec.HeaderLen() - 8, N: 64}, allowed[:1], native)
}

// peerReceived is the far end's receive counter: what the router sent back
// (and the little else the link carries).
func peerReceived(bed *testbed.Bed) (uint64, error) {
	var n uint64
	err := bed.InPeer(func() error {
		l, err := netlink.LinkByName(bed.Peer)
		if err != nil {
			return err
		}
		if st := l.Attrs().Statistics; st != nil {
			n = st.RxPackets
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("%s's counters: %w", bed.Peer, err)
	}
	return n, nil
}

// steering is what the router takes on a backend that steers: frames to
// its own MAC for a destination one of its routes covers.
func steering(b string, self net.HardwareAddr, prefixes []netip.Prefix) (packetio.SteeringFilter, error) {
	if !backend.Steers(b) {
		return packetio.SteeringFilter{}, nil
	}
	if len(prefixes) > packetio.MaxRules {
		return packetio.SteeringFilter{}, fmt.Errorf("%s steers at most %d prefixes (one rule each), and there are %d routes", b, packetio.MaxRules, len(prefixes))
	}
	var mac [6]byte
	copy(mac[:], self)
	f := packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchDstMAC(mac)}}
	for _, p := range prefixes {
		f.Match = append(f.Match, packetio.MatchDstIP(p))
	}
	if err := f.Validate(); err != nil {
		return f, fmt.Errorf("steering for the routes: %w", err)
	}
	return f, nil
}

// route is the forwarding loop, and at the end the frame-conservation check.
func route(ctx context.Context, d packetio.Device, fib *forward.FIB, o options, received *atomic.Uint64, counts *[forward.NumVerdicts]atomic.Uint64) error {
	rx, tx := d.RxQueue(0), d.TxQueue(0)
	batch, wait := o.batch, 50*time.Millisecond
	if o.busyPoll {
		wait = 0 // the kernel busy-polls the queue instead
	}
	rx.Fill(rx.NumFreeFillSlots())
	start := rx.NumFreeFrames()
	keep := make([]packetio.Desc, 0, batch)
	drop := make([]packetio.Desc, 0, batch)
	back := make([]packetio.Desc, 0, 4096)
	var local [forward.NumVerdicts]uint64
	var warm byte // what WarmHeads read, kept alive below so the reads stay
	for ctx.Err() == nil {
		if _, err := rx.Poll(wait); err != nil {
			return err
		}
		descs := rx.Receive(batch)
		warm ^= forward.WarmHeads(rx.Region(), descs) // the headers in the cache, all at once
		keep, drop = keep[:0], drop[:0]
		for _, desc := range descs {
			v := fib.Forward(rx.Region().Frame(desc), desc.Options&packetio.OptL3ChecksumOK != 0)
			local[v]++
			if v == forward.Forwarded {
				keep = append(keep, desc)
			} else {
				drop = append(drop, desc)
			}
		}
		rx.Recycle(drop)
		sent := tx.Transmit(keep)
		rx.Recycle(keep[sent:]) // the ring was full: drop, but keep the frames
		local[forward.Forwarded] -= uint64(len(keep) - sent)
		back = tx.Reclaim(1<<20, back[:0])
		rx.Recycle(back)
		rx.Fill(rx.NumFreeFillSlots())
		received.Add(uint64(len(descs)))
		for i, n := range local {
			if n > 0 {
				counts[i].Add(n)
				local[i] = 0
			}
		}
	}
	runtime.KeepAlive(warm)
	// Every frame comes home: wait for the ring, then count.
	for i := 0; i < 1000 && tx.NumInFlight() > 0; i++ {
		back = tx.Reclaim(1<<20, back[:0])
		rx.Recycle(back)
		time.Sleep(time.Millisecond)
	}
	rx.Fill(rx.NumFreeFillSlots())
	if got := rx.NumFreeFrames(); got != start || tx.NumInFlight() != 0 {
		return fmt.Errorf("frames unaccounted for: %d free at the start, %d at the end, %d still in flight", start, got, tx.NumInFlight())
	}
	return nil
}
