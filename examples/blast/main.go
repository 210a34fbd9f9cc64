// Command blast is a packet generator: one worker per transmit queue builds
// UDP frames straight into the device's frames and sends them as fast as the
// device takes them, or at -pps. Every -report it prints the rate and what it
// costs the whole machine (CPU including soft interrupts). Its first line
// says what runs: backend, interface, queues, the mode the kernel granted,
// need-wakeup, busy-poll, batch, the workers' CPUs, and where the frames go.
//
// With no -i it makes its own veth pair and sends, as the sweep does, to a
// MAC nobody owns (02:70:69:6f:00:99, unless -dst-mac says otherwise): the
// peer's kernel drops each frame at its first look, so what is measured is
// the sender, not the peer's IP stack (on a veth the receiving kernel's work
// runs on the sender's CPU). One worker runs on CPU 1 by default on a
// machine with 2 CPUs or more; -cpu places the workers.
//
// With -live it opens no packetio device: it transmits from inside the
// kernel instead (internal/trafficgen: BPF_PROG_RUN with live frames,
// XDP_TX, one generator per -queues), several times faster than any
// user-space sender on a veth, to feed a receiver under test (drop, l3fwd,
// a receiver of your own) on the other end. A veth passes those frames on
// only while its peer runs a native XDP program (an afxdp receiver) or has
// GRO on: on its own pair blast turns GRO on at the far end, and back off
// when it ends; with -i that is up to the receiver, and blast says when
// nothing would get through.
//
// -busy-poll (afxdp) busy-polls the transmit queues; a flag the backend has
// not got is refused (exit status 2).
//
//	sudo go run ./examples/blast -duration 5s
//	sudo go run ./examples/blast -backend afxdp -queues 2 -cpu 0,1
//	sudo go run ./examples/blast -i veth0 -queues 2 -flows 64 -pps 100000
//	sudo go run ./examples/blast -live -i veth0 -dst-mac 02:00:00:00:00:02 -flows 64
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
	"sync"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/cpus"
	"github.com/packetio/packetio/examples/internal/frame"
	"github.com/packetio/packetio/examples/internal/live"
	"github.com/packetio/packetio/examples/internal/metrics"
	"github.com/packetio/packetio/examples/internal/promserve"
	"github.com/packetio/packetio/examples/internal/testbed"
	"github.com/packetio/packetio/internal/spinwait"
)

type options struct {
	backend, iface string
	size, flows    int
	queues, batch  int
	pps            float64
	duration       time.Duration
	report         time.Duration
	cpu            string
	dstMAC         string
	live, busyPoll bool
	metricsAddr    string // -metrics: serve the counters there
}

func main() {
	var o options
	flag.StringVar(&o.backend, "backend", "afpacket", "backend: "+fmt.Sprint(backend.Names()))
	flag.StringVar(&o.iface, "i", "", "interface (default: a veth pair in throwaway namespaces, needs root)")
	flag.IntVar(&o.size, "size", 60, "frame size in bytes, without the 4-byte FCS")
	flag.IntVar(&o.flows, "flows", 1, "distinct UDP source ports, one flow each")
	flag.IntVar(&o.queues, "queues", 1, "transmit queues, one worker each")
	flag.IntVar(&o.batch, "batch", 256, "frames per SendFunc call")
	flag.Float64Var(&o.pps, "pps", 0, "rate limit in packets per second over all queues (0: as fast as possible)")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "how long to send")
	flag.DurationVar(&o.report, "report", time.Second, "interval between report lines")
	flag.StringVar(&o.cpu, "cpu", "", "CPUs to pin the workers (or -live generators) to, worker i on the i-th, e.g. 1 or 0,1 (default: CPU 1 for one worker on the own pair of a 2+ CPU machine; else the scheduler's choice)")
	flag.StringVar(&o.dstMAC, "dst-mac", "", "destination MAC (default: on the own pair 02:70:69:6f:00:99, which nobody owns; with -i broadcast)")
	flag.BoolVar(&o.busyPoll, "busy-poll", false, fmt.Sprintf("busy-poll the transmit queues (afxdp: SO_BUSY_POLL %dus, budget %d)", backend.BusyPollUsecs, backend.BusyPollBudget))
	flag.BoolVar(&o.live, "live", false, "transmit from inside the kernel (BPF_PROG_RUN live frames, XDP_TX; needs BPF) instead of through a packetio queue: -queues generators, -backend and -batch unused")
	flag.StringVar(&o.metricsAddr, "metrics", "", promserve.Flag)
	testbed.Main("blast", "usage: blast [flags]\n\nSends UDP frames as fast as the device takes them (or at -pps) and reports the\nrate and the machine's CPU; -live sends from inside the kernel instead.\nCtrl-C stops it cleanly.\nExit status: 0 on success, 1 if the device failed, 2 for bad flags.\n\n", func() error { return o.check() }, func(ctx context.Context) error {
		_, err := run(ctx, o, os.Stdout)
		return err
	})
}

