// Command l3fwd is an IPv4 router: it forwards every packet in the frame it
// arrived in, with a longest-prefix-match table, the TTL decremented and the
// header checksum updated, and it takes the frames home with Reclaim and
// Recycle, so nothing is copied and nothing is lost. With no -i it makes its
// own veth pair: traffic comes from the far end, and the one route sends it
// back there, hairpinned through the router.
//
// On a backend that steers (afxdp) the router takes only what it routes:
// IPv4 addressed to its MAC for a destination inside one of the routes'
// prefixes (at most 16 routes, packetio.MaxRules); the rest, traffic for
// the host itself included, stays with the kernel. afpacket is a tap: the
// router sees everything and forwards what its table matches.
//
//	sudo go run ./examples/l3fwd -duration 5s
//	sudo go run ./examples/l3fwd -backend afxdp -duration 5s
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
	"strings"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/forward"
	"github.com/packetio/packetio/examples/internal/frame"
	"github.com/packetio/packetio/examples/internal/metrics"
	"github.com/packetio/packetio/examples/internal/testbed"
	"github.com/packetio/packetio/internal/csum"
)

type routes []string

func (r *routes) String() string     { return strings.Join(*r, " ") }
func (r *routes) Set(s string) error { *r = append(*r, s); return nil }

type options struct {
	backend, iface   string
	routes           routes
	batch            int
	duration, report time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.backend, "backend", "afpacket", "backend: "+fmt.Sprint(backend.Names()))
	flag.StringVar(&o.iface, "i", "", "interface (default: a veth pair in throwaway namespaces, fed from and routed back to its far end; needs root)")
	flag.Var(&o.routes, "route", "prefix,nexthop-mac (repeatable; required with -i)")
	flag.IntVar(&o.batch, "batch", 64, "most packets per Receive call")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "how long to route")
	flag.DurationVar(&o.report, "report", time.Second, "interval between report lines")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: l3fwd [flags]\n\nForwards IPv4 in place. Exit status: 0 if every frame was accounted for at the\nend, 1 otherwise or on failure, 2 for bad flags.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if o.batch < 1 || o.batch > 4096 || o.duration <= 0 || o.report <= 0 || (o.iface != "" && len(o.routes) == 0) {
		fmt.Fprintln(os.Stderr, "l3fwd: -batch 1-4096, positive -duration and -report, and at least one -route with -i")
		os.Exit(2)
	}
	ctx, stop := testbed.Interrupted()
	defer stop()
	if _, err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "l3fwd:", err)
		os.Exit(1)
	}
}

type result struct {
	received, forwarded, arrived uint64
	verdicts                     [forward.NumVerdicts]uint64
}

