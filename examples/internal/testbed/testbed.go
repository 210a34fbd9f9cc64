// Package testbed gives an example the interface it runs on: the one the
// user named with -i, or, when none was named, a veth pair between two
// throwaway network namespaces that it makes itself (needs root) and that
// vanishes with the program, even if the program is killed.
package testbed

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
)

// Bed is where an example runs.
type Bed struct {
	// Name is the interface the example drives.
	Name string
	// Peer is the other end of the veth pair, or "" on a named interface.
	Peer string

	pair *netns.Pair

	mu      sync.Mutex
	devices []packetio.Device
	undo    []func() error // host changes to put back, in order made
	closed  bool
}

// Option changes the veth pair Setup makes (it has no effect on a named
// interface).
type Option func(*config)

type config struct{ queues, mtu int }

// WithQueues gives both ends of the pair n transmit and n receive queues
// (default 1), for examples that drive several queues.
func WithQueues(n int) Option { return func(c *config) { c.queues = n } }

// WithMTU gives both ends of the pair an MTU of n bytes (default 1500), for
// examples that move jumbo frames: an MTU of 9000 carries frames of up to
// 9014 bytes (9018 on the wire with the FCS). A native XDP program on an
// end whose MTU is above what one page holds (about 3.5 KiB on a veth) must
// be loaded with frags support (BPF_F_XDP_HAS_FRAGS; afxdp's
// WithMultiBuffer does), or the kernel refuses to attach it.
func WithMTU(n int) Option { return func(c *config) { c.mtu = n } }

// Addresses the throwaway pair carries, for examples that need IP.
var (
	AddrA = netip.MustParsePrefix("10.99.0.1/24")
	AddrB = netip.MustParsePrefix("10.99.0.2/24")
)

// Setup returns a bed on iface, or on a new veth pair when iface is "". It
// tells w what it is doing.
func Setup(iface string, w io.Writer, opts ...Option) (*Bed, error) {
	if iface != "" {
		return &Bed{Name: iface}, nil
	}
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.queues < 0 || c.queues > 64 {
		return nil, fmt.Errorf("testbed: %d queues: 1 to 64", c.queues)
	}
	if c.mtu != 0 && (c.mtu < 68 || c.mtu > 65535) {
		return nil, fmt.Errorf("testbed: MTU %d: 68 to 65535", c.mtu)
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("no -i given, and making a veth pair in throwaway namespaces needs root")
	}
	nopts := []netns.Option{netns.WithAddrs(AddrA, AddrB)}
	if c.queues > 1 {
		nopts = append(nopts, netns.WithQueues(c.queues))
	}
	if c.mtu != 0 {
		nopts = append(nopts, netns.WithMTU(c.mtu))
	}
	p, err := netns.Create(nopts...)
	if err != nil {
		return nil, err
	}
	// Both ends run exactly the queues asked for. A veth made without a
	// count gets one per CPU, and an end with more queues than the other
	// hands some of its frames to queues the other has not got (which
	// skip its XDP program) or to queues nobody bound.
	want := max(c.queues, 1)
	for _, h := range []*netns.Host{p.A, p.B} {
		if err := h.Do(func() error { return setQueues(h.Link, want) }); err != nil {
			p.Close()
			return nil, fmt.Errorf("testbed: %d queues on %s: %w", want, h.Link, err)
		}
	}
	var extra []string
	if c.queues > 1 {
		extra = append(extra, fmt.Sprintf("%d queues each way", c.queues))
	}
	if c.mtu != 0 {
		extra = append(extra, fmt.Sprintf("MTU %d", c.mtu))
	}
	if len(extra) > 0 {
		fmt.Fprintf(w, "no -i: made veth pair %s <-> %s (%s) in two throwaway namespaces\n", p.A.Link, p.B.Link, strings.Join(extra, ", "))
	} else {
		fmt.Fprintf(w, "no -i: made veth pair %s <-> %s in two throwaway namespaces\n", p.A.Link, p.B.Link)
	}
	return &Bed{Name: p.A.Link, Peer: p.B.Link, pair: p}, nil
}

