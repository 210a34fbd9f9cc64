//go:build linux

// Command tcpecho runs a TCP server or client on netstack over a packetio
// device, and with no -i measures itself against the kernel's own TCP.
//
// With no -i it needs root and builds its own test bed: a veth pair between
// two throwaway network namespaces (gone when it exits, even if killed). On
// end A it opens the backend and starts a stack at 10.9.0.3 serving -mode;
// from end B the kernel's TCP connects to it, moves -bytes and then does
// request/response round trips for -rr. Then it does the same against a
// kernel server on A (10.9.0.1) on the same pair, -runs times each, and
// prints every run and the medians. -backend takes a comma-separated list
// here (afpacket,afxdp): each run measures every backend, then the kernel.
//
// With -i it uses that interface (it touches no other). Without -client it
// serves -mode on -port until interrupted; with -client it connects there,
// runs -mode from the client's side and prints the rate.
//
//	sudo go run ./examples/tcpecho
//	sudo go run ./examples/tcpecho -mode echo -runs 5
//	sudo go run ./examples/tcpecho -i veth0 -ip 192.0.2.10/24 -port 8080
//	sudo go run ./examples/tcpecho -i veth0 -ip 192.0.2.10/24 -client 192.0.2.1:8080 -mode sink
//	sudo go run ./examples/tcpecho -backend afpacket,afxdp -runs 3
//	sudo go run ./examples/tcpecho -backend afpacket,afxdp -mode all -runs 5 -kernel-mtu-packets
//
// -mode is what the server does with a connection: echo sends everything
// back, sink reads and discards, source sends -bytes and closes; in the
// self-test, all does the three in turn in every run of every series. Every
// read and write of a mode, on both ends and for the stack and the kernel
// alike, asks for -buffer bytes (256 KiB by default). The self-test prints
// each stack's median ratio to the kernel measured in the same runs, with
// B's offloads as the stack had them; -kernel-mtu-packets adds the kernel
// sending one packet per segment (A's TSO and GSO off), which is what a
// stack on copy-mode AF_XDP sends.
//
// Addressing: give the stack an address the kernel does not own on that
// interface, with the interface's MAC; tcpecho refuses a kernel-owned
// address unless -force. afpacket is a tap, so the kernel sees every frame
// the stack sees, and with its own address would reset every connection to
// the stack's ports. afxdp takes only what its XDP program steers: the
// stack's port on the stack's address (or, for -client, the server's
// replies to it) and ARP and neighbour discovery for that address (package
// afxdpsteer); with the kernel's address the stack would take the kernel's
// own ARP.
//
// Built with -tags dpdk, -backend dpdk opens DPDK's AF_PACKET driver on
// the interface (a tap, addressed like afpacket; it has a self-test). Built
// with -tags mlx5, -backend mlx5 opens a ConnectX port with one flow rule
// taking IP to the stack's address; ARP stays with the kernel, so the
// stack's neighbours are pinned with -neighbor ip=mac and its peers need a
// static entry for it. It has no self-test: a veth pair is not a ConnectX
// port.
//
// On a veth pair the kernel's end leaves TCP checksums for the "hardware"
// to finish, and an AF_XDP socket delivers such a frame without saying so.
// The self-test therefore turns B's transmit checksum offload off while a
// stack on afxdp (or on afpacket with -no-gso) runs, on again for the
// kernel, and then measures the kernel with it off as well.
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
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afpacket"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/netstack"
	"github.com/packetio/packetio/netstack/afxdpsteer"
	"github.com/packetio/packetio/netstack/examples/internal/connloop"
)

type options struct {
	backend, iface, ip, mac, client, mode, gw string
	neighbors, clientCC                       string
	port, runs, size, conns, many, mtu, buf   int
	bytes                                     int64
	stats, rr, rxSpin, ackDelay               time.Duration
	noGSO, noGRO, force, lowLatency           bool
	generic, noTxCsum, rack, sendEager        bool
	eagerWake, kernelMTUPackets               bool
}

// modes are the transfers of each self-test measurement: -mode, or with
// -mode all sink, source and echo in turn.
func (o options) modes() []string {
	if o.mode == "all" {
		return []string{"sink", "source", "echo"}
	}
	return []string{o.mode}
}

// modeTags is the first byte a self-test client sends, saying which
// transfer the server is to do; 'r' is request/response (echo).
var modeTags = map[string]byte{"sink": 'i', "source": 'o', "echo": 'e'}

const (
	// defaultBuf is -buffer's size when it is not given.
	defaultBuf = 256 << 10
	// maxBuf bounds -buffer: every connection of a measurement allocates
	// one.
	maxBuf = 64 << 20
)

