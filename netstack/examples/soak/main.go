//go:build linux

// Command soak runs many consecutive TCP echoes through netstack and
// reports every one that stalls.
//
// It needs root. It builds a veth pair between two throwaway network
// namespaces (gone when it exits, even if killed), and for each
// configuration of -configs opens that backend on end A, starts a stack at
// 10.9.0.3 that echoes what it receives, and has the kernel's TCP on end B
// echo -bytes through it -n times, one connection after the other. An
// echo that has not finished -deadline after it started is a stall: soak
// prints the kernel peer's TCP_INFO for the connection and what the stack
// counted during the echo, gives up on that connection and goes on. Per
// configuration it prints the echoes run, completed and stalled, and the
// longest and median echo time; it exits with status 1 if any echo stalled
// or failed.
//
//	sudo go run ./examples/soak                       # 1,000 64 MiB echoes on each configuration
//	sudo go run ./examples/soak -n 200 -configs afxdp,afxdp+rack
//
// A configuration is a backend, afxdp (native mode, the best veth offers),
// afxdp-generic or afpacket (with WithGSO), optionally followed by +rack to
// turn on gVisor's RACK (netstack.Config.RACK). afxdp opens the device with
// WithTxChecksumOffload and turns B's transmit checksum offload off while
// it runs (see the README, "On afxdp").
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afpacket"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/netstack"
	"github.com/packetio/packetio/netstack/afxdpsteer"
	"github.com/packetio/packetio/netstack/examples/internal/connloop"
)

// defaultConfigs is every configuration the issue asks about.
const defaultConfigs = "afxdp,afxdp+rack,afxdp-generic,afxdp-generic+rack,afpacket,afpacket+rack"

// options are soak's flags.
type options struct {
	n        int
	bytes    int64
	deadline time.Duration
	configs  string
	port     int
	mtu      int
}

// config is one configuration of -configs.
type config struct {
	name    string // as -configs spells it
	backend string // afxdp or afpacket
	generic bool   // afxdp in generic mode
	rack    bool   // netstack.Config.RACK
}

// summary is what one configuration's echoes came to.
type summary struct {
	config
	echoes, completed, stalls, failed int
	longest, median                   time.Duration
}

func (s summary) String() string {
	return fmt.Sprintf("%-20s %d echoes, %d completed, %d stalls, %d failed, longest %.2f s, median %.2f s",
		s.name+":", s.echoes, s.completed, s.stalls, s.failed, s.longest.Seconds(), s.median.Seconds())
}

