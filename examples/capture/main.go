// Command capture writes what a packetio device receives to a pcapng file:
// nanosecond stamps (if_tsresol 9), one interface description block per
// receive queue ("veth0 queue 1"), and at the end an interface statistics
// block per queue with the queue's received and dropped counters.
//
// Its first line says what runs (backend, interface, queues, mode), where
// the filter runs and where the stamps come from. An optional tcpdump
// expression (-f, or the arguments after the flags) is compiled by
// filter/pcapfilter: on afxdp it becomes the XDP program's steering, run in
// the kernel, and the frames it matches are taken from the kernel's stack;
// on the other backends (afpacket is a tap) it runs in user space, in
// golang.org/x/net/bpf's VM, on each frame received.
//
// Stamps are the backend's arrival stamps where it has them (afpacket: the
// kernel's CLOCK_REALTIME; afxdp: CLOCK_MONOTONIC at the XDP hook, moved to
// the Unix epoch by the offset between the two clocks read once at start);
// elsewhere the host's clock when Receive returned, once per batch, which
// the first line and each interface's description say.
//
// With no -i it makes its own veth pair and feeds it from the peer's kernel
// as examples/drop does (60-byte UDP frames to an address nobody owns). It
// prints a line per second (packets, bytes, drops) and stops on Ctrl-C
// (SIGINT, SIGTERM), -count or -duration with the file flushed and closed.
//
//	sudo go run ./examples/capture -w /tmp/x.pcapng -duration 5s
//	sudo go run ./examples/capture -backend afxdp -i veth0 -w x.pcapng udp port 53
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
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/live"
	"github.com/packetio/packetio/examples/internal/metrics"
	"github.com/packetio/packetio/examples/internal/pcapfile"
	"github.com/packetio/packetio/examples/internal/stamp"
	"github.com/packetio/packetio/examples/internal/testbed"
	"github.com/packetio/packetio/filter/pcapfilter"
)

type options struct {
	backend, iface, out, expr string
	queues, batch, snaplen    int
	count                     uint64
	duration, report          time.Duration
	feedPPS                   float64 // the own pair's feeder rate, 0: flat out

	// Tests: a bed to use instead of Setup, and started once the device
	// is open instead of the in-kernel feeder.
	bed  *testbed.Bed
	feed func(ctx context.Context) error
}

func main() {
	var o options
	flag.StringVar(&o.backend, "backend", "afpacket", "backend: "+fmt.Sprint(backend.Names()))
	flag.StringVar(&o.iface, "i", "", "interface (default: a veth pair in throwaway namespaces fed by the in-kernel generator; needs root and BPF)")
	flag.StringVar(&o.out, "w", "capture.pcapng", "pcapng file to write")
	flag.StringVar(&o.expr, "f", "", "tcpdump filter expression (also: the arguments after the flags)")
	flag.IntVar(&o.queues, "queues", 1, "receive queues, one worker and one interface block each")
	flag.IntVar(&o.batch, "batch", 64, "most packets per Receive call")
	flag.IntVar(&o.snaplen, "snaplen", pcapfile.DefaultSnapLen, "bytes kept of each frame")
	flag.Uint64Var(&o.count, "count", 0, "stop after this many packets (0: no limit)")
	flag.DurationVar(&o.duration, "duration", 0, "stop after this long (0: until Ctrl-C)")
	flag.DurationVar(&o.report, "report", time.Second, "interval between report lines")
	testbed.Main("capture", "usage: capture [flags] [tcpdump expression]\n\nWrites what a device receives to a pcapng file. Ctrl-C stops it with the\nfile complete. Exit status: 0 on success, 1 if the device failed, 2 for bad flags.\n\n", func() error {
		if flag.NArg() > 0 {
			if o.expr != "" {
				return errors.New("a filter both in -f and as arguments")
			}
			o.expr = strings.Join(flag.Args(), " ")
		}
		return o.check()
	}, func(ctx context.Context) error {
		_, err := run(ctx, o, os.Stdout)
		return err
	})
}

func (o options) check() error {
	if o.queues < 1 || o.queues > 64 || o.batch < 1 || o.batch > 4096 || o.snaplen < 1 || o.duration < 0 || o.report <= 0 || o.out == "" {
		return errors.New("-queues 1-64, -batch 1-4096, -snaplen at least 1, -duration not negative, positive -report, and a -w file")
	}
	if o.expr != "" {
		if _, err := pcapfilter.Compile(o.expr); err != nil {
			return fmt.Errorf("filter: %w", err)
		}
	}
	return nil
}