// buffer allocates the buffer of one connection's reads and writes in
// -mode: -buffer bytes, or defaultBuf for the zero value.
func (o options) buffer() []byte {
	if o.buf == 0 {
		return make([]byte, defaultBuf)
	}
	return make([]byte, o.buf)
}

// backends are the values -backend takes in every build.
var backends = []string{"afpacket", "afxdp"}

// tagged holds the backends built behind a build tag, registered by the
// file that needs the tag: dpdk (backend_dpdk.go) and mlx5
// (backend_mlx5.go).
var tagged = map[string]taggedBackend{}

// tags names the build tag of each cgo backend, for the error when it was
// not built in.
var tags = map[string]string{"dpdk": "dpdk", "mlx5": "mlx5"}

// taggedBackend is a backend built behind a build tag.
type taggedBackend struct {
	// open opens the device on iface for a stack at need.Addrs.
	open func(o options, iface string, need afxdpsteer.Traffic) (packetio.Device, error)
	// describe says how it is opened.
	describe string
	// peerTxOff: the device has no receive offload, so the kernel at the
	// other end of a veth must finish its own checksums and segments.
	peerTxOff bool
	// noSelfTest, when set, says why the backend cannot run on a veth
	// pair.
	noSelfTest string
	// pinNeighbors, when set, says why the stack cannot resolve its
	// neighbours on this backend: -neighbor is then required.
	pinNeighbors string
}

// backendNames lists every backend this build takes.
func backendNames() []string {
	names := slices.Clone(backends)
	for n := range tagged {
		names = append(names, n)
	}
	slices.Sort(names[len(backends):])
	return names
}

// backendList splits -backend and checks every name.
func backendList(s string) ([]string, error) {
	var list []string
	for _, b := range strings.Split(s, ",") {
		if _, ok := tagged[b]; !ok && !slices.Contains(backends, b) {
			if tag, ok := tags[b]; ok {
				return nil, fmt.Errorf("-backend %s: not built in: build tcpecho with -tags %s (it needs cgo and the %s libraries)", b, tag, b)
			}
			return nil, fmt.Errorf("-backend %q: want one of %s (or, for the self-test, a comma-separated list of them)", b, strings.Join(backendNames(), ", "))
		}
		if slices.Contains(list, b) {
			return nil, fmt.Errorf("-backend %q: %s twice", s, b)
		}
		list = append(list, b)
	}
	return list, nil
}

