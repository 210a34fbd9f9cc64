// Command customfilter opens an AF_XDP fleet whose filter is one of five
// custom matches, each a filter.NewMatch block of hand-written eBPF in a
// package beside this one, and prints what the filter takes:
//
//	-match vlan    vlanid.Match: the VLAN ID in the frame's outer tag
//	-match dstmac  dstmac.Match: the Ethernet destination (a 32-bit compare)
//	-match tcpsyn  tcpsyn.Match: TCP SYN set and ACK clear (following the IHL)
//	-match vxlan   vxlanvni.Match: a VXLAN network on UDP 4789 (two paths that join)
//	-match gre     greproto.Match: the protocol GRE over IPv4 carries
//
// Each package's test runs its match in the kernel (filter.NewClassifier,
// BPF_PROG_TEST_RUN) over frames it must take and near misses it must not;
// read those first, then this program, which shows the same match on a
// live interface.
//
// With no -i it needs root and makes its own veth pair between two
// throwaway namespaces, opens the fleet on one end, sends the other end a
// set of frames the match must take and near misses it must leave to the
// kernel, checks that exactly the first set arrived, byte for byte, and
// removes the pair. With -i it opens that interface and prints what arrives
// until -duration passes or Ctrl-C; the management traffic that keeps the
// host reachable (ARP, neighbour discovery, SSH, DNS replies) stays with the
// kernel whatever the filter says, unless -keep-management=false. Ctrl-C
// always detaches the program and closes the sockets before exiting.
//
//	sudo go run ./examples/xdp/customfilter -match vxlan
//	sudo go run ./examples/xdp/customfilter -match tcpsyn -ports 22,443
//	sudo go run ./examples/xdp/customfilter -i eth1 -match vlan -vlan 100
//
// Exit status: 0 on success (Ctrl-C with -i included), 1 if the fleet
// failed or (without -i) a frame went the wrong way, 2 for bad flags, 130
// if Ctrl-C came before the check without -i was done.
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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/bed"
	"github.com/packetio/packetio/examples/internal/pkt"
	"github.com/packetio/packetio/examples/internal/ratelog"
	"github.com/packetio/packetio/examples/xdp/customfilter/dstmac"
	"github.com/packetio/packetio/examples/xdp/customfilter/greproto"
	"github.com/packetio/packetio/examples/xdp/customfilter/tcpsyn"
	"github.com/packetio/packetio/examples/xdp/customfilter/vlanid"
	"github.com/packetio/packetio/examples/xdp/customfilter/vxlanvni"
	"github.com/packetio/packetio/filter"
)

// kinds are the -match values.
var kinds = []string{"vlan", "dstmac", "tcpsyn", "vxlan", "gre"}

type options struct {
	iface    string
	match    string
	vlan     uint
	mac      string
	ports    string
	vni      string
	proto    string
	duration time.Duration
	show     int
	keepMgmt bool
}