type result struct {
	packets, bytes, dropped, filtered uint64
	first                             string
}

// unowned and discardPort: where the own pair's feeder sends, as drop's.
var unowned = netip.MustParseAddr("10.99.1.1")

const discardPort = 9

// kernelFilter reports whether the filter runs in the kernel.
func (o options) kernelFilter() bool { return o.expr != "" && o.backend == "afxdp" }

func (o options) open(cfg backend.Config) func(string) (packetio.Device, error) {
	if !o.kernelFilter() {
		return func(name string) (packetio.Device, error) { return backend.Open(o.backend, name, cfg) }
	}
	return func(name string) (packetio.Device, error) {
		return afxdp.Open(name, afxdp.WithQueues(cfg.RxQueues), afxdp.WithMatch(pcapfilter.Match(o.expr)), afxdp.WithTimestamps())
	}
}

// clock says how a queue's stamps become Unix nanoseconds: add offset to
// the device's stamp, or, when host, read the host clock per batch.
type clock struct {
	host   bool
	offset int64
	says   string
}

func clockOf(d packetio.Device) clock {
	c := stamp.Of(d)
	if !d.Capabilities().RxTimestamps || !c.Comparable() {
		return clock{host: true, says: "stamps: the host clock when Receive returned (" + d.Capabilities().Backend + " gives none this program can place on the Unix epoch)"}
	}
	off := time.Now().UnixNano() - int64(c.Now())
	if strings.HasPrefix(c.Name, "CLOCK_REALTIME") {
		off = 0
	}
	return clock{offset: off, says: "stamps: the backend's, " + c.Name}
}

func run(ctx context.Context, o options, w io.Writer) (result, error) {
	if err := o.check(); err != nil {
		return result{}, err
	}
	var setup bytes.Buffer
	bed := o.bed
	if bed == nil {
		var err error
		if bed, err = testbed.Setup(o.iface, &setup, testbed.WithQueues(o.queues)); err != nil {
			return result{}, err
		}
		defer bed.Close()
	}
	cfg := backend.Config{TxQueues: 1, RxQueues: o.queues, Stamps: o.backend == "afxdp"}
	d, err := bed.Open(o.open(cfg))
	if err != nil {
		return result{}, err
	}
	clk := clockOf(d)
	var uf *pcapfile.Filter
	where := "no filter"
	switch {
	case o.kernelFilter():
		where = fmt.Sprintf("filter %q in the kernel (afxdp's XDP program; what it matches is taken from the kernel's stack)", o.expr)
	case o.expr != "":
		if uf, err = pcapfile.NewFilter(o.expr); err != nil {
			return result{}, err
		}
		where = fmt.Sprintf("filter %q in user space (golang.org/x/net/bpf's VM)", o.expr)
	}
	file, err := os.Create(o.out)
	if err != nil {
		return result{}, err
	}
	defer file.Close()
	ifaces := make([]pcapfile.Iface, d.NumRxQueues())
	for q := range ifaces {
		ifaces[q] = pcapfile.Iface{Name: fmt.Sprintf("%s queue %d", bed.Name, q), Filter: o.expr,
			Description: fmt.Sprintf("packetio %s receive queue %d; %s", o.backend, q, clk.says)}
	}
	pw, err := pcapfile.NewWriter(file, "packetio examples/capture", o.snaplen, ifaces)
	if err != nil {
		return result{}, err
	}

	line := backend.Line{Program: "capture", Backend: o.backend, Iface: bed.Name, Dev: d, Config: cfg, Rx: true, Batch: o.batch}
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var feeder *live.Feeder
	switch {
	case o.feed != nil:
		line.Feed = "fed by the test"
	case bed.Own():
		if feeder, err = live.NewUDPFeeder(bed, unowned, discardPort, o.queues, live.NativeXDP(d)); err != nil {
			return result{}, err
		}
		defer feeder.Close()
		line.Feed = fmt.Sprintf("%s, 60-byte UDP to %s port %d", feeder, unowned, discardPort)
	default:
		line.Feed = "fed by whatever arrives on " + bed.Name
	}
	res := result{first: fmt.Sprintf("%s; %s; %s; writing %s, pcapng, ns stamps, one interface block per queue, snaplen %d", line, where, clk.says, o.out, o.snaplen)}
	fmt.Fprintln(w, res.first)
	w.Write(setup.Bytes())

	c := capturer{w: pw, f: uf, clk: clk, batch: o.batch, limit: o.count, stop: cancel}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, d.NumRxQueues()+1)
	for q := 0; q < d.NumRxQueues(); q++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.receive(ctx, d.RxQueue(q), q); err != nil {
				errs <- fmt.Errorf("queue %d: %w", q, err)
				cancel()
			}
		}()
	}
	switch {
	case o.feed != nil:
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := o.feed(ctx); err != nil {
				errs <- fmt.Errorf("feed: %w", err)
			}
		}()
	case feeder != nil:
		feeder.Start(ctx, o.feedPPS)
	}
	sample := func() (uint64, string) {
		p, b, dr := totals(d)
		return c.written.Load(), fmt.Sprintf("; received %d packets %d bytes, %d dropped by the kernel or NIC, %d filtered out", p, b, dr, c.filtered.Load())
	}
	rerr := metrics.Every(ctx, w, o.report, sample)
	if feeder != nil {
		if err := feeder.Stop(); err != nil {
			errs <- fmt.Errorf("feeder: %w", err)
		}
	}
	cancel()
	wg.Wait()
	end := time.Now()
	for q := 0; q < d.NumRxQueues(); q++ {
		s, _ := d.RxQueue(q).Stats()
		res.dropped += s.Dropped
		if err := pw.Stats(q, start, end, s.Packets, s.Dropped); err != nil && rerr == nil {
			rerr = err
		}
	}
	res.packets, res.bytes, res.filtered = c.written.Load(), c.bytes.Load(), c.filtered.Load()
	werr := c.err
	if err := pw.Flush(); err != nil && werr == nil {
		werr = err
	}
	if err := file.Close(); err != nil && werr == nil {
		werr = err
	}
	fmt.Fprintf(w, "total: %d packets (%d bytes) written to %s, %d filtered out, %d dropped by the kernel or NIC\n", res.packets, res.bytes, o.out, res.filtered, res.dropped)
	close(errs)
	return res, errors.Join(rerr, werr, errors.Join(collect(errs)...))
}