func main() {
	var o options
	flag.StringVar(&o.backend, "backend", "afpacket", "packetio backend: "+strings.Join(backendNames(), ", ")+" (self-test: a comma-separated list)")
	flag.StringVar(&o.iface, "i", "", "interface (default: make a veth pair in throwaway namespaces and measure)")
	flag.StringVar(&o.ip, "ip", "", "the stack's address with prefix length, e.g. 192.0.2.10/24 (required with -i)")
	flag.StringVar(&o.mac, "mac", "", "the stack's MAC (default: the interface's)")
	flag.StringVar(&o.gw, "gw", "", "default gateway")
	flag.StringVar(&o.neighbors, "neighbor", "", "pinned neighbours, ip=mac[,ip=mac...]: never resolved by ARP or ND (required on mlx5)")
	flag.IntVar(&o.port, "port", 8080, "port to serve on")
	flag.StringVar(&o.client, "client", "", "connect to host:port instead of serving")
	flag.Int64Var(&o.bytes, "bytes", 64<<20, "bytes to move per measurement (and per source connection)")
	flag.StringVar(&o.mode, "mode", "sink", "echo, sink or source (self-test: or all, the three in turn in every run of every series)")
	flag.DurationVar(&o.stats, "stats", 0, "print the stack's counters this often (0: at the end only, self-test)")
	flag.DurationVar(&o.rr, "rr", 2*time.Second, "self-test: request/response round trips for this long (0: skip)")
	flag.IntVar(&o.size, "size", 64, "request and response size for -rr")
	flag.IntVar(&o.buf, "buffer", 0, "bytes every read and write of -mode asks for, on both ends, the stack's and the kernel's alike (0: 256 KiB)")
	flag.IntVar(&o.conns, "conns", 1, "self-test: connections doing round trips at once for -rr")
	flag.IntVar(&o.many, "many", 0, "self-test: N connections open at once, each moving -bytes (default 1 MiB here) in -mode; all must complete; reports memory per connection")
	flag.StringVar(&o.clientCC, "client-cc", "", "self-test: TCP congestion control of the kernel's client sockets on B, e.g. cubic (empty: the host's default, net.ipv4.tcp_congestion_control)")
	flag.IntVar(&o.runs, "runs", 3, "self-test: runs of each measurement")
	flag.BoolVar(&o.noGSO, "no-gso", false, "afpacket: open without PACKET_VNET_HDR; the stack cuts its own segments")
	flag.BoolVar(&o.force, "force", false, "accept an -ip the kernel owns on -i")
	flag.IntVar(&o.mtu, "mtu", 0, "self-test: the veth pair's MTU and the stack's (0: 1500); above a frame, afxdp opens with multi-buffer and sends chains of frames")
	flag.BoolVar(&o.rack, "rack", false, "use gVisor's RACK-TLP loss detection (netstack.Config.RACK)")
	flag.BoolVar(&o.noGRO, "no-gro", false, "do not merge received TCP segments before the stack")
	flag.BoolVar(&o.lowLatency, "low-latency", true, "afpacket: TPACKET_V2 rings woken per packet (WithLowLatency); -low-latency=false: TPACKET_V3 blocks handed over when full or 1 ms after their first packet")
	flag.DurationVar(&o.rxSpin, "rx-spin", 0, "netstack.Config.RxSpin: how long a busy receive queue is looked at before the goroutine sleeps (0: the default, negative: never)")
	flag.DurationVar(&o.ackDelay, "ack-delay", 0, "netstack.Config.AckDelay: how long an answering connection holds an ACK for its reply to carry (0: the default, negative: never)")
	flag.BoolVar(&o.sendEager, "send-eager", false, "netstack.Config.SendEager: send every opening of the window at once instead of waiting for a third of the window while data is in flight")
	flag.BoolVar(&o.kernelMTUPackets, "kernel-mtu-packets", false, "self-test: also measure the kernel with A's segmentation offloads (TSO and GSO) and B's transmit offloads off, so that A sends one MTU-sized packet per segment as copy-mode AF_XDP does")
	flag.BoolVar(&o.eagerWake, "eager-wake", false, "netstack.Config.EagerWake: start an idle thread for every goroutine a received segment wakes instead of letting it run on the waking thread")
	flag.BoolVar(&o.generic, "generic", false, "afxdp: attach in generic (SKB) mode instead of the best the driver offers")
	flag.BoolVar(&o.noTxCsum, "no-tx-csum", false, "afxdp: compute TCP checksums in the stack instead of asking the device (WithTxChecksumOffload)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: tcpecho [flags]\n\nTCP over netstack over packetio; with no -i, a measurement against the kernel on a veth pair.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "tcpecho:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "tcpecho:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	list, err := backendList(o.backend)
	if err == nil {
		err = manyDefaults(&o)
	}
	// single: the self-test's single transfers, which -mode all and
	// -kernel-mtu-packets are for.
	single := o.iface == "" && o.many == 0
	switch {
	case err != nil:
	case o.mode == "all" && !single:
		err = errors.New("-mode all: for the self-test's single transfers (no -i, no -many)")
	case o.mode != "all" && o.mode != "echo" && o.mode != "sink" && o.mode != "source":
		err = fmt.Errorf("-mode %q: want echo, sink, source or all", o.mode)
	case o.kernelMTUPackets && !single:
		err = errors.New("-kernel-mtu-packets: for the self-test's single transfers (no -i, no -many)")
	case o.buf < 0 || o.buf > maxBuf:
		err = fmt.Errorf("-buffer %d: want 1 to %d bytes (0: %d)", o.buf, maxBuf, defaultBuf)
	case o.iface != "" && o.clientCC != "":
		err = fmt.Errorf("-client-cc %s: for the self-test's kernel clients (no -i)", o.clientCC)
	case o.iface != "" && len(list) > 1:
		err = fmt.Errorf("-backend %s: one backend with -i; a list is for the self-test", o.backend)
	case o.iface == "":
		err = selfTest(o)
	case o.client != "":
		err = runClient(o)
	default:
		err = runServer(o)
	}
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "tcpecho:", err)
		os.Exit(1)
	}
}