func (o options) check() error {
	switch {
	case o.queues < 1 || o.queues > 64:
		return fmt.Errorf("-queues %d: 1 to 64", o.queues)
	case o.flows < 1 || o.flows > 65535:
		return fmt.Errorf("-flows %d: 1 to 65535", o.flows)
	case o.batch < 1 || o.batch > 4096:
		return fmt.Errorf("-batch %d: 1 to 4096", o.batch)
	case o.pps < 0:
		return fmt.Errorf("-pps %v is negative", o.pps)
	case o.duration <= 0 || o.report <= 0:
		return fmt.Errorf("-duration and -report must be positive")
	case o.live && (o.size < 14 || o.size > 3500):
		return fmt.Errorf("-live: -size %d: 14 to 3500 bytes", o.size)
	}
	if o.dstMAC != "" {
		if _, err := net.ParseMAC(o.dstMAC); err != nil {
			return err
		}
	}
	if o.live && o.metricsAddr != "" {
		return errors.New("-metrics: -live opens no packetio device to count")
	}
	if o.live && o.busyPoll {
		return errors.New("-busy-poll: -live opens no packetio device to busy-poll")
	}
	if !o.live {
		if err := backend.CheckFlags(o.backend, backend.Flags{BusyPoll: o.busyPoll}); err != nil {
			return err
		}
	}
	_, err := cpus.Parse(o.cpu)
	return err
}

// sinkMAC is where blast sends on its own pair by default: a MAC nobody
// owns, so the peer's kernel drops each frame at its first look (the
// sweep's sink). sinkIP is the address the frames carry.
var (
	sinkMAC = net.HardwareAddr{0x02, 0x70, 0x69, 0x6f, 0x00, 0x99}
	sinkIP  = netip.MustParseAddr("10.99.0.3")
)

// target is the destination MAC and address, and what the first line says
// of them.
func (o options) target(bed *testbed.Bed) (net.HardwareAddr, netip.Addr, string) {
	switch {
	case o.dstMAC != "":
		mac, _ := net.ParseMAC(o.dstMAC)
		return mac, testbed.AddrB.Addr(), "to " + mac.String() + " (-dst-mac)"
	case bed.Own():
		return sinkMAC, sinkIP, fmt.Sprintf("to %s, a MAC nobody owns: %s's kernel drops each frame at its first look", sinkMAC, bed.Peer)
	}
	mac := net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	return mac, testbed.AddrB.Addr(), "broadcast on " + bed.Name
}

// result is what a run did, for the caller and the tests.
type result struct {
	packets uint64
	errors  uint64
	first   string // the first line
}