func collect(c chan error) []error {
	var es []error
	for e := range c {
		es = append(es, e)
	}
	return es
}

func totals(d packetio.Device) (p, b, dr uint64) {
	for q := 0; q < d.NumRxQueues(); q++ {
		s, _ := d.RxQueue(q).Stats()
		p, b, dr = p+s.Packets, b+s.Bytes, dr+s.Dropped
	}
	return
}

// capturer is what the queues' workers share: the file, under mu.
type capturer struct {
	mu    sync.Mutex
	w     *pcapfile.Writer
	err   error // the first write error, under mu
	f     *pcapfile.Filter
	clk   clock
	batch int
	limit uint64
	stop  context.CancelFunc

	written, bytes, filtered atomic.Uint64
}

// receive is one queue's loop: one lock and, without device stamps, one
// host clock read per batch; no allocation per packet.
func (c *capturer) receive(ctx context.Context, rx packetio.RxQueue, q int) error {
	ts, _ := rx.(packetio.TimestampReceiver)
	if c.clk.host {
		ts = nil
	}
	reg := rx.Region()
	rx.Fill(rx.NumFreeFillSlots())
	for ctx.Err() == nil {
		if _, err := rx.Poll(100 * time.Millisecond); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		var descs []packetio.Desc
		var stamps []uint64
		if ts != nil {
			descs, stamps = ts.ReceiveTimestamps(c.batch)
		} else {
			descs = rx.Receive(c.batch)
		}
		if len(descs) == 0 {
			continue
		}
		now := time.Now().UnixNano()
		c.mu.Lock()
		for i, d := range descs {
			b := reg.Frame(d)
			if !c.f.Match(b) {
				c.filtered.Add(1)
				continue
			}
			if c.limit > 0 && c.written.Load() >= c.limit {
				c.stop()
				break
			}
			t := now
			if stamps != nil {
				t = int64(stamps[i]) + c.clk.offset
			}
			if err := c.w.Write(q, t, b); err != nil && c.err == nil {
				c.err = err
				c.stop()
				break
			}
			c.bytes.Add(uint64(len(b)))
			if n := c.written.Add(1); c.limit > 0 && n >= c.limit {
				c.stop()
			}
		}
		c.mu.Unlock()
		rx.Recycle(descs)
		rx.Fill(rx.NumFreeFillSlots())
	}
	return nil
}