// open opens backend on the interface named, in the calling thread's
// network namespace. need is what the stack will receive, for afxdp's
// steering; afpacket, a tap, ignores it.
func open(o options, backend, iface string, need afxdpsteer.Traffic) (packetio.Device, error) {
	if tb, ok := tagged[backend]; ok {
		return tb.open(o, iface, need)
	}
	if backend == "afxdp" {
		opts, err := need.Options()
		if err != nil {
			return nil, err
		}
		if !o.noTxCsum {
			opts = append(opts, afxdp.WithTxChecksumOffload())
		}
		if o.generic {
			opts = append(opts, afxdp.WithXDP(xdp.WithGenericMode()))
		}
		if o.mtu > 1500 {
			// Jumbo packets as chains of page-sized frames: three
			// frames for 9,000 bytes.
			opts = append(opts, afxdp.WithMultiBuffer(), afxdp.WithFrameSize(4096))
		}
		return afxdp.Open(iface, opts...)
	}
	var opts []afpacket.Option
	if !o.noGSO {
		opts = append(opts, afpacket.WithGSO())
	}
	if o.lowLatency {
		opts = append(opts, afpacket.WithLowLatency())
	}
	return afpacket.Open(iface, opts...)
}

// describe says how backend is opened.
func describe(o options, backend string) string {
	if tb, ok := tagged[backend]; ok {
		return tb.describe
	}
	if backend == "afxdp" {
		d := "afxdp, best mode the driver offers"
		if o.generic {
			d = "afxdp, generic mode"
		}
		if o.noTxCsum {
			return d + ", stack segments and checksums"
		}
		return d + ", stack segments, device checksums"
	}
	d := backend + ", kernel segments (GSO)"
	if o.noGSO {
		d = backend + ", stack segments"
	}
	if !o.lowLatency {
		d += ", TPACKET_V3 receive blocks"
	}
	return d
}

// deviceLine is what the device took, where the backend reports more than
// Capabilities.
func deviceLine(dev packetio.Device) string {
	c := dev.Capabilities()
	line := fmt.Sprintf("%s: %d queue(s), frames of %d bytes, zero-copy %v, checksum offload %v, segmentation offload %v",
		c.Backend, dev.NumRxQueues(), c.MaxFrameSize, c.ZeroCopy, c.TxChecksumOffload, c.Offload)
	if d, ok := dev.(*afxdp.Device); ok {
		in := d.Info()
		line += fmt.Sprintf(", %s mode, filter %s", in.Mode, in.Filter)
	}
	return line
}

// peerTxOff reports whether the kernel on the other end of a veth must
// finish its own checksums (and segment) for backend: the device would
// otherwise hand the stack unfinished checksums it cannot tell apart from
// bad ones.
func peerTxOff(o options, backend string) bool {
	if tb, ok := tagged[backend]; ok {
		return tb.peerTxOff
	}
	return backend == "afxdp" || o.noGSO
}

// stackConfig builds the stack's Config for -i, refusing a kernel-owned
// address unless -force.
func stackConfig(o options) (netstack.Config, error) {
	var cfg netstack.Config
	if o.ip == "" {
		return cfg, errors.New("-ip is required with -i")
	}
	p, err := netip.ParsePrefix(o.ip)
	if err != nil {
		return cfg, fmt.Errorf("-ip: %w", err)
	}
	cfg.Addr = p
	cfg.NoGRO = o.noGRO
	cfg.RACK = o.rack
	cfg.RxSpin = o.rxSpin
	cfg.AckDelay = o.ackDelay
	cfg.SendEager = o.sendEager
	cfg.EagerWake = o.eagerWake
	ifc, err := net.InterfaceByName(o.iface)
	if err != nil {
		return cfg, err
	}
	cfg.MAC = ifc.HardwareAddr
	if o.mac != "" {
		if cfg.MAC, err = net.ParseMAC(o.mac); err != nil {
			return cfg, fmt.Errorf("-mac: %w", err)
		}
	}
	if o.gw != "" {
		if cfg.Gateway, err = netip.ParseAddr(o.gw); err != nil {
			return cfg, fmt.Errorf("-gw: %w", err)
		}
	}
	if cfg.Neighbors, err = parseNeighbors(o.neighbors); err != nil {
		return cfg, err
	}
	if why := tagged[o.backend].pinNeighbors; why != "" && len(cfg.Neighbors) == 0 {
		return cfg, fmt.Errorf("-backend %s needs -neighbor: %s", o.backend, why)
	}
	addrs, _ := ifc.Addrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(p.Addr().AsSlice()) && !o.force {
			why := "would reset the stack's connections"
			if o.backend == "afxdp" {
				why = "answers ARP for it: the stack would take the kernel's own ARP and share its ports"
			}
			return cfg, fmt.Errorf("the kernel owns %s on %s and %s; use a spare address (or -force)", p.Addr(), o.iface, why)
		}
	}
	return cfg, nil
}

