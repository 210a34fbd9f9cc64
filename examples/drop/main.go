// Command drop runs the receive cycle (Fill, Poll, Receive, Recycle) and
// reports what it costs: packets per second, packets per receive call, and
// the whole machine's CPU including soft interrupts, where AF_PACKET and
// AF_XDP do their kernel half. Its first line says what runs: backend,
// interface, queues, the mode the kernel granted (native/generic XDP,
// copy/zero-copy), need-wakeup, busy-poll, stamps, batch, the workers'
// CPUs, and what feeds it.
//
// With no -i it makes its own veth pair (with -queues queues) and feeds it
// the way the sweep does: from inside the peer's kernel (the in-kernel
// generator, internal/trafficgen: BPF_PROG_RUN live frames, XDP_TX) on
// CPU 0, with the receiver on CPU 1 (on a machine with 2 CPUs or more),
// 60-byte UDP frames to an address nobody owns. The measured end gets GRO
// on when it runs no native XDP program itself (its veth takes XDP frames
// only then). So the rate is the receiver's, not a user-space feeder's.
//
// On a backend that steers (afxdp) it takes only UDP to -udp-port, the
// port its feeder sends to, and leaves everything else with the kernel;
// afpacket is a tap and counts every frame the interface sees.
//
// -busy-poll (afxdp) busy-polls the queues and never sleeps in Poll;
// -stamps receives with arrival timestamps; -cpu pins the workers. A flag
// the backend has not got is refused (exit status 2).
//
//	sudo go run ./examples/drop -duration 5s
//	sudo go run ./examples/drop -backend afxdp -busy-poll
//	sudo go run ./examples/drop -backend afxdp -queues 2 -cpu 0,1
//	sudo go run ./examples/drop -i veth0 -queues 2 -udp-port 4789
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/cpus"
	"github.com/packetio/packetio/examples/internal/live"
	"github.com/packetio/packetio/examples/internal/metrics"
	"github.com/packetio/packetio/examples/internal/promserve"
	"github.com/packetio/packetio/examples/internal/testbed"
)

type options struct {
	backend, iface   string
	queues, batch    int
	port             int
	duration, report time.Duration
	cpu              string
	busyPoll, stamps bool
	feedPPS          float64 // the feeder's rate, 0: flat out (tests slow it)
	metricsAddr      string  // -metrics: serve the counters there
}

func main() {
	var o options
	flag.StringVar(&o.backend, "backend", "afpacket", "backend: "+fmt.Sprint(backend.Names()))
	flag.StringVar(&o.iface, "i", "", "interface (default: a veth pair in throwaway namespaces, fed from its other end by the in-kernel generator; needs root and BPF)")
	flag.IntVar(&o.queues, "queues", 1, "receive queues, one worker each")
	flag.IntVar(&o.batch, "batch", 64, "most packets per Receive call")
	flag.IntVar(&o.port, "udp-port", discardPort, "on a backend that steers (afxdp), take only UDP to this port (0: what is addressed to the interface, which takes SSH with it on a real one)")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "how long to receive")
	flag.DurationVar(&o.report, "report", time.Second, "interval between report lines")
	flag.StringVar(&o.cpu, "cpu", "", "CPUs to pin the workers to, worker i on the i-th, e.g. 1 or 1,0 (default: CPU 1 for one queue on the own pair of a 2+ CPU machine, the feeder taking CPU 0; else the scheduler's choice)")
	flag.BoolVar(&o.busyPoll, "busy-poll", false, fmt.Sprintf("busy-poll the queues (afxdp: SO_BUSY_POLL %dus, budget %d) and never sleep in Poll", backend.BusyPollUsecs, backend.BusyPollBudget))
	flag.BoolVar(&o.stamps, "stamps", false, "receive with arrival timestamps (ReceiveTimestamps; afxdp: stamped by its program, off by default)")
	flag.StringVar(&o.metricsAddr, "metrics", "", promserve.Flag)
	testbed.Main("drop", "usage: drop [flags]\n\nReceives and discards every packet, and reports the rate, the receive batch\nsize and the machine's CPU. Ctrl-C stops it cleanly.\nExit status: 0 on success, 1 if the device failed, 2 for bad flags.\n\n", func() error { return o.check() }, func(ctx context.Context) error {
		_, err := run(ctx, o, os.Stdout)
		return err
	})
}

// check refuses bad flags, and flags the backend has not got.
func (o options) check() error {
	if o.queues < 1 || o.queues > 64 || o.batch < 1 || o.batch > 4096 || o.port < 0 || o.port > 65535 || o.duration <= 0 || o.report <= 0 {
		return errors.New("-queues 1-64, -batch 1-4096, -udp-port 0-65535, positive -duration and -report")
	}
	if err := backend.CheckFlags(o.backend, backend.Flags{BusyPoll: o.busyPoll, Stamps: o.stamps}); err != nil {
		return err
	}
	_, err := cpus.Parse(o.cpu)
	return err
}

type result struct {
	packets, batches, dropped uint64
	perQueue                  []uint64 // packets of each receive queue
	first                     string   // the first line
}

// discardPort is where the feeder sends: UDP port 9, discard.
const discardPort = 9

// unowned is where the feeder's frames go on the own pair: an address on a
// /24 nobody has, so the kernel of the measured end drops what it is
// offered at its first routing look, as in the sweep.
var unowned = netip.MustParseAddr("10.99.1.1")

