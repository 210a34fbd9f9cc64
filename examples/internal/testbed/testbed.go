// Package testbed gives an example the interface it runs on: the one the
// user named with -i, or, when none was named, a veth pair between two
// throwaway network namespaces that it makes itself (needs root) and that
// vanishes with the program, even if the program is killed.
package testbed

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
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
}

// Addresses the throwaway pair carries, for examples that need IP.
var (
	AddrA = netip.MustParsePrefix("10.99.0.1/24")
	AddrB = netip.MustParsePrefix("10.99.0.2/24")
)

// Setup returns a bed on iface, or on a new veth pair when iface is "". It
// tells w what it is doing.
func Setup(iface string, w io.Writer) (*Bed, error) {
	if iface != "" {
		return &Bed{Name: iface}, nil
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("no -i given, and making a veth pair in throwaway namespaces needs root")
	}
	p, err := netns.Create(netns.WithAddrs(AddrA, AddrB))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "no -i: made veth pair %s <-> %s in two throwaway namespaces\n", p.A.Link, p.B.Link)
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

// Close closes every device opened through the bed and removes the pair.
// It is safe to call more than once.
func (b *Bed) Close() error {
	b.mu.Lock()
	devs := b.devices
	b.devices = nil
	b.mu.Unlock()
	for _, d := range devs {
		d.Close()
	}
	if b.pair != nil {
		return b.pair.Close()
	}
	return nil
}

// Interrupted returns a context cancelled on SIGINT or SIGTERM, so a loop
// can stop and the deferred Close run: the host is left as it was.
func Interrupted() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