// parseNeighbors parses -neighbor: ip=mac pairs separated by commas.
func parseNeighbors(s string) (map[netip.Addr]net.HardwareAddr, error) {
	if s == "" {
		return nil, nil
	}
	m := map[netip.Addr]net.HardwareAddr{}
	for _, e := range strings.Split(s, ",") {
		ip, mac, ok := strings.Cut(e, "=")
		if !ok {
			return nil, fmt.Errorf("-neighbor %q: want ip=mac", e)
		}
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return nil, fmt.Errorf("-neighbor %q: %w", e, err)
		}
		hw, err := net.ParseMAC(mac)
		if err != nil {
			return nil, fmt.Errorf("-neighbor %q: %w", e, err)
		}
		if _, dup := m[a]; dup {
			return nil, fmt.Errorf("-neighbor: %s twice", a)
		}
		m[a] = hw
	}
	return m, nil
}

// need is what a stack at cfg receives for -i: its port as a server, the
// server's replies as a client.
func need(o options, cfg netstack.Config) (afxdpsteer.Traffic, error) {
	t := afxdpsteer.Traffic{Addrs: []netip.Addr{cfg.Addr.Addr()}}
	if o.client == "" {
		t.TCPPorts = []uint16{uint16(o.port)}
		return t, nil
	}
	peer, err := netip.ParseAddrPort(o.client)
	if err != nil {
		return t, fmt.Errorf("-client %q: want a literal ip:port: %w", o.client, err)
	}
	t.TCPPeers = []netip.AddrPort{peer}
	return t, nil
}

// startStack opens -i and starts a stack on it, printing its counters every
// -stats when asked. The caller closes the stack, then the device.
func startStack(o options) (packetio.Device, *netstack.Stack, netstack.Config, error) {
	cfg, err := stackConfig(o)
	if err != nil {
		return nil, nil, cfg, err
	}
	nd, err := need(o, cfg)
	if err != nil {
		return nil, nil, cfg, err
	}
	dev, err := open(o, o.backend, o.iface, nd)
	if err != nil {
		return nil, nil, cfg, err
	}
	s, err := netstack.New(dev, cfg)
	if err != nil {
		dev.Close()
		return nil, nil, cfg, err
	}
	if o.stats > 0 {
		go func() {
			for range time.Tick(o.stats) {
				printStats(s)
			}
		}()
	}
	return dev, s, cfg, nil
}

func runServer(o options) error {
	dev, s, cfg, err := startStack(o)
	if err != nil {
		return err
	}
	defer dev.Close()
	defer s.Close()
	l, err := s.Listen("tcp", fmt.Sprintf(":%d", o.port))
	if err != nil {
		return err
	}
	fmt.Printf("%s on %s: %s, MAC %s, MTU %d\n", describe(o, o.backend), o.iface, cfg.Addr, s.MAC(), s.MTU())
	fmt.Println(deviceLine(dev))
	fmt.Printf("%s: serving on port %d\n", o.mode, o.port)
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		select {
		case <-sig:
		case <-s.Done():
		}
		l.Close()
	}()
	serve(l, o, true)
	printStats(s)
	return s.Err()
}

func runClient(o options) error {
	dev, s, _, err := startStack(o)
	if err != nil {
		return err
	}
	defer dev.Close()
	defer s.Close()
	c, err := s.Dial("tcp", o.client)
	if err != nil {
		return err
	}
	defer c.Close()
	// The server does -mode; the client does the other half of it.
	gbps, err := move(c, o.mode, o.bytes, o.buffer())
	if err != nil {
		return err
	}
	fmt.Printf("%s %d bytes with %s: %.2f Gbit/s\n", o.mode, o.bytes, o.client, gbps)
	printStats(s)
	return nil
}

// serve accepts until l closes, handling each connection by -mode.
func serve(l net.Listener, o options, verbose bool) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			var n int64
			switch o.mode {
			case "echo":
				n, _ = connloop.Echo(c, o.buffer())
			case "sink":
				n, _ = connloop.Drain(c, o.buffer())
			case "source":
				n, _ = connloop.WriteN(c, o.buffer(), o.bytes)
			}
			if verbose {
				fmt.Printf("%s: %s %d bytes\n", c.RemoteAddr(), o.mode, n)
			}
		}()
	}
}

