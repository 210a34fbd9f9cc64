// Command drop runs the receive cycle (Fill, Poll, Receive, Recycle) and
// reports what it costs: packets per second, packets per receive call, and
// the whole machine's CPU including soft interrupts, where AF_PACKET and
// AF_XDP do their kernel half. With no -i it makes its own veth pair (with
// -queues queues) and feeds it from the other end.
//
// On a backend that steers (afxdp) it takes only UDP to -udp-port, the
// port its feeder sends to, and leaves everything else with the kernel;
// afpacket is a tap and counts every frame the interface sees.
//
//	sudo go run ./examples/drop -duration 5s
//	sudo go run ./examples/drop -backend afxdp -queues 2
//	sudo go run ./examples/drop -i veth0 -queues 2 -udp-port 4789
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/frame"
	"github.com/packetio/packetio/examples/internal/metrics"
	"github.com/packetio/packetio/examples/internal/testbed"
)

type options struct {
	backend, iface string
	queues, batch  int
	port           int
	duration       time.Duration
	report         time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.backend, "backend", "afpacket", "backend: "+fmt.Sprint(backend.Names()))
	flag.StringVar(&o.iface, "i", "", "interface (default: a veth pair in throwaway namespaces, fed from its other end; needs root)")
	flag.IntVar(&o.queues, "queues", 1, "receive queues, one worker each")
	flag.IntVar(&o.batch, "batch", 64, "most packets per Receive call")
	flag.IntVar(&o.port, "udp-port", discardPort, "on a backend that steers (afxdp), take only UDP to this port (0: what is addressed to the interface, which takes SSH with it on a real one)")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "how long to receive")
	flag.DurationVar(&o.report, "report", time.Second, "interval between report lines")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: drop [flags]\n\nReceives and discards every packet, and reports the rate, the receive batch\nsize and the machine's CPU. Ctrl-C stops it cleanly.\nExit status: 0 on success, 1 if the device failed, 2 for bad flags.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if o.queues < 1 || o.queues > 64 || o.batch < 1 || o.batch > 4096 || o.port < 0 || o.port > 65535 || o.duration <= 0 || o.report <= 0 {
		fmt.Fprintln(os.Stderr, "drop: -queues 1-64, -batch 1-4096, -udp-port 0-65535, positive -duration and -report")
		os.Exit(2)
	}
	ctx, stop := testbed.Interrupted()
	defer stop()
	if _, err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "drop:", err)
		os.Exit(1)
	}
}

type result struct {
	packets, batches, dropped uint64
	perQueue                  []uint64 // packets of each receive queue
}

// discardPort is where the feeder sends: UDP port 9, discard.
const discardPort = 9

// steering is what drop asks a backend that steers to take.
func (o options) steering() packetio.SteeringFilter {
	if o.port == 0 || !backend.Steers(o.backend) {
		return packetio.SteeringFilter{}
	}
	return packetio.SteeringFilter{Match: packetio.MatchDstPort(packetio.IPProtoUDP, uint16(o.port))}
}

func run(ctx context.Context, o options, w io.Writer) (result, error) {
	bed, err := testbed.Setup(o.iface, w, testbed.WithQueues(o.queues))
	if err != nil {
		return result{}, err
	}
	defer bed.Close()
	steer := o.steering()
	d, err := bed.Open(func(name string) (packetio.Device, error) {
		return backend.Open(o.backend, name, backend.Config{TxQueues: 1, RxQueues: o.queues, Steering: steer})
	})
	if err != nil {
		return result{}, err
	}
	taking := steer.String() + ", the rest left to the kernel"
	if !backend.Steers(o.backend) {
		taking = "a copy of every packet the interface sees"
	}
	fmt.Fprintf(w, "%s on %s: %d receive queue(s), batch %d, taking %s\n", o.backend, bed.Name, d.NumRxQueues(), o.batch, taking)

	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var wg sync.WaitGroup
	if bed.Own() {
		feeder, err := bed.OpenPeer(func(name string) (packetio.Device, error) {
			return backend.Open("afpacket", name, backend.Config{TxQueues: o.queues, RxQueues: 0})
		})
		if err != nil {
			return result{}, err
		}
		fmt.Fprintf(w, "feeding it from %s with 60-byte UDP frames to port %d, 64 flows, %d queue(s)\n", bed.Peer, discardPort, feeder.NumTxQueues())
		for q := 0; q < feeder.NumTxQueues(); q++ {
			wg.Add(1)
			go func() { defer wg.Done(); feed(ctx, feeder.TxQueue(q), q) }()
		}
	}
	var total atomic.Uint64
	errs := make(chan error, d.NumRxQueues())
	for q := 0; q < d.NumRxQueues(); q++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- receive(ctx, d.RxQueue(q), o.batch, &total) }()
	}
	rerr := metrics.Every(ctx, w, o.report, func() (uint64, string) { return total.Load(), "" })
	cancel() // stop the workers before the device closes
	wg.Wait()
	if rerr != nil {
		return result{}, rerr
	}
	close(errs)
	var res result
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
	return res, nil
}

// receive is the receive cycle for one queue.
func receive(ctx context.Context, rx packetio.RxQueue, batch int, total *atomic.Uint64) error {
	rx.Fill(rx.NumFreeFillSlots())
	for ctx.Err() == nil {
		if _, err := rx.Poll(100 * time.Millisecond); err != nil {
			return err
		}
		descs := rx.Receive(batch)
		rx.Recycle(descs)
		rx.Fill(rx.NumFreeFillSlots())
		total.Add(uint64(len(descs)))
	}
	return nil
}

// feed sends 60-byte frames on 64 flows (UDP source ports 1024-1087) until
// ctx ends; queue q starts q flows in.
func feed(ctx context.Context, tx packetio.TxQueue, q int) {
	spec := frame.Spec{SrcMAC: net.HardwareAddr{2, 0x70, 0x69, 0x6f, 0, 2}, DstMAC: net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		SrcIP: netip.MustParseAddr("10.99.0.2"), DstIP: netip.MustParseAddr("10.99.0.1"), SrcPort: 1024, DstPort: discardPort, Size: 60}
	l4 := spec.HeaderLen() - 8
	flow := q
	build := func(i int, f []byte) int {
		n := frame.Build(f, spec)
		port := 1024 + (flow+i)%64
		f[l4], f[l4+1] = byte(port>>8), byte(port)
		return n
	}
	for ctx.Err() == nil {
		n, err := tx.SendFunc(256, build)
		if err != nil {
			return
		}
		flow += n
		if n == 0 {
			time.Sleep(50 * time.Microsecond)
		}
	}
}