func main() {
	var o options
	flag.StringVar(&o.iface, "i", "", "interface (default: a veth pair in throwaway namespaces, with test traffic; needs root)")
	flag.StringVar(&o.match, "match", "vxlan", "the custom match: "+strings.Join(kinds, ", "))
	flag.UintVar(&o.vlan, "vlan", 100, "-match vlan: the VLAN ID, 0-4095")
	flag.StringVar(&o.mac, "mac", "", "-match dstmac: the destination address (default: the interface's own)")
	flag.StringVar(&o.ports, "ports", "", "-match tcpsyn: destination ports, comma-separated (default: any)")
	flag.StringVar(&o.vni, "vni", "0xabcdef", "-match vxlan: the VXLAN network identifier, 24 bits (0x for hex)")
	flag.StringVar(&o.proto, "proto", "0x6558", "-match gre: the protocol type GRE carries (0x6558 Ethernet, 0x0800 IPv4)")
	flag.DurationVar(&o.duration, "duration", 0, "with -i: how long to listen (default: until Ctrl-C)")
	flag.IntVar(&o.show, "show", 50, "with -i: print at most this many frames, then only count them")
	flag.BoolVar(&o.keepMgmt, "keep-management", true, "with -i: leave ARP, neighbour discovery, SSH and DNS replies with the kernel")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, `usage: customfilter [-i IFACE] -match KIND [match flags]

Opens an AF_XDP fleet filtered by one hand-written eBPF match and prints the
frames it takes; everything else stays with the kernel. Without -i it makes
its own veth pair, sends frames that must and must not match, and checks.
Ctrl-C stops it cleanly, the program detached and the host as it was.
Exit status: 0 on success, 1 on failure or a frame that went the wrong way,
2 for bad flags, 130 if interrupted before the check without -i was done.

`)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 || o.show < 0 || o.duration < 0 {
		flag.Usage()
		os.Exit(2)
	}
	if _, err := matchFor(o, nil); err != nil {
		fmt.Fprintln(os.Stderr, "customfilter:", err)
		os.Exit(2)
	}
	ctx, stop := bed.Interrupted()
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		if ctx.Err() != nil && o.iface == "" {
			fmt.Fprintln(os.Stderr, "customfilter: interrupted before the check was done:", err)
			os.Exit(130)
		}
		fmt.Fprintln(os.Stderr, "customfilter:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, w io.Writer) error {
	if o.iface != "" {
		port := bed.Named(o.iface)
		m, err := matchFor(o, &port)
		if err != nil {
			return err
		}
		if o.duration > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, o.duration)
			defer cancel()
		}
		extra := []xdp.Option(nil)
		if o.keepMgmt {
			extra = append(extra, xdp.WithKeepManagement())
		}
		n, err := listen(ctx, port, m, o.show, w, extra...)
		fmt.Fprintf(w, "%d frame(s) taken\n", n)
		return err
	}
	pair, err := bed.NewPair(netip.Prefix{}, netip.Prefix{})
	if err != nil {
		return err
	}
	defer pair.Close()
	made := fmt.Sprintf("no -i: made veth pair %s <-> %s in two throwaway namespaces\n", pair.A.Link, pair.B.Link)
	return demo(ctx, o, bed.Of(pair.A), bed.Of(pair.B), bed.AfterFirstLine(w, made))
}

// matchFor builds the match the options ask for. port, when given, is
// where -mac defaults from; without it only the arguments are checked.
func matchFor(o options, port *bed.Port) (filter.Match, error) {
	switch o.match {
	case "vlan":
		if o.vlan > 4095 {
			return filter.Match{}, fmt.Errorf("-vlan %d: a VLAN ID is 0-4095", o.vlan)
		}
		return vlanid.Match(uint16(o.vlan)), nil
	case "dstmac":
		var mac [6]byte
		switch {
		case o.mac != "":
			hw, err := net.ParseMAC(o.mac)
			if err != nil || len(hw) != 6 {
				return filter.Match{}, fmt.Errorf("-mac %q: not an Ethernet address", o.mac)
			}
			copy(mac[:], hw)
		case port != nil:
			hw, err := hardwareAddr(*port)
			if err != nil {
				return filter.Match{}, err
			}
			copy(mac[:], hw)
		}
		return dstmac.Match(mac), nil
	case "tcpsyn":
		var ports []uint16
		for _, f := range strings.FieldsFunc(o.ports, func(r rune) bool { return r == ',' }) {
			p, err := strconv.ParseUint(strings.TrimSpace(f), 10, 16)
			if err != nil || p == 0 {
				return filter.Match{}, fmt.Errorf("-ports %q: %q is not a port", o.ports, f)
			}
			ports = append(ports, uint16(p))
		}
		return tcpsyn.Match(ports...), nil
	case "vxlan":
		v, err := strconv.ParseUint(o.vni, 0, 32)
		if err != nil || v > 0xffffff {
			return filter.Match{}, fmt.Errorf("-vni %q: a VNI is 24 bits (0 to 0xffffff)", o.vni)
		}
		return vxlanvni.Match(uint32(v)), nil
	case "gre":
		v, err := strconv.ParseUint(o.proto, 0, 16)
		if err != nil {
			return filter.Match{}, fmt.Errorf("-proto %q: a protocol type is 16 bits", o.proto)
		}
		return greproto.Match(uint16(v)), nil
	}
	return filter.Match{}, fmt.Errorf("-match %q: one of %s", o.match, strings.Join(kinds, ", "))
}