// move is the client's half of a mode: it sends to a sink, reads from a
// source, does both with an echo server. It returns Gbit/s (each way, for
// echo) from the first byte to the server's close.
func move(c net.Conn, mode string, n int64, buf []byte) (float64, error) {
	start := time.Now()
	var sent, got int64
	var werr error
	var wg sync.WaitGroup
	if mode != "source" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent, werr = connloop.WriteN(c, make([]byte, len(buf)), n)
			if cw, ok := c.(interface{ CloseWrite() error }); ok && werr == nil {
				werr = cw.CloseWrite()
			}
		}()
	}
	got, rerr := connloop.Drain(c, buf)
	wg.Wait()
	d := time.Since(start)
	if werr != nil {
		return 0, fmt.Errorf("send: %w", werr)
	}
	if rerr != nil {
		return 0, fmt.Errorf("receive: %w", rerr)
	}
	want := n
	if mode == "sink" {
		want = 0
	}
	if got != want || mode != "source" && sent != n {
		return 0, fmt.Errorf("%s: sent %d, received %d, want %d", mode, sent, got, want)
	}
	return float64(n) * 8 / d.Seconds() / 1e9, nil
}

// roundTrips sends size-byte requests to an echo server and waits for each
// answer, for d; it returns round trips per second.
func roundTrips(c net.Conn, size int, d time.Duration) (float64, error) {
	buf := make([]byte, size)
	start := time.Now()
	n := 0
	for time.Since(start) < d {
		if _, err := c.Write(buf); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			return 0, err
		}
		n++
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

func printStats(s *netstack.Stack) {
	st := s.Stats()
	fmt.Printf("stats: rx %d pkts (%d super-frames, %d chains), tx %d pkts in %d frames (%d chains), gso %d->%d, offload %d, device checksums %d, "+
		"drops: device %d bad-csum %d frag %d vlan %d not-ip %d other-host %d tx %d (waits %d, partial %d); "+
		"tcp retransmits %d, resets sent %d\n",
		st.RxPackets, st.RxSuperFrames, st.RxChained, st.TxPackets, st.TxFrames, st.TxChained, st.GSOPackets, st.GSOFrames, st.OffloadPackets, st.OffloadChecksums,
		st.RxDeviceDropped, st.RxBadChecksum, st.RxFragments, st.RxWrongVLAN, st.RxNotIP, st.RxOtherHost, st.TxDropped, st.TxWaits, st.TxPartial,
		st.TCPRetransmits, st.TCPResetsSent)
}

// result is one run's numbers.
type result struct {
	gbps  []float64       // Gbit/s of each of -mode's transfers (options.modes)
	rps   float64         // request/response round trips a second
	many  *manyResult     // with -many
	stats *netstack.Stats // the stack's counters after the run (netstack only)
}

// selfTest measures netstack on every backend of -backend, and the
// kernel, on one veth pair.
func selfTest(o options) error {
	if o.runs < 1 || o.conns < 1 {
		return fmt.Errorf("-runs %d, -conns %d: want at least 1 of each", o.runs, o.conns)
	}
	list, err := backendList(o.backend)
	if err != nil {
		return err
	}
	for _, b := range list {
		if why := tagged[b].noSelfTest; why != "" {
			return fmt.Errorf("-backend %s has no self-test: %s; give -i", b, why)
		}
	}
	popts := []netns.Option{netns.WithAddrs(netip.MustParsePrefix("10.9.0.1/24"), netip.MustParsePrefix("10.9.0.2/24"))}
	if o.mtu != 0 {
		popts = append(popts, netns.WithMTU(o.mtu))
	}
	pair, err := netns.Create(popts...)
	if err != nil {
		return err
	}
	defer pair.Close()
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt)
		<-sig
		pair.Close()
		os.Exit(130)
	}()
	stackAddr := netip.MustParsePrefix("10.9.0.3/24")
	cc, err := clientCC(o, pair)
	if err != nil {
		return err
	}
	fmt.Printf("veth %s (A) <-> %s (B); netstack on A at %s; kernel server on A at 10.9.0.1; client: the kernel on B (congestion control %s)\n",
		pair.A.Link, pair.B.Link, stackAddr.Addr(), cc)
	// Each series is one backend, or the kernel with B's transmit
	// offloads on (its default) or off, or with A's segmentation off too.
	// A stack's ratios are to the kernel with B's offloads as the stack
	// had them, in the same run.
	type series struct {
		name, backend string
		offloads      offloads
		refs          []*series
		rs            []result
	}
	kernel := &series{name: "kernel"}
	kernelOff := &series{name: "kernel, B tx off", offloads: offloads{bTxOff: true}}
	kernelMTU := &series{name: "kernel, MTU packets", offloads: offloads{bTxOff: true, aOff: true}}
	var all, stacks []*series
	anyOff := false
	for _, b := range list {
		se := &series{name: "netstack/" + b, backend: b, refs: []*series{kernel}}
		if peerTxOff(o, b) {
			anyOff = true
			se.offloads.bTxOff = true
			se.refs = []*series{kernelOff}
			if o.kernelMTUPackets {
				se.refs = append(se.refs, kernelMTU)
			}
		}
		all, stacks = append(all, se), append(stacks, se)
		fmt.Printf("netstack/%s: %s", b, describe(o, b))
		if se.offloads.bTxOff {
			fmt.Printf("; B's transmit checksum offload and TSO off (ethtool) while it runs")
		}
		fmt.Println()
	}
	all = append(all, kernel)
	if anyOff {
		all = append(all, kernelOff)
	}
	if o.kernelMTUPackets {
		all = append(all, kernelMTU)
		fmt.Println("kernel, MTU packets: A's TSO and GSO off (its TCP sends one MTU-sized packet per segment, as a stack on copy-mode AF_XDP does) and B's transmit offloads off")
	}
	fmt.Printf("server mode %s, %d MiB per run in reads and writes of %d bytes, %d-byte request/response on %d connections for %v, %d runs\n",
		strings.Join(o.modes(), ", "), o.bytes>>20, len(o.buffer()), o.size, o.conns, o.rr, o.runs)

	var now offloads // the pair's offloads as the kernel made them
	defer now.set(pair, offloads{})
	for run := 1; run <= o.runs; run++ {
		for _, se := range all {
			if err := now.set(pair, se.offloads); err != nil {
				return err
			}
			var r result
			var err error
			if se.backend != "" {
				r, err = measureNetstack(o, se.backend, pair, stackAddr, run == 1)
			} else {
				r, err = measureKernel(o, pair)
			}
			if err != nil {
				return fmt.Errorf("%s run %d: %w", se.name, run, err)
			}
			fmt.Printf("run %d %-22s %s\n", run, se.name+":", r.line(o.modes()))
			se.rs = append(se.rs, r)
		}
	}
	fmt.Printf("median of %d (min-max):\n", o.runs)
	for _, se := range all {
		fmt.Printf("  %-22s %s\n", se.name+":", summary(o.modes(), se.rs, nil))
	}
	fmt.Printf("ratio to the kernel, median of the %d runs' ratios (min-max):\n", o.runs)
	for _, se := range stacks {
		for _, ref := range se.refs {
			fmt.Printf("  %-22s %s\n", se.name+" / "+ref.name+":", summary(o.modes(), se.rs, ref.rs))
		}
	}
	return nil
}