// steering is what drop asks a backend that steers to take.
func (o options) steering() packetio.SteeringFilter {
	if o.port == 0 || !backend.Steers(o.backend) {
		return packetio.SteeringFilter{}
	}
	return packetio.SteeringFilter{Match: packetio.MatchDstPort(packetio.IPProtoUDP, uint16(o.port))}
}

func run(ctx context.Context, o options, w io.Writer) (result, error) {
	if err := o.check(); err != nil {
		return result{}, err
	}
	// What Setup did is said after the first line.
	var setup bytes.Buffer
	bed, err := testbed.Setup(o.iface, &setup, testbed.WithQueues(o.queues))
	if err != nil {
		return result{}, err
	}
	defer bed.Close()
	workers, _ := cpus.Parse(o.cpu)
	if o.cpu == "" && bed.Own() && o.queues == 1 {
		workers = cpus.Measured()
	}
	cfg := backend.Config{TxQueues: 1, RxQueues: o.queues, Steering: o.steering(), Stamps: o.stamps, BusyPoll: o.busyPoll}
	d, err := bed.Open(func(name string) (packetio.Device, error) { return backend.Open(o.backend, name, cfg) })
	if err != nil {
		return result{}, err
	}
	line := backend.Line{Program: "drop", Backend: o.backend, Iface: bed.Name, Dev: d, Config: cfg, Rx: true, Batch: o.batch, CPUs: workers}

	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var feeder *live.Feeder
	if bed.Own() {
		if feeder, err = live.NewUDPFeeder(bed, unowned, discardPort, o.queues, live.NativeXDP(d)); err != nil {
			return result{}, err
		}
		defer feeder.Close()
		line.Feed = fmt.Sprintf("%s, 60-byte UDP to %s port %d, 64 flows", feeder, unowned, discardPort)
	} else {
		line.Feed = "fed by whatever arrives on " + bed.Name
	}
	if backend.Steers(o.backend) {
		line.Feed += "; taking " + cfg.Steering.String() + ", the rest left to the kernel"
	} else {
		line.Feed += "; taking a copy of every packet the interface sees"
	}
	res := result{first: line.String()}
	fmt.Fprintln(w, res.first)
	w.Write(setup.Bytes())
	ms, err := promserve.ForDevice(o.metricsAddr, d, bed.Name, w)
	if err != nil {
		return res, err
	}
	defer ms.Close() // before the device closes

	var total atomic.Uint64
	var wg sync.WaitGroup
	errs := make(chan error, d.NumRxQueues())
	for q := 0; q < d.NumRxQueues(); q++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cpus.Pin(cpus.For(workers, q)); err != nil {
				errs <- err
				return
			}
			errs <- receive(ctx, d.RxQueue(q), o, &total)
		}()
	}
	if feeder != nil {
		feeder.Start(ctx, o.feedPPS)
	}
	rerr := metrics.Every(ctx, w, o.report, func() (uint64, string) { return total.Load(), "" })
	var ferr error
	if feeder != nil {
		ferr = feeder.Stop() // the feed first: nothing arrives at a closing device
	}
	cancel() // stop the workers before the device closes
	wg.Wait()
	if rerr != nil {
		return res, rerr
	}
	close(errs)
	for q := 0; q < d.NumRxQueues(); q++ {
		s, _ := d.RxQueue(q).Stats()
		res.packets += s.Packets
		res.batches += s.Batches
		res.dropped += s.Dropped
		res.perQueue = append(res.perQueue, s.Packets)
	}
	per := 0.0
	if res.batches > 0 {
		per = float64(res.packets) / float64(res.batches)
	}
	fmt.Fprintf(w, "total: %d packets in %d receive calls (%.1f per call), %d dropped by the kernel or NIC\n", res.packets, res.batches, per, res.dropped)
	if len(res.perQueue) > 1 {
		fmt.Fprintf(w, "per queue: %v\n", res.perQueue)
	}
	for err := range errs {
		if err != nil {
			return res, err
		}
	}
	if ferr != nil {
		return res, fmt.Errorf("feeder: %w", ferr)
	}
	return res, nil
}

// receive is the receive cycle for one queue. With -busy-poll it never
// sleeps in Poll (Poll(0): the kernel busy-polls the queue instead); with
// -stamps it receives with arrival timestamps.
func receive(ctx context.Context, rx packetio.RxQueue, o options, total *atomic.Uint64) error {
	wait := 100 * time.Millisecond
	if o.busyPoll {
		wait = 0
	}
	ts, _ := rx.(packetio.TimestampReceiver)
	if o.stamps && ts == nil {
		return fmt.Errorf("-stamps: %s receive queues have no timestamps", o.backend)
	}
	rx.Fill(rx.NumFreeFillSlots())
	for ctx.Err() == nil {
		if _, err := rx.Poll(wait); err != nil {
			return err
		}
		var descs []packetio.Desc
		if ts != nil && o.stamps {
			descs, _ = ts.ReceiveTimestamps(o.batch)
		} else {
			descs = rx.Receive(o.batch)
		}
		rx.Recycle(descs)
		rx.Fill(rx.NumFreeFillSlots())
		total.Add(uint64(len(descs)))
	}
	return nil
}
