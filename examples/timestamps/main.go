// Command timestamps measures arrival jitter from the device's own receive
// timestamps: the gaps between consecutive packets as the device (here the
// kernel) stamped them, not as the program happened to read them. Where the
// stamps are on a clock the program can read (afpacket: CLOCK_REALTIME as
// the kernel queued the frame; afxdp on veth: CLOCK_MONOTONIC at the XDP
// hook, the clock of Go's monotonic time) it also says how long packets
// waited between their stamp and the program: the receive path. With no
// -i it makes its own veth pair and sends -pps packets a second from the
// other end.
//
// It times UDP to -udp-port (the port its feeder sends to): on a backend
// that steers (afxdp) that is all it takes from the kernel; on afpacket, a
// tap, it picks those frames out of everything the interface sees.
//
//	sudo go run ./examples/timestamps -d 3s
//	sudo go run ./examples/timestamps -backend afxdp -d 3s
//	sudo go run ./examples/timestamps -i veth0 -d 10s -udp-port 4789
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/frame"
	"github.com/packetio/packetio/examples/internal/stamp"
	"github.com/packetio/packetio/examples/internal/testbed"
)

type options struct {
	backend, iface string
	d              time.Duration
	pps, port      int
}

func main() {
	var o options
	flag.StringVar(&o.backend, "backend", "afpacket", "backend: "+fmt.Sprint(backend.Names()))
	flag.StringVar(&o.iface, "i", "", "interface (default: a veth pair in throwaway namespaces, fed from its other end; needs root)")
	flag.DurationVar(&o.d, "d", 5*time.Second, "how long to listen")
	flag.IntVar(&o.pps, "pps", 1000, "packets per second the feeder sends on its own veth pair")
	flag.IntVar(&o.port, "udp-port", discardPort, "UDP destination port of the packets to time (on afxdp, the only ones taken from the kernel)")
	testbed.Main("timestamps", "usage: timestamps [flags]\n\nPrints the distribution of gaps between packet arrivals, from the device's\nreceive timestamps, and how long packets waited between stamp and program.\nExit status: 0 on success, 1 on failure (also when the device does not stamp),\n2 for bad flags.\n\n", func() error {
		if o.d <= 0 || o.pps < 1 || o.pps > 100000 || o.port < 1 || o.port > 65535 {
			return errors.New("-d must be positive, -pps 1 to 100000, -udp-port 1 to 65535")
		}
		return nil
	}, func(ctx context.Context) error {
		_, err := run(ctx, o, os.Stdout)
		return err
	})
}

// discardPort is where the feeder sends.
const discardPort = 9

// result is what a run measured, sorted.
type result struct {
	// gaps between consecutive stamps.
	gaps []time.Duration
	// waits from each stamp to the program seeing the packet, where the
	// clock is one the program reads (else empty).
	waits []time.Duration
	clock stamp.Clock
}

