// Command steer shows steering: a device that takes from the kernel only
// the traffic it asked for, while everything else still reaches the
// kernel's own sockets.
//
// With -ports it opens the afxdp backend with a packetio.SteeringFilter
// naming UDP to those ports (packetio.MatchDstPort per port; repeats of a
// kind are alternatives), which the backend compiles into its XDP program,
// and prints what was asked and what was installed. -backend afpacket
// refuses, and says why: AF_PACKET is a tap, the kernel sees every packet
// whatever a socket asks, so it has no steering to give and a filter is
// refused rather than ignored. (-backend dpdk and mlx5 work too in builds
// with their tags.)
//
// With -expr it takes what a tcpdump expression names, compiled in pure Go
// by filter/pcapfilter into the XDP program, through afxdp.WithMatch,
// which stands in for a SteeringFilter and installs the expression alone.
// On a live interface the expression takes exactly what it says: SSH too,
// if it names port 22.
//
// With no -i it needs root and makes its own veth pair between two
// throwaway namespaces, opens the device on one end, opens kernel UDP
// sockets on that end's address for the asked ports and for -other, and
// from the far end sends -n datagrams to each port through a kernel UDP
// socket. It prints what the device took and what the kernel sockets got,
// and exits non-zero unless the asked traffic reached only the device and
// the rest only the kernel (with -expr, "asked" is what the expression
// takes, as golang.org/x/net/bpf's reference interpreter runs its classic
// BPF program over a frame to each port). With -i it prints what arrives
// for -duration, or until Ctrl-C, then a count per kind; Ctrl-C always
// closes the device, detaching its program.
//
//	sudo go run ./examples/steer
//	sudo go run ./examples/steer -ports 53,123
//	sudo go run ./examples/steer -expr 'udp dst port 9000 or (tcp and dst port 8080)'
//	sudo go run ./examples/steer -backend afpacket
//	sudo go run ./examples/steer -i eth1 -ports 4789 -duration 30s
//
// Exit status: 0 on success (Ctrl-C with -i included), 1 if the device
// failed or refused, or (without -i) traffic went the wrong way, 2 for bad
// flags, 130 if Ctrl-C came before the check without -i was done.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/metrics"
	"github.com/packetio/packetio/filter/pcapfilter"
	"github.com/packetio/packetio/internal/netns"
)

type options struct {
	backend  string
	iface    string
	ports    string
	expr     string
	other    uint
	n        int
	duration time.Duration
}