func run(ctx context.Context, o options, w io.Writer) (result, error) {
	// What Setup did is said after the first line.
	var setup bytes.Buffer
	bed, err := testbed.Setup(o.iface, &setup, testbed.WithQueues(o.queues))
	if err != nil {
		return result{}, err
	}
	defer bed.Close()
	workers, err := cpus.Parse(o.cpu)
	if err != nil {
		return result{}, err
	}
	if o.cpu == "" && bed.Own() && o.queues == 1 {
		workers = cpus.Measured()
	}
	dst, dstIP, where := o.target(bed)
	spec := frame.Spec{SrcMAC: net.HardwareAddr{0x02, 0x70, 0x69, 0x6f, 0, 1}, DstMAC: dst,
		SrcIP: testbed.AddrA.Addr(), DstIP: dstIP, SrcPort: 1024, DstPort: 9, Size: o.size}
	if err := spec.Check(); err != nil {
		return result{}, err
	}
	what := fmt.Sprintf("sending %d-byte UDP frames (%d on the wire with FCS), %d flow(s), %s", spec.Len(), spec.Len()+frame.FCS, o.flows, where)
	if o.live {
		return runLive(ctx, o, bed, spec, workers, what, &setup, w)
	}
	cfg := backend.Config{TxQueues: o.queues, RxQueues: 0, BusyPoll: o.busyPoll}
	d, err := bed.Open(func(name string) (packetio.Device, error) { return backend.Open(o.backend, name, cfg) })
	if err != nil {
		return result{}, err
	}
	res := result{first: backend.Line{Program: "blast", Backend: o.backend, Iface: bed.Name, Dev: d, Config: cfg, Tx: true, Batch: o.batch, CPUs: workers, Feed: what}.String()}
	fmt.Fprintln(w, res.first)
	w.Write(setup.Bytes())
	ms, err := promserve.ForDevice(o.metricsAddr, d, bed.Name, w)
	if err != nil {
		return res, err
	}
	defer ms.Close() // before the device closes

	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var total atomic.Uint64
	errs := make(chan error, d.NumTxQueues())
	var wg sync.WaitGroup
	for q := 0; q < d.NumTxQueues(); q++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cpus.Pin(cpus.For(workers, q)); err != nil {
				errs <- err
				return
			}
			errs <- worker(ctx, d.TxQueue(q), spec, q, o, &total)
		}()
	}
	rerr := metrics.Every(ctx, w, o.report, func() (uint64, string) { return total.Load(), "" })
	cancel() // stop the workers before the device closes
	wg.Wait()
	if rerr != nil {
		return res, rerr
	}
	close(errs)
	for q := 0; q < d.NumTxQueues(); q++ {
		s, _ := d.TxQueue(q).Stats()
		res.packets += s.Packets
		res.errors += s.Errors
	}
	fmt.Fprintf(w, "total: %d packets, %d errors\n", res.packets, res.errors)
	for err := range errs {
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// runLive sends from inside the kernel: one generator per queue, on the
// CPUs of -cpu in turn (or wherever the scheduler puts it).
func runLive(ctx context.Context, o options, bed *testbed.Bed, spec frame.Spec, cpus []int, what string, setup *bytes.Buffer, w io.Writer) (result, error) {
	buf := make([]byte, spec.Len())
	frame.Build(buf, spec)
	var gcpus []int
	for q := 0; q < o.queues && len(cpus) > 0; q++ {
		gcpus = append(gcpus, cpus[q%len(cpus)])
	}
	if len(cpus) == 0 && o.queues > 1 {
		gcpus = make([]int, o.queues)
		for q := range gcpus {
			gcpus[q] = -1
		}
	}
	if bed.Own() {
		// The far end attaches no program: GRO on makes its veth take
		// XDP frames. Put back when blast ends (Close does it too).
		restore, err := bed.PeerGRO(true)
		if err != nil {
			return result{}, err
		}
		defer restore()
		fmt.Fprintf(setup, "GRO on at %s so its veth takes XDP frames (turned back off at the end)\n", bed.Peer)
	}
	var src *live.Source
	err := bed.In(func() (err error) {
		src, err = live.New(bed.Name, buf, live.Flows{Offset: spec.HeaderLen() - 8, N: o.flows}, gcpus)
		return err
	})
	if err != nil {
		return result{}, err
	}
	defer src.Close()
	first := fmt.Sprintf("blast: %s; no packetio device (mode, need-wakeup, busy-poll, stamps n/a), batch sized by the kernel's pace; %s", src, what)
	fmt.Fprintln(w, first)
	w.Write(setup.Bytes())
	ctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	var sent uint64
	var serr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		sent, serr = src.Run(ctx, o.pps)
		cancel() // a generator that failed ends the run
	}()
	base, terr := src.Transmitted()
	rerr := metrics.Every(ctx, w, o.report, func() (uint64, string) {
		// The interface counts frames as they go; Sent moves a batch
		// (a quarter of a second or more) at a time.
		if n, err := src.Transmitted(); terr == nil && err == nil {
			return n - base, ""
		}
		return src.Sent(), ""
	})
	cancel()
	<-done
	fmt.Fprintf(w, "total: %d packets run through the kernel\n", sent)
	if serr != nil {
		return result{packets: sent, first: first}, serr
	}
	return result{packets: sent, first: first}, rerr
}

// worker drives one queue until ctx ends. Flows differ in source port,
// patched into each frame after it is built.
func worker(ctx context.Context, tx packetio.TxQueue, spec frame.Spec, q int, o options, total *atomic.Uint64) error {
	perQueue := o.pps / float64(o.queues)
	start := time.Now()
	var sent uint64
	flow := 0
	l4 := spec.HeaderLen() - 8 // UDP header
	build := func(i int, f []byte) int {
		n := frame.Build(f, spec)
		port := uint16(1024 + (flow+i)%o.flows)
		f[l4], f[l4+1] = byte(port>>8), byte(port)
		return n
	}
	for ctx.Err() == nil {
		batch := o.batch
		if perQueue > 0 {
			due := uint64(time.Since(start).Seconds() * perQueue)
			if due <= sent {
				time.Sleep(time.Duration(float64(time.Second) / perQueue))
				continue
			}
			batch = min(batch, int(due-sent))
		}
		n, err := tx.SendFunc(batch, build)
		if err != nil {
			return fmt.Errorf("queue %d: %w", q, err)
		}
		if n == 0 {
			if err := tx.Err(); err != nil {
				return fmt.Errorf("queue %d: %w", q, err)
			}
			spinwait.Sleep(50 * time.Microsecond) // back-pressure: let the device drain
		}
		flow += n
		sent += uint64(n)
		total.Add(uint64(n))
	}
	return nil
}