func run(ctx context.Context, o options, w io.Writer) (result, error) {
	var res result
	bed, err := testbed.Setup(o.iface, w)
	if err != nil {
		return res, err
	}
	defer bed.Close()
	steer := backend.Steering(o.backend, packetio.SteeringFilter{Match: packetio.MatchDstPort(packetio.IPProtoUDP, uint16(o.port))})
	dev, err := bed.Open(func(name string) (packetio.Device, error) {
		return backend.Open(o.backend, name, backend.Config{TxQueues: 1, RxQueues: 1, Steering: steer, Stamps: true})
	})
	if err != nil {
		return res, err
	}
	rx, ok := dev.RxQueue(0).(packetio.TimestampReceiver)
	if !ok || !dev.Capabilities().RxTimestamps {
		return res, fmt.Errorf("%s does not stamp arrivals (Capabilities().RxTimestamps is false)", o.backend)
	}
	res.clock = stamp.Of(dev)
	ctx, cancel := context.WithTimeout(ctx, o.d)
	defer cancel()
	done := make(chan struct{})
	defer func() { cancel(); <-done }() // the feeder stops before the devices close
	if bed.Own() {
		feeder, err := bed.OpenPeer(func(name string) (packetio.Device, error) {
			return backend.Open("afpacket", name, backend.Config{TxQueues: 1, RxQueues: 0})
		})
		if err != nil {
			close(done)
			return res, err
		}
		go func() { defer close(done); feed(ctx, feeder.TxQueue(0), o.pps, uint16(o.port)) }()
		fmt.Fprintf(w, "sending %d packets a second to UDP port %d from %s\n", o.pps, o.port, bed.Peer)
	} else {
		close(done)
	}
	taking := "picking UDP to port " + fmt.Sprint(o.port) + " out of every frame (a tap)"
	if backend.Steers(o.backend) {
		taking = "taking " + steer.String() + ", the rest left to the kernel"
	}
	fmt.Fprintf(w, "listening on %s for %v, %s; stamps: %s\n", bed.Name, o.d, taking, res.clock.Name)

	// Room for every sample the feeder will send, so the loop does not
	// grow its slices as it goes.
	capacity := o.pps*int(o.d/time.Second+1) + 1024
	res.gaps = make([]time.Duration, 0, capacity)
	if res.clock.Comparable() {
		res.waits = make([]time.Duration, 0, capacity)
	}
	var last uint64
	rx.Fill(rx.NumFreeFillSlots())
	for ctx.Err() == nil {
		if _, err := rx.Poll(100 * time.Millisecond); err != nil {
			return res, err
		}
		descs, stamps := rx.ReceiveTimestamps(256)
		now := res.clock.Now() // once per batch: one system call
		for i, ts := range stamps {
			if in, ok := frame.Parse(rx.Region().Frame(descs[i])); !ok || in.DstPort != uint16(o.port) {
				continue
			}
			if res.waits != nil {
				res.waits = append(res.waits, stamp.Since(now, ts))
			}
			// A stamp older than the last (arrival order is not
			// delivery order) is skipped and moves nothing.
			if last != 0 && ts > last {
				res.gaps = append(res.gaps, time.Duration(ts-last))
			}
			if ts > last {
				last = ts
			}
		}
		rx.Recycle(descs)
		rx.Fill(rx.NumFreeFillSlots())
	}
	if len(res.gaps) == 0 {
		return res, errors.New("fewer than two packets arrived")
	}
	slices.Sort(res.gaps)
	slices.Sort(res.waits)
	g := res.gaps
	fmt.Fprintf(w, "%d packets, %d gaps, in milliseconds: shortest %.3f  median %.3f  p99 %.3f  longest %.3f\n",
		len(g)+1, len(g), ms(g[0]), ms(q(g, 0.5)), ms(q(g, 0.99)), ms(g[len(g)-1]))
	if len(res.waits) > 0 {
		wt := res.waits
		fmt.Fprintf(w, "stamp to program (the receive path), in microseconds: median %.1f  p99 %.1f  longest %.1f\n",
			us(q(wt, 0.5)), us(q(wt, 0.99)), us(wt[len(wt)-1]))
	} else {
		fmt.Fprintf(w, "stamp to program: not measured (%s is not a clock this program reads)\n", res.clock.Name)
	}
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
func us(d time.Duration) float64 { return float64(d) / 1e3 }

// q is the p-quantile of sorted s.
func q(s []time.Duration, p float64) time.Duration { return s[min(len(s)-1, int(float64(len(s))*p))] }

// feed sends one 60-byte frame to port every 1/pps seconds until ctx ends.
func feed(ctx context.Context, tx packetio.TxQueue, pps int, port uint16) {
	spec := frame.Spec{SrcMAC: net.HardwareAddr{2, 0x70, 0x69, 0x6f, 0, 2}, DstMAC: net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		SrcIP: netip.MustParseAddr("10.99.0.2"), DstIP: netip.MustParseAddr("10.99.0.1"), SrcPort: 1024, DstPort: port, Size: 60}
	tick := time.NewTicker(time.Second / time.Duration(pps))
	defer tick.Stop()
	build := func(i int, f []byte) int { return frame.Build(f, spec) }
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			tx.SendFunc(1, build)
		}
	}
}