// offloads are the changes the self-test makes to the pair's offloads
// for one series.
type offloads struct {
	bTxOff bool // B's transmit checksum offload (and with it TSO) off
	aOff   bool // A's transmit checksum offload, TSO and GSO off
}

// set changes the pair's offloads from *f to want. The namespaces go when
// the self-test ends, and the self-test puts the kernel's defaults back
// before then.
func (f *offloads) set(pair *netns.Pair, want offloads) error {
	if want.bTxOff != f.bTxOff {
		f.bTxOff = want.bTxOff
		if err := pair.B.SetFeature("tx", !want.bTxOff); err != nil {
			return err
		}
	}
	if want.aOff != f.aOff {
		f.aOff = want.aOff
		for _, name := range []string{"tx", "gso"} {
			if err := pair.A.SetFeature(name, !want.aOff); err != nil {
				return err
			}
		}
	}
	return nil
}

// line is one run's figures: Gbit/s of each mode (each way, for echo),
// then request/response.
func (r result) line(modes []string) string {
	var b strings.Builder
	for i, m := range modes {
		fmt.Fprintf(&b, "%s %.2f Gbit/s, ", m, r.gbps[i])
	}
	fmt.Fprintf(&b, "%.0f req/s", r.rps)
	return b.String()
}

// summary is the median (min-max) of every figure of rs, or with refs (a
// series measured in the same runs) of the per-run ratios rs/refs.
func summary(modes []string, rs, refs []result) string {
	// pick gives one figure's median (min-max), whole numbers for counts
	// (round trips a second), two decimals for rates and ratios.
	pick := func(f func(result) float64, count bool) string {
		var xs []float64
		for i, r := range rs {
			x := f(r)
			if refs != nil {
				x /= f(refs[i])
			}
			xs = append(xs, x)
		}
		slices.Sort(xs)
		format := "%.2f (%.2f-%.2f)"
		if count && refs == nil {
			format = "%.0f (%.0f-%.0f)"
		}
		return fmt.Sprintf(format, xs[len(xs)/2], xs[0], xs[len(xs)-1])
	}
	var parts []string
	for i, m := range modes {
		parts = append(parts, m+" "+pick(func(r result) float64 { return r.gbps[i] }, false))
	}
	unit := " (Gbit/s)"
	if rs[0].rps > 0 {
		parts = append(parts, "request/response "+pick(func(r result) float64 { return r.rps }, true))
		unit = " (Gbit/s, req/s)"
	}
	if refs != nil {
		unit = ""
	}
	return strings.Join(parts, ", ") + unit
}

