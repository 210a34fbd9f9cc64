// Command timestamps measures arrival jitter from the device's own receive
// timestamps: the gaps between consecutive packets as the device (here the
// kernel) stamped them, not as the program happened to read them. With no -i
// it makes its own veth pair and sends -pps packets a second from the other
// end.
//
//	sudo go run ./examples/timestamps -d 3s
//	sudo go run ./examples/timestamps -i veth0 -d 10s
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
	"github.com/packetio/packetio/examples/internal/testbed"
)

func main() {
	b := flag.String("backend", "afpacket", "backend: "+fmt.Sprint(backend.Names()))
	iface := flag.String("i", "", "interface (default: a veth pair in throwaway namespaces, fed from its other end; needs root)")
	d := flag.Duration("d", 5*time.Second, "how long to listen")
	pps := flag.Int("pps", 1000, "packets per second the feeder sends on its own veth pair")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: timestamps [flags]\n\nPrints the distribution of gaps between packet arrivals, from the device's\nreceive timestamps. Exit status: 0 on success, 1 on failure (also when the\ndevice does not stamp), 2 for bad flags.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *d <= 0 || *pps < 1 || *pps > 100000 {
		fmt.Fprintln(os.Stderr, "timestamps: -d must be positive and -pps 1 to 100000")
		os.Exit(2)
	}
	ctx, stop := testbed.Interrupted()
	defer stop()
	if _, err := run(ctx, *b, *iface, *d, *pps, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "timestamps:", err)
		os.Exit(1)
	}
}

// gaps is the result: the sorted gaps between consecutive stamps.
type gaps []time.Duration

func run(ctx context.Context, b, iface string, d time.Duration, pps int, w io.Writer) (gaps, error) {
	bed, err := testbed.Setup(iface, w)
	if err != nil {
		return nil, err
	}
	defer bed.Close()
	dev, err := bed.Open(func(name string) (packetio.Device, error) {
		return backend.Open(b, name, backend.Config{TxQueues: 1, RxQueues: 1})
	})
	if err != nil {
		return nil, err
	}
	rx, ok := dev.RxQueue(0).(packetio.TimestampReceiver)
	if !ok || !dev.Capabilities().RxTimestamps {
		return nil, fmt.Errorf("%s does not stamp arrivals (Capabilities().RxTimestamps is false)", b)
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if bed.Own() {
		feeder, err := bed.OpenPeer(func(name string) (packetio.Device, error) {
			return backend.Open("afpacket", name, backend.Config{TxQueues: 1, RxQueues: 0})
		})
		if err != nil {
			return nil, err
		}
		go feed(ctx, feeder.TxQueue(0), pps)
		fmt.Fprintf(w, "sending %d packets a second from %s\n", pps, bed.Peer)
	}
	fmt.Fprintf(w, "listening on %s for %v\n", bed.Name, d)
	var out gaps
	var last uint64
	rx.Fill(rx.NumFreeFillSlots())
	for ctx.Err() == nil {
		if _, err := rx.Poll(100 * time.Millisecond); err != nil {
			return nil, err
		}
		descs, stamps := rx.ReceiveTimestamps(256)
		for _, ts := range stamps {
			// A stamp older than the last (arrival order is not
			// delivery order) is skipped and moves nothing.
			if last != 0 && ts > last {
				out = append(out, time.Duration(ts-last))
			}
			if ts > last {
				last = ts
			}
		}
		rx.Recycle(descs)
		rx.Fill(rx.NumFreeFillSlots())
	}
	if len(out) == 0 {
		return nil, errors.New("fewer than two packets arrived")
	}
	slices.Sort(out)
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	fmt.Fprintf(w, "%d packets, %d gaps, in milliseconds: shortest %.3f  median %.3f  p99 %.3f  longest %.3f\n",
		len(out)+1, len(out), ms(out[0]), ms(out[len(out)/2]), ms(out[len(out)*99/100]), ms(out[len(out)-1]))
	return out, nil
}

// feed sends one 60-byte frame every 1/pps seconds until ctx ends.
func feed(ctx context.Context, tx packetio.TxQueue, pps int) {
	spec := frame.Spec{SrcMAC: net.HardwareAddr{2, 0x70, 0x69, 0x6f, 0, 2}, DstMAC: net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		SrcIP: netip.MustParseAddr("10.99.0.2"), DstIP: netip.MustParseAddr("10.99.0.1"), SrcPort: 1024, DstPort: 9, Size: 60}
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
