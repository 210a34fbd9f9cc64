// Command info opens a device and prints what it is: the backend's
// capabilities, the queues and frame region it got, and its counters, and
// on afxdp what the datapath decided (mode, zero-copy, filter, stamp
// clock, host tuning). It transmits nothing, and on a backend that steers
// it takes nothing from the kernel: its filter names an EtherType nobody
// sends.
//
//	sudo go run ./examples/info
//	sudo go run ./examples/info -backend afxdp -queues 2
//	sudo go run ./examples/info -i veth0 -queues 2
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/testbed"
)

// unused is the EtherType info's filter names on a backend that steers: the
// second IEEE 802 local experimental one, which nothing here sends, so
// opening receive queues takes nothing away from the kernel.
const unused = 0x88b6

func main() {
	b := flag.String("backend", "afpacket", "backend: "+fmt.Sprint(backend.Names()))
	iface := flag.String("i", "", "interface (default: a veth pair in throwaway namespaces, needs root)")
	queues := flag.Int("queues", 1, "queues each way")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: info [flags]\n\nOpens a device and prints its capabilities, queues, region and counters.\nExit status: 0 on success, 1 if the device cannot be opened, 2 for bad flags.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *queues < 1 || *queues > 64 {
		fmt.Fprintln(os.Stderr, "info: -queues 1 to 64")
		os.Exit(2)
	}
	if err := run(*b, *iface, *queues, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "info:", err)
		os.Exit(1)
	}
}

func run(b, iface string, queues int, out io.Writer) error {
	bed, err := testbed.Setup(iface, out, testbed.WithQueues(queues))
	if err != nil {
		return err
	}
	defer bed.Close()
	steer := backend.Steering(b, packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchEtherType(unused)}})
	d, err := bed.Open(func(name string) (packetio.Device, error) {
		return backend.Open(b, name, backend.Config{TxQueues: queues, RxQueues: queues, Steering: steer})
	})
	if err != nil {
		return err
	}
	c := d.Capabilities()
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	yes := func(v bool) string {
		if v {
			return "yes"
		}
		return "no"
	}
	row := func(k string, v any) { fmt.Fprintf(w, "%s\t%v\n", k, v) }
	row("interface", bed.Name)
	row("backend", c.Backend)
	if s, ok := d.(fmt.Stringer); ok {
		row("device", s)
	}
	row("queues", fmt.Sprintf("%d transmit, %d receive (at most %d)", d.NumTxQueues(), d.NumRxQueues(), c.MaxQueues))
	r := d.TxQueue(0).Region()
	row("region", fmt.Sprintf("%d frames of %d bytes (%.1f MiB), shared by every queue: %s", r.NumFrames(), r.FrameSize(), float64(len(r.Bytes()))/(1<<20), yes(c.SharedRegion)))
	row("largest packet per frame", fmt.Sprintf("%d bytes", c.MaxFrameSize))
	row("zero-copy", yes(c.ZeroCopy))
	row("kernel keeps the interface", yes(c.KernelCoexistence))
	row("Reclaim names frames", yes(c.HandsBackFrames))
	row("blocking Poll", yes(c.BlockingPoll))
	row("flow hash over queues (RSS)", yes(c.RSS))
	row("packets across frames", yes(c.MultiBuffer))
	row("offload metadata both ways", yes(c.Offload))
	row("transmit checksum offload", yes(c.TxChecksumOffload))
	row("receive checksum flags", yes(c.RxChecksumFlags))
	row("gather transmit", yes(c.GatherTx))
	row("receive timestamps", yes(c.RxTimestamps))
	if backend.Steers(b) {
		row("steering", steer.String()+" (nothing here sends it: info takes nothing from the kernel)")
	}
	if x, ok := d.(*afxdp.Device); ok {
		xdpRows(row, x)
	}
	for i := 0; i < d.NumTxQueues(); i++ {
		q := d.TxQueue(i)
		row(fmt.Sprintf("tx %d", i), fmt.Sprintf("%d free frames, %d free slots", q.NumFreeFrames(), q.NumFreeSlots()))
	}
	for i := 0; i < d.NumRxQueues(); i++ {
		q := d.RxQueue(i)
		s, err := q.Stats()
		if err != nil {
			return err
		}
		row(fmt.Sprintf("rx %d", i), fmt.Sprintf("%d free frames, %d free fill slots, %d dropped so far", q.NumFreeFrames(), q.NumFreeFillSlots(), s.Dropped))
	}
	return w.Flush()
}

// xdpRows is what the AF_XDP datapath decided, from its Info.
func xdpRows(row func(string, any), d *afxdp.Device) {
	in := d.Info()
	zc := "no (copy mode: the kernel copies each frame into the region)"
	if in.ZeroCopy {
		zc = "yes"
	}
	drv := in.Driver
	if drv == "" {
		drv = "none reported"
	}
	row("XDP mode", fmt.Sprintf("%s, driver %s, %d of %d queues bound", in.Mode, drv, in.Queues, in.QueuesTotal))
	row("XDP zero-copy", zc)
	row("XDP filter", in.Filter)
	stamps := in.Timestamps
	if stamps == "off" {
		stamps = "off (afxdp.WithTimestamps turns them on)"
	}
	row("arrival stamps", stamps)
	row("busy-poll", in.BusyPoll)
	tuning := "none (nothing on the host changed)"
	if len(in.Tuning) > 0 {
		tuning = strings.Join(in.Tuning, "; ") + " (restored on Close)"
	}
	row("host tuning", tuning)
	if in.Affinity != "" {
		row("worker placement", in.Affinity)
	}
	for _, dec := range in.Decisions {
		row("decision", dec)
	}
	for _, t := range in.Tried {
		row("tried first", t)
	}
	row("afxdp Info", in.String())
}