func measureNetstack(o options, backend string, pair *netns.Pair, addr netip.Prefix, first bool) (result, error) {
	var dev packetio.Device
	nd := afxdpsteer.Traffic{Addrs: []netip.Addr{addr.Addr()}, TCPPorts: []uint16{uint16(o.port)}}
	if err := pair.A.Do(func() error {
		var err error
		dev, err = open(o, backend, pair.A.Link, nd)
		return err
	}); err != nil {
		return result{}, err
	}
	defer dev.Close()
	if first {
		fmt.Println(deviceLine(dev))
	}
	s, err := netstack.New(dev, netstack.Config{Addr: addr, MAC: pair.A.MAC, NoGRO: o.noGRO, RACK: o.rack, RxSpin: o.rxSpin, AckDelay: o.ackDelay, SendEager: o.sendEager, EagerWake: o.eagerWake, MTU: o.mtu})
	if err != nil {
		return result{}, err
	}
	defer s.Close()
	l, err := s.Listen("tcp4", fmt.Sprintf(":%d", o.port))
	if err != nil {
		return result{}, err
	}
	r, err := measure(o, pair, l, netip.AddrPortFrom(addr.Addr(), uint16(o.port)).String())
	if o.stats >= 0 {
		printStats(s)
	}
	st := s.Stats()
	r.stats = &st
	return r, err
}

func measureKernel(o options, pair *netns.Pair) (result, error) {
	var l net.Listener
	if err := pair.A.Do(func() error {
		var err error
		l, err = net.Listen("tcp4", fmt.Sprintf("10.9.0.1:%d", o.port))
		return err
	}); err != nil {
		return result{}, err
	}
	return measure(o, pair, l, l.Addr().String())
}

// measure serves on l and runs the kernel client on B against addr: one
// transfer in -mode, then round trips against an echo of the same server.
func measure(o options, pair *netns.Pair, l net.Listener, addr string) (result, error) {
	if o.many > 0 {
		return measureMany(o, pair, l, addr)
	}
	done := make(chan struct{})
	defer func() { l.Close(); <-done }()
	go func() {
		defer close(done)
		serveSplit(l, o)
	}()
	dial := func(tag byte) (net.Conn, error) {
		var c net.Conn
		err := pair.B.Do(func() error {
			var err error
			c, err = clientDialer(o, 5*time.Second).Dial("tcp4", addr)
			return err
		})
		if err != nil {
			return nil, err
		}
		if _, err := c.Write([]byte{tag}); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
	var r result
	for _, mode := range o.modes() {
		c, err := dial(modeTags[mode])
		if err != nil {
			return r, err
		}
		c.SetDeadline(time.Now().Add(2 * time.Minute))
		g, err := move(c, mode, o.bytes, o.buffer())
		c.Close()
		if err != nil {
			return r, fmt.Errorf("%s: %w", mode, err)
		}
		r.gbps = append(r.gbps, g)
	}
	if o.rr <= 0 {
		return r, nil
	}
	conns := make([]net.Conn, 0, o.conns)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range o.conns {
		c, err := dial('r')
		if err != nil {
			return r, err
		}
		c.SetDeadline(time.Now().Add(o.rr + time.Minute))
		conns = append(conns, c)
	}
	rates := make([]float64, len(conns))
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rates[i], errs[i] = roundTrips(c, o.size, o.rr)
		}()
	}
	wg.Wait()
	for i := range conns {
		if errs[i] != nil {
			return r, errs[i]
		}
		r.rps += rates[i]
	}
	return r, nil
}

// serveSplit serves the self-test's connections: the first byte says
// which transfer (modeTags) or round trips ('r', always echo).
//
// When l closes, the connections still open are closed too: the client has
// finished or given up by then, and a handler blocked on a stalled
// connection would otherwise keep the measurement waiting for ever.
func serveSplit(l net.Listener, o options) {
	connloop.Serve(l, func(c net.Conn) {
		var tag [1]byte
		if _, err := io.ReadFull(c, tag[:]); err != nil {
			return
		}
		mode := "echo" // 'r', request/response
		for m, t := range modeTags {
			if t == tag[0] {
				mode = m
			}
		}
		switch mode {
		case "echo":
			connloop.Echo(c, o.buffer())
		case "sink":
			connloop.Drain(c, o.buffer())
		case "source":
			connloop.WriteN(c, o.buffer(), o.bytes)
		}
	})
}