// Own reports whether the bed is the example's own veth pair.
func (b *Bed) Own() bool { return b.pair != nil }

// Open opens the example's device with open, inside its namespace when the
// bed is a veth pair. Close closes it.
func (b *Bed) Open(open func(name string) (packetio.Device, error)) (packetio.Device, error) {
	var h *netns.Host
	if b.Own() {
		h = b.pair.A
	}
	return b.open(h, b.Name, open)
}

// OpenPeer opens a device on the far end of the pair (only on an own bed).
func (b *Bed) OpenPeer(open func(name string) (packetio.Device, error)) (packetio.Device, error) {
	if !b.Own() {
		return nil, fmt.Errorf("testbed: %s has no peer this program made", b.Name)
	}
	return b.open(b.pair.B, b.Peer, open)
}

// In runs fn where the example's interface lives: inside its namespace on an
// own bed, in place otherwise.
func (b *Bed) In(fn func() error) error {
	if !b.Own() {
		return fn()
	}
	return b.pair.A.Do(fn)
}

// InPeer runs fn inside the peer's namespace (only on an own bed).
func (b *Bed) InPeer(fn func() error) error {
	if !b.Own() {
		return fmt.Errorf("testbed: %s has no peer this program made", b.Name)
	}
	return b.pair.B.Do(fn)
}

func (b *Bed) open(h *netns.Host, name string, open func(string) (packetio.Device, error)) (packetio.Device, error) {
	var d packetio.Device
	var err error
	if h != nil {
		if derr := h.Do(func() error { d, err = open(name); return nil }); derr != nil {
			return nil, derr
		}
	} else {
		d, err = open(name)
	}
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.devices = append(b.devices, d)
	b.mu.Unlock()
	return d, nil
}

// Close closes every device opened through the bed, puts back every host
// setting changed through it (GRO), and removes the pair. It is safe to
// call more than once.
func (b *Bed) Close() error {
	b.mu.Lock()
	devs, undo := b.devices, b.undo
	b.devices, b.undo = nil, nil
	already := b.closed
	b.closed = true
	b.mu.Unlock()
	var errs []error
	for _, d := range devs {
		d.Close()
	}
	for i := len(undo) - 1; i >= 0; i-- {
		if err := undo[i](); err != nil {
			errs = append(errs, err)
		}
	}
	if b.pair != nil && !already {
		if err := b.pair.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Main is what every example's main does once its flags are declared:
// -h prints usage and the flags; a refusal of check exits 2 with "name:
// why"; run goes until it returns or SIGINT or SIGTERM cancels its context
// (so its deferred Close runs), and an error it returns exits 1. Both are
// called after the flags are parsed: pass closures, since a method value
// such as o.check binds o's defaults before.
func Main(name, usage string, check func() error, run func(context.Context) error) {
	flag.Usage = func() {
		fmt.Fprint(os.Stderr, usage)
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := check(); err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(2)
	}
	ctx, stop := Interrupted()
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
}

// Interrupted returns a context cancelled on SIGINT or SIGTERM, so a loop
// can stop and the deferred Close run: the host is left as it was.
func Interrupted() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// MAC is the Ethernet address of the example's interface.
func (b *Bed) MAC() (net.HardwareAddr, error) { return macOf(b.In, b.Name) }

// PeerMAC is the Ethernet address of the far end (only on an own bed).
func (b *Bed) PeerMAC() (net.HardwareAddr, error) { return macOf(b.InPeer, b.Peer) }

func macOf(in func(func() error) error, name string) (net.HardwareAddr, error) {
	var mac net.HardwareAddr
	err := in(func() error {
		ifc, err := net.InterfaceByName(name)
		if err == nil {
			mac = ifc.HardwareAddr
		}
		return err
	})
	if err == nil && len(mac) != 6 {
		err = fmt.Errorf("testbed: %s has no Ethernet address", name)
	}
	return mac, err
}