func main() {
	var o options
	flag.StringVar(&o.backend, "backend", "afxdp", "backend: "+strings.Join(backend.Names(), ", ")+" (afpacket refuses: it has no steering)")
	flag.StringVar(&o.iface, "i", "", "interface (default: a veth pair in throwaway namespaces, with test traffic; needs root)")
	flag.StringVar(&o.ports, "ports", "9000,9001", "UDP destination ports to take, comma-separated")
	flag.StringVar(&o.expr, "expr", "", "a tcpdump expression to take instead of -ports (afxdp only)")
	flag.UintVar(&o.other, "other", 9002, "without -i: the port of the traffic that must stay with the kernel")
	flag.IntVar(&o.n, "n", 20, "without -i: datagrams sent to each port")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "with -i: how long to listen (0: until Ctrl-C)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, `usage: steer [-backend B] [-i IFACE] [-ports P,P | -expr EXPR] [flags]

Takes only the traffic asked for (UDP to -ports, or what a tcpdump -expr
names) and shows that the rest still reaches the kernel. Without -i it makes
its own veth pair, sends to the asked ports and to -other, and checks both
sides. Ctrl-C stops it cleanly.
Exit status: 0 on success, 1 on failure, refusal or traffic that went the
wrong way, 2 for bad flags, 130 if interrupted before the check without -i
was done.

`)
		flag.PrintDefaults()
	}
	flag.Parse()
	ports, err := parsePorts(o.ports)
	if err != nil || flag.NArg() > 0 || o.other == 0 || o.other > 65535 || o.n < 1 || o.n > 10000 || o.duration < 0 {
		if err != nil {
			fmt.Fprintln(os.Stderr, "steer:", err)
		}
		fmt.Fprintln(os.Stderr, "steer: -ports 1-65535 each, -other 1-65535, -n 1-10000, -duration not negative")
		os.Exit(2)
	}
	if o.expr != "" {
		if _, err := pcapfilter.Compile(o.expr); err != nil {
			fmt.Fprintln(os.Stderr, "steer: -expr:", err)
			os.Exit(2)
		}
	}
	if o.iface == "" && o.expr == "" && containsPort(ports, uint16(o.other)) {
		fmt.Fprintf(os.Stderr, "steer: -other %d is one of -ports\n", o.other)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, ports, os.Stdout); err != nil {
		if ctx.Err() != nil && o.iface == "" {
			fmt.Fprintln(os.Stderr, "steer: interrupted before the check was done:", err)
			os.Exit(130)
		}
		fmt.Fprintln(os.Stderr, "steer:", err)
		os.Exit(1)
	}
}

func parsePorts(s string) ([]uint16, error) {
	var ports []uint16
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := strconv.ParseUint(f, 10, 16)
		if err != nil || p == 0 {
			return nil, fmt.Errorf("-ports %q: %q is not a port", s, f)
		}
		if !containsPort(ports, uint16(p)) {
			ports = append(ports, uint16(p))
		}
	}
	if len(ports) == 0 {
		return nil, fmt.Errorf("-ports %q names no port", s)
	}
	return ports, nil
}

func containsPort(ports []uint16, p uint16) bool {
	for _, q := range ports {
		if q == p {
			return true
		}
	}
	return false
}

// filterFor is the steering filter of -ports: UDP to any of the ports.
func filterFor(ports []uint16) packetio.SteeringFilter {
	var f packetio.SteeringFilter
	for _, p := range ports {
		f.Match = append(f.Match, packetio.MatchDstPort(packetio.IPProtoUDP, p)...)
	}
	return f
}

func run(ctx context.Context, o options, ports []uint16, w io.Writer) error {
	if o.iface != "" {
		src, err := open(port{name: o.iface}, o, ports, w)
		if err != nil {
			return err
		}
		defer src.close()
		if o.duration > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, o.duration)
			defer cancel()
		}
		counts, err := listen(ctx, src, w)
		printCounts(w, "received", counts)
		return err
	}
	pair, err := netns.Create(netns.WithAddrs(addrA, addrB))
	if err != nil {
		return fmt.Errorf("no -i, and making a veth pair needs root: %w", err)
	}
	defer pair.Close()
	fmt.Fprintf(w, "no -i: made veth pair %s (%s) <-> %s (%s) in two throwaway namespaces\n", pair.A.Link, pair.A.Addr, pair.B.Link, pair.B.Addr)
	_, err = demo(ctx, pair, o, ports, w)
	return err
}

// Addresses of the pair the program makes.
var (
	addrA = netip.MustParsePrefix("10.97.0.1/24")
	addrB = netip.MustParsePrefix("10.97.0.2/24")
)

// source is a device's receive queues.
type source interface {
	numQueues() int
	// receive runs the receive cycle on queue q until ctx ends, giving
	// every frame to fn.
	receive(ctx context.Context, q int, fn func(frame []byte)) error
	close() error
}

// port is an interface and the namespace it is in: one of the pair the
// program made, or (h nil) the program's own.
type port struct {
	name string
	h    *netns.Host
}

func (p port) do(fn func() error) error {
	if p.h == nil {
		return fn()
	}
	return p.h.Do(fn)
}

// open opens the source on p: the backend with -ports, the datapath with
// -expr.
func open(h port, o options, ports []uint16, w io.Writer) (source, error) {
	if o.expr != "" {
		return openExpr(h, o, w)
	}
	f := filterFor(ports)
	fmt.Fprintf(w, "%s on %s\n  asked for: %s\n", o.backend, h.name, f)
	var d packetio.Device
	err := h.do(func() (err error) {
		if o.backend == "afxdp" {
			// Every queue: RSS may put the asked flows on any.
			d, err = afxdp.Open(h.name, afxdp.WithSteering(f), afxdp.WithFrames(2048))
		} else {
			d, err = backend.Open(o.backend, h.name, backend.Config{TxQueues: 1, RxQueues: 1, Steering: f})
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if ad, ok := d.(*afxdp.Device); ok {
		fmt.Fprintf(w, "  installed: XDP program, filter %s (%s mode, %d queue(s))\n", ad.Info().Filter, ad.Info().Mode, d.NumRxQueues())
	} else {
		fmt.Fprintf(w, "  installed: %s steering, %d queue(s)\n", d.Capabilities().Backend, d.NumRxQueues())
	}
	return deviceSource{d}, nil
}

// openExpr opens the afxdp backend steered by the expression alone
// (afxdp.WithMatch).
func openExpr(h port, o options, w io.Writer) (source, error) {
	if o.backend != "afxdp" {
		why := "use -ports with it"
		if o.backend == "afpacket" {
			why = "afpacket has no steering at all (it is a tap: the kernel sees every packet anyway)"
		}
		return nil, fmt.Errorf("-expr is compiled into an XDP program, which only -backend afxdp runs; %s: %w", why, packetio.ErrUnsupported)
	}
	m := pcapfilter.Match(o.expr)
	if err := m.Err(); err != nil {
		return nil, fmt.Errorf("-expr: %w", err)
	}
	fmt.Fprintf(w, "afxdp on %s\n  asked for: tcpdump expression %q\n", h.name, o.expr)
	var d *afxdp.Device
	if err := h.do(func() (err error) {
		d, err = afxdp.Open(h.name, afxdp.WithMatch(m), afxdp.WithFrames(2048))
		return err
	}); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "  installed: XDP program, filter %s (%s mode, %d queue(s))\n", d.Info().Filter, d.Info().Mode, d.NumRxQueues())
	return deviceSource{d}, nil
}

// badDesc reports, at most once a second, descriptors a queue handed out
// that name no bytes of its region: a backend bug, never worth stopping for.
var badDesc = &metrics.Limiter{Every: time.Second}

func logBadDesc(q int, d packetio.Desc) {
	badDesc.Log(func(format string, args ...any) { fmt.Fprintf(os.Stderr, "steer: "+format+"\n", args...) },
		fmt.Errorf("queue %d: descriptor %+v names no bytes of the region; skipped", q, d))
}

type deviceSource struct{ d packetio.Device }

func (s deviceSource) numQueues() int { return s.d.NumRxQueues() }
func (s deviceSource) close() error   { return s.d.Close() }

func (s deviceSource) receive(ctx context.Context, q int, fn func([]byte)) error {
	rx := s.d.RxQueue(q)
	rx.Fill(rx.NumFreeFillSlots())
	for ctx.Err() == nil {
		if _, err := rx.Poll(100 * time.Millisecond); err != nil {
			if errors.Is(err, packetio.ErrClosed) {
				return nil
			}
			return err
		}
		descs := rx.Receive(64)
		for _, d := range descs {
			if f := rx.Region().Frame(d); f != nil {
				fn(f)
			} else {
				logBadDesc(q, d)
			}
		}
		rx.Recycle(descs)
		rx.Fill(rx.NumFreeFillSlots())
	}
	return nil
}

// listen runs a worker per queue until ctx ends, printing the packet rate
// every second, and returns a count per kind of packet (classify).
func listen(ctx context.Context, src source, w io.Writer) (map[string]int, error) {
	var (
		mu     sync.Mutex
		counts = map[string]int{}
		total  int
		wg     sync.WaitGroup
	)
	errs := make(chan error, src.numQueues())
	for q := range src.numQueues() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := src.receive(ctx, q, func(f []byte) {
				k := classify(f)
				mu.Lock()
				counts[k]++
				total++
				mu.Unlock()
			})
			if err != nil {
				errs <- fmt.Errorf("queue %d: %w", q, err)
			}
		}()
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last := 0
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
			mu.Lock()
			n := total
			mu.Unlock()
			fmt.Fprintf(w, "  %d packets/s\n", n-last)
			last = n
		}
	}
	wg.Wait()
	close(errs)
	mu.Lock()
	defer mu.Unlock()
	return counts, <-errs
}

// classify names a frame's kind: "udp/9000", "tcp/22", "ip proto 1",
// "ethertype 0x0806".
func classify(f []byte) string {
	if len(f) < 14 {
		return "runt"
	}
	off, et := 14, binary.BigEndian.Uint16(f[12:])
	if (et == 0x8100 || et == 0x88a8) && len(f) >= 18 {
		off, et = 18, binary.BigEndian.Uint16(f[16:])
	}
	var proto byte
	var l4 []byte
	switch {
	case et == 0x0800 && len(f) >= off+20:
		ihl := int(f[off]&0x0f) * 4
		proto = f[off+9]
		if binary.BigEndian.Uint16(f[off+6:])&0x1fff == 0 && ihl >= 20 && len(f) >= off+ihl {
			l4 = f[off+ihl:]
		}
	case et == 0x86dd && len(f) >= off+40:
		proto, l4 = f[off+6], f[off+40:]
	default:
		return fmt.Sprintf("ethertype %#04x", et)
	}
	if (proto == 6 || proto == 17) && len(l4) >= 4 {
		name := "tcp"
		if proto == 17 {
			name = "udp"
		}
		return fmt.Sprintf("%s/%d", name, binary.BigEndian.Uint16(l4[2:]))
	}
	return fmt.Sprintf("ip proto %d", proto)
}

func printCounts(w io.Writer, what string, counts map[string]int) {
	var keys []string
	total := 0
	for k, n := range counts {
		keys = append(keys, k)
		total += n
	}
	sort.Strings(keys)
	fmt.Fprintf(w, "%s %d packets:\n", what, total)
	for _, k := range keys {
		fmt.Fprintf(w, "  %-20s %d\n", k, counts[k])
	}
}