func run(ctx context.Context, o options, w io.Writer) (result, error) {
	var res result
	bed, err := testbed.Setup(o.iface, w)
	if err != nil {
		return res, err
	}
	defer bed.Close()
	self, err := macOf(bed)
	if err != nil {
		return res, err
	}
	if bed.Own() {
		peerMAC, err := peerMACOf(bed)
		if err != nil {
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
		fmt.Fprintf(w, "route %s via %s\n", p, net.HardwareAddr(h.Dst[:]))
	}
	steer, err := steering(o.backend, self, prefixes)
	if err != nil {
		return res, err
	}
	d, err := bed.Open(func(name string) (packetio.Device, error) {
		return backend.Open(o.backend, name, backend.Config{TxQueues: 1, RxQueues: 1, Steering: steer})
	})
	if err != nil {
		return res, err
	}
	if c := d.Capabilities(); !c.HandsBackFrames || !c.SharedRegion {
		return res, fmt.Errorf("%s cannot forward in place here (HandsBackFrames %v, SharedRegion %v)", o.backend, c.HandsBackFrames, c.SharedRegion)
	}
	if backend.Steers(o.backend) {
		fmt.Fprintf(w, "%s on %s: taking %s; the rest stays with the kernel\n", o.backend, bed.Name, steer)
	} else {
		fmt.Fprintf(w, "%s on %s: a tap, the router sees every frame and forwards what its table matches\n", o.backend, bed.Name)
	}
	var peer packetio.Device
	if bed.Own() {
		peer, err = bed.OpenPeer(func(name string) (packetio.Device, error) {
			return backend.Open("afpacket", name, backend.Config{TxQueues: 1, RxQueues: 1})
		})
		if err != nil {
			return res, err
		}
	}

	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var arrived atomic.Uint64
	done := make(chan struct{})
	if peer != nil {
		fmt.Fprintf(w, "sending UDP to 10.99.1.0/24 from %s; the router sends it back there\n", bed.Peer)
		go func() { defer close(done); source(ctx, peer, self, &arrived) }()
	} else {
		close(done)
	}
	var counts [forward.NumVerdicts]atomic.Uint64
	var received atomic.Uint64
	errc := make(chan error, 1)
	go func() { errc <- route(ctx, d, &fib, o.batch, &received, &counts) }()

	merr := metrics.Every(ctx, w, o.report, func() (uint64, string) {
		return counts[forward.Forwarded].Load(), fmt.Sprintf("  in %d", received.Load())
	})
	cancel() // stop the router and the source before the devices close
	rerr := <-errc
	<-done
	if merr != nil {
		return res, merr
	}
	res.received, res.forwarded, res.arrived = received.Load(), counts[forward.Forwarded].Load(), arrived.Load()
	for i := range counts {
		res.verdicts[i] = counts[i].Load()
	}
	fmt.Fprintf(w, "received %d, forwarded %d", res.received, res.forwarded)
	for v := forward.Verdict(1); int(v) < forward.NumVerdicts; v++ {
		if n := res.verdicts[v]; n > 0 {
			fmt.Fprintf(w, ", dropped %d (%s)", n, v)
		}
	}
	if peer != nil {
		fmt.Fprintf(w, "; %d came back to %s", res.arrived, bed.Peer)
	}
	fmt.Fprintln(w)
	return res, rerr
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
func route(ctx context.Context, d packetio.Device, fib *forward.FIB, batch int, received *atomic.Uint64, counts *[forward.NumVerdicts]atomic.Uint64) error {
	rx, tx := d.RxQueue(0), d.TxQueue(0)
	rx.Fill(rx.NumFreeFillSlots())
	start := rx.NumFreeFrames()
	keep := make([]packetio.Desc, 0, batch)
	drop := make([]packetio.Desc, 0, batch)
	back := make([]packetio.Desc, 0, 4096)
	var local [forward.NumVerdicts]uint64
	for ctx.Err() == nil {
		if _, err := rx.Poll(50 * time.Millisecond); err != nil {
			return err
		}
		descs := rx.Receive(batch)
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

// source sends UDP to 10.99.1.x from the far end and counts what the router
// sends back (TTL 63, from the router's MAC).
func source(ctx context.Context, d packetio.Device, router net.HardwareAddr, arrived *atomic.Uint64) {
	tx, rx := d.TxQueue(0), d.RxQueue(0)
	rx.Fill(rx.NumFreeFillSlots())
	spec := frame.Spec{SrcMAC: net.HardwareAddr{2, 0x70, 0x69, 0x6f, 0, 2}, DstMAC: router,
		SrcIP: netip.MustParseAddr("10.99.0.2"), DstIP: netip.MustParseAddr("10.99.1.1"), SrcPort: 1024, DstPort: 9, Size: 60}
	build := func(i int, f []byte) int {
		n := frame.Build(f, spec)
		f[33] = byte(i) // spread over 10.99.1.0/24; the header checksum follows
		f[24], f[25] = 0, 0
		c := csum.Checksum(f[14:34], 0)
		f[24], f[25] = byte(c>>8), byte(c)
		return n
	}
	for ctx.Err() == nil {
		if n, _ := tx.SendFunc(256, build); n == 0 {
			time.Sleep(50 * time.Microsecond)
		}
		rx.Poll(0)
		descs := rx.Receive(256)
		for _, desc := range descs {
			f := rx.Region().Frame(desc)
			if len(f) > 34 && f[22] == 63 && bytes.Equal(f[6:12], router) {
				arrived.Add(1)
			}
		}
		rx.Recycle(descs)
		rx.Fill(rx.NumFreeFillSlots())
	}
}

func macOf(bed *testbed.Bed) (net.HardwareAddr, error) {
	var mac net.HardwareAddr
	err := bed.In(func() error {
		ifc, err := net.InterfaceByName(bed.Name)
		if err == nil {
			mac = ifc.HardwareAddr
		}
		return err
	})
	if err == nil && len(mac) != 6 {
		err = errors.New("the interface has no Ethernet address")
	}
	return mac, err
}

func peerMACOf(bed *testbed.Bed) (net.HardwareAddr, error) {
	var mac net.HardwareAddr
	err := bed.InPeer(func() error {
		ifc, err := net.InterfaceByName(bed.Peer)
		if err == nil {
			mac = ifc.HardwareAddr
		}
		return err
	})
	return mac, err
}