// hardwareAddr reads an interface's Ethernet address in its namespace.
func hardwareAddr(p bed.Port) (net.HardwareAddr, error) {
	var hw net.HardwareAddr
	err := p.Do(func() error {
		ifi, err := net.InterfaceByName(p.Name)
		if err != nil {
			return err
		}
		if len(ifi.HardwareAddr) != 6 {
			return fmt.Errorf("%s has no Ethernet address: name one with -mac", p.Name)
		}
		hw = ifi.HardwareAddr
		return nil
	})
	return hw, err
}

// listen opens a fleet on port with the filter m and prints every frame it
// takes (up to show, then it only counts) until ctx ends. It returns the
// frames taken.
func listen(ctx context.Context, port bed.Port, m filter.Match, show int, w io.Writer, extra ...xdp.Option) (uint64, error) {
	fleet, err := open(port, m, w, extra...)
	if err != nil {
		return 0, err
	}
	defer fleet.Close()
	return receive(ctx, fleet, show, w, nil)
}

// open opens a fleet on port, in its namespace, with the filter m, and
// prints how it runs.
func open(port bed.Port, m filter.Match, w io.Writer, extra ...xdp.Option) (*xdp.Fleet, error) {
	opts := append([]xdp.Option{xdp.WithFilter(m), xdp.WithNeedWakeup(), xdp.WithNumFrames(4096)}, extra...)
	var fleet *xdp.Fleet
	err := port.Do(func() (err error) {
		fleet, err = xdp.Open(port.Name, opts...)
		return err
	})
	if err != nil {
		if filter.IsVerifierError(err) {
			return nil, fmt.Errorf("the verifier refused the filter:\n%+v", err)
		}
		return nil, err
	}
	info, err := fleet.Info()
	if err != nil {
		fleet.Close()
		return nil, err
	}
	fmt.Fprintln(w, backend.XDPLine("customfilter", info, batch, nil, "taking what the custom match takes, the rest left to the kernel"))
	fmt.Fprintln(w, info)
	return fleet, nil
}

// batch is the most frames one Receive takes.
const batch = 64

// receive runs one goroutine per queue, each the receive cycle Fill, Poll,
// Receive, Recycle, until ctx ends, and waits for them before returning
// (so that the caller's Close never races a worker). It prints the first
// show frames, and gives seen, when not nil, a copy of every frame.
func receive(ctx context.Context, fleet *xdp.Fleet, show int, w io.Writer, seen func([]byte)) (uint64, error) {
	var (
		mu    sync.Mutex
		taken uint64
		wg    sync.WaitGroup
	)
	errs := ratelog.New(os.Stderr, time.Second)
	failed := make(chan error, fleet.NumQueues())
	for _, s := range fleet.Sockets() {
		wg.Add(1)
		go func(s *xdp.Socket) {
			defer wg.Done()
			for ctx.Err() == nil {
				s.Fill(s.NumFreeFillSlots())
				if _, err := s.Poll(100 * time.Millisecond); err != nil {
					if errors.Is(err, xdp.ErrClosed) {
						return
					}
					errs.Printf("queue %d: %v", s.Queue(), err)
					failed <- err
					return
				}
				descs := s.Receive(batch)
				if len(descs) == 0 {
					continue
				}
				mu.Lock()
				for _, d := range descs {
					f := s.GetFrame(d)
					if f == nil {
						errs.Printf("queue %d: descriptor %+v outside the UMEM", s.Queue(), d)
						continue
					}
					taken++
					if taken <= uint64(show) {
						fmt.Fprintf(w, "  q%d %s\n", s.Queue(), pkt.Describe(f))
					} else if show > 0 && taken == uint64(show)+1 {
						fmt.Fprintf(w, "  (printed %d frames; counting the rest)\n", show)
					}
					if seen != nil {
						seen(append([]byte(nil), f...))
					}
				}
				mu.Unlock()
				s.Recycle(descs)
			}
		}(s)
	}
	wg.Wait()
	close(failed)
	return taken, <-failed
}