func main() {
	var o options
	flag.IntVar(&o.n, "n", 1000, "echoes per configuration")
	flag.Int64Var(&o.bytes, "bytes", 64<<20, "bytes per echo (each way)")
	flag.DurationVar(&o.deadline, "deadline", 30*time.Second, "an echo not finished this long after it started is a stall")
	flag.StringVar(&o.configs, "configs", defaultConfigs, "comma-separated configurations: afxdp, afxdp-generic or afpacket, each optionally +rack")
	flag.IntVar(&o.port, "port", 8080, "port the stack echoes on")
	flag.IntVar(&o.mtu, "mtu", 0, "the veth pair's MTU and the stack's (0: 1500); above a frame, afxdp opens with multi-buffer and sends chains of frames")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: soak [flags]\n\nConsecutive TCP echoes through netstack on a veth pair; exit status 1 on any stall.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	sums, err := run(o, os.Stdout, true)
	if err == nil {
		err = verdict(sums)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// verdict is an error naming every configuration with a stalled or failed
// echo, or nil.
func verdict(sums []summary) error {
	var bad []string
	for _, s := range sums {
		if s.stalls > 0 || s.failed > 0 || s.completed != s.echoes {
			bad = append(bad, fmt.Sprintf("%s: %d of %d echoes stalled, %d failed", s.name, s.stalls, s.echoes, s.failed))
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// parseConfigs splits -configs and checks every name.
func parseConfigs(s string) ([]config, error) {
	var list []config
	for _, name := range strings.Split(s, ",") {
		c := config{name: name}
		base, plus, rack := strings.Cut(name, "+")
		if rack && plus != "rack" {
			return nil, fmt.Errorf("-configs %q: want +rack or nothing after the backend", name)
		}
		c.rack = rack
		switch base {
		case "afxdp", "afpacket":
			c.backend = base
		case "afxdp-generic":
			c.backend, c.generic = "afxdp", true
		default:
			return nil, fmt.Errorf("-configs %q: want afxdp, afxdp-generic or afpacket, optionally +rack", name)
		}
		if slices.ContainsFunc(list, func(x config) bool { return x.name == name }) {
			return nil, fmt.Errorf("-configs %q: %s twice", s, name)
		}
		list = append(list, c)
	}
	return list, nil
}

// describe says how c runs.
func (c config) describe() string {
	d := "afpacket with WithGSO"
	if c.backend == "afxdp" {
		d = "afxdp native mode, WithTxChecksumOffload, B tx off"
		if c.generic {
			d = "afxdp generic mode, WithTxChecksumOffload, B tx off"
		}
	}
	if c.rack {
		return d + ", RACK on"
	}
	return d + ", RACK off"
}

// run soaks every configuration of o on one veth pair, writing progress
// and each configuration's summary to w (every echo's time too if
// verbose), and returns the summaries. Its error is a failure of the test
// bed, not a stall: a stall is counted in the summary.
func run(o options, w io.Writer, verbose bool) ([]summary, error) {
	if o.n < 1 || o.bytes < 1 || o.deadline <= 0 {
		return nil, fmt.Errorf("-n %d, -bytes %d, -deadline %v: want each positive", o.n, o.bytes, o.deadline)
	}
	configs, err := parseConfigs(o.configs)
	if err != nil {
		return nil, err
	}
	popts := []netns.Option{netns.WithAddrs(netip.MustParsePrefix("10.9.0.1/24"), netip.MustParsePrefix("10.9.0.2/24"))}
	if o.mtu != 0 {
		popts = append(popts, netns.WithMTU(o.mtu))
	}
	pair, err := netns.Create(popts...)
	if err != nil {
		return nil, err
	}
	defer pair.Close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		defer signal.Stop(sig)
		select {
		case <-sig:
			pair.Close()
			os.Exit(130)
		case <-stop:
		}
	}()
	addr := netip.MustParsePrefix("10.9.0.3/24")
	fmt.Fprintf(w, "veth %s (A) <-> %s (B); netstack on A at %s echoes; the kernel on B sends %d MiB per echo, %d echoes per configuration, deadline %v\n",
		pair.A.Link, pair.B.Link, addr.Addr(), o.bytes>>20, o.n, o.deadline)
	txOff := false
	defer func() {
		if txOff {
			pair.B.SetFeature("tx", true)
		}
	}()
	var sums []summary
	for _, c := range configs {
		if off := c.backend == "afxdp"; off != txOff {
			if err := pair.B.SetFeature("tx", !off); err != nil {
				return sums, err
			}
			txOff = off
		}
		fmt.Fprintf(w, "%s: %s\n", c.name, c.describe())
		s, err := soakConfig(o, c, pair, addr, w, verbose)
		if err != nil {
			return sums, fmt.Errorf("%s: %w", c.name, err)
		}
		fmt.Fprintln(w, s)
		sums = append(sums, s)
	}
	if len(sums) > 1 {
		fmt.Fprintln(w, "summary:")
		for _, s := range sums {
			fmt.Fprintln(w, " ", s)
		}
	}
	return sums, nil
}

// open opens c's backend on A, steering the stack's port on addr to it;
// above an MTU of 1500, afxdp takes chains of 4 KiB frames.
func open(c config, pair *netns.Pair, addr netip.Addr, port, mtu int) (packetio.Device, error) {
	var dev packetio.Device
	err := pair.A.Do(func() error {
		var err error
		if c.backend == "afpacket" {
			dev, err = afpacket.Open(pair.A.Link, afpacket.WithGSO())
			return err
		}
		opts, err := afxdpsteer.Traffic{Addrs: []netip.Addr{addr}, TCPPorts: []uint16{uint16(port)}}.Options()
		if err != nil {
			return err
		}
		opts = append(opts, afxdp.WithTxChecksumOffload())
		if c.generic {
			opts = append(opts, afxdp.WithXDP(xdp.WithGenericMode()))
		}
		if mtu > 1500 {
			opts = append(opts, afxdp.WithMultiBuffer(), afxdp.WithFrameSize(4096))
		}
		dev, err = afxdp.Open(pair.A.Link, opts...)
		return err
	})
	return dev, err
}

// soakConfig runs o.n echoes through one stack in configuration c.
func soakConfig(o options, c config, pair *netns.Pair, addr netip.Prefix, w io.Writer, verbose bool) (summary, error) {
	sum := summary{config: c}
	dev, err := open(c, pair, addr.Addr(), o.port, o.mtu)
	if err != nil {
		return sum, err
	}
	defer dev.Close()
	s, err := netstack.New(dev, netstack.Config{Addr: addr, MAC: pair.A.MAC, RACK: c.rack, MTU: o.mtu})
	if err != nil {
		return sum, err
	}
	defer s.Close()
	l, err := s.Listen("tcp4", fmt.Sprintf(":%d", o.port))
	if err != nil {
		return sum, err
	}
	done := make(chan struct{})
	defer func() { l.Close(); <-done }()
	go func() {
		defer close(done)
		connloop.Serve(l, func(c net.Conn) { io.CopyBuffer(c, c, make([]byte, 256<<10)) })
	}()
	target := netip.AddrPortFrom(addr.Addr(), uint16(o.port)).String()
	var times []time.Duration
	for i := 1; i <= o.n; i++ {
		before := s.Stats()
		d, info, err := echo(pair, target, o.bytes, o.deadline)
		sum.echoes++
		switch {
		case err == nil:
			sum.completed++
			times = append(times, d)
			if verbose {
				fmt.Fprintf(w, "  echo %d: %.2f s\n", i, d.Seconds())
			}
		case errors.Is(err, os.ErrDeadlineExceeded):
			sum.stalls++
			fmt.Fprintf(w, "  echo %d STALLED: %v\n    peer (kernel on B): %s\n    stack during the echo: %s\n",
				i, err, info, statsDelta(before, s.Stats()))
		default:
			sum.failed++
			fmt.Fprintf(w, "  echo %d FAILED: %v\n    peer (kernel on B): %s\n    stack during the echo: %s\n",
				i, err, info, statsDelta(before, s.Stats()))
		}
		if err := s.Err(); err != nil {
			return sum, fmt.Errorf("the stack stopped: %w", err)
		}
	}
	if len(times) > 0 {
		slices.Sort(times)
		sum.longest, sum.median = times[len(times)-1], times[len(times)/2]
	}
	return sum, nil
}

// echo connects from B's kernel to target, sends n bytes while reading
// them back, and returns how long that took. If it did not finish within
// deadline (the error wraps os.ErrDeadlineExceeded) or failed, info is the
// kernel socket's TCP_INFO at that moment, with the bytes moved.
func echo(pair *netns.Pair, target string, n int64, deadline time.Duration) (d time.Duration, info string, err error) {
	var c net.Conn
	if err := pair.B.Do(func() error {
		var err error
		c, err = net.DialTimeout("tcp4", target, 5*time.Second)
		return err
	}); err != nil {
		return 0, "not connected", err
	}
	defer c.Close()
	start := time.Now()
	c.SetDeadline(start.Add(deadline))
	var sent int64
	var werr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sent, werr = io.Copy(c, io.LimitReader(connloop.Zeros{}, n))
		if werr == nil {
			werr = c.(*net.TCPConn).CloseWrite()
		}
	}()
	got, rerr := io.CopyBuffer(io.Discard, c, make([]byte, 256<<10))
	d = time.Since(start)
	if rerr == nil && got != n {
		rerr = fmt.Errorf("received %d bytes back, want %d", got, n)
	}
	if rerr != nil {
		// Take the socket's state before the writer gives up too.
		info = fmt.Sprintf("%s; sent %d+, received %d of %d", tcpInfo(c), sent, got, n)
		c.SetDeadline(time.Now())
	}
	wg.Wait()
	if rerr != nil {
		return d, info, fmt.Errorf("after %.1f s: receive: %w", d.Seconds(), rerr)
	}
	if werr != nil {
		return d, fmt.Sprintf("%s; sent %d, received %d of %d", tcpInfo(c), sent, got, n), fmt.Errorf("send: %w", werr)
	}
	return d, "", nil
}

// tcpInfo is the kernel's TCP_INFO for c, the fields that say why a
// connection does not move.
func tcpInfo(c net.Conn) string {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return err.Error()
	}
	var ti *unix.TCPInfo
	var gerr error
	if err := rc.Control(func(fd uintptr) { ti, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil {
		return err.Error()
	}
	if gerr != nil {
		return "TCP_INFO: " + gerr.Error()
	}
	return fmt.Sprintf("state %d, ca_state %d, rto %v, backoff %d, retransmits %d, unacked %d, lost %d, retrans %d, total_retrans %d, "+
		"snd_wnd %d, rcv_wnd %d, snd_cwnd %d, bytes_acked %d, bytes_received %d, last data sent %v ago, last ack received %v ago",
		ti.State, ti.Ca_state, time.Duration(ti.Rto)*time.Microsecond, ti.Backoff, ti.Retransmits, ti.Unacked, ti.Lost, ti.Retrans, ti.Total_retrans,
		ti.Snd_wnd, ti.Rcv_wnd, ti.Snd_cwnd, ti.Bytes_acked, ti.Bytes_received,
		time.Duration(ti.Last_data_sent)*time.Millisecond, time.Duration(ti.Last_ack_recv)*time.Millisecond)
}

// statsDelta is what the stack counted between a and b.
func statsDelta(a, b netstack.Stats) string {
	return fmt.Sprintf("rx %d pkts, tx %d pkts, tx dropped %d (waits %d), bad checksums %d, tcp retransmits %d, resets sent %d, established %d",
		b.RxPackets-a.RxPackets, b.TxPackets-a.TxPackets, b.TxDropped-a.TxDropped, b.TxWaits-a.TxWaits,
		b.RxBadChecksum-a.RxBadChecksum, b.TCPRetransmits-a.TCPRetransmits, b.TCPResetsSent-a.TCPResetsSent, b.TCPCurrentEstablished)
}
