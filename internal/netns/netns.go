// Package netns builds throwaway test hosts: two network namespaces joined by
// a veth pair, made through netlink (never by running ip) and removed when the
// test ends, failed or not.
//
// The namespaces are anonymous: they live only as long as this process holds
// their file descriptors, so even a crashed test leaves nothing in
// `ip netns` or `ip link` behind. Code that must run inside a namespace (open
// a socket, attach a program, read a sysctl) goes through Host.Do, which runs
// it on a locked OS thread switched into the namespace; a socket opened there
// stays in that namespace afterwards and may be used from any goroutine.
package netns

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/testenv"
)

// Host is one end of a Pair: a network namespace holding one veth interface.
type Host struct {
	// Link is the name of the veth interface inside the namespace.
	Link string
	// Index is its interface index inside the namespace.
	Index int
	// MAC is its hardware address.
	MAC net.HardwareAddr
	// Addr is the address given with WithAddrs, or the zero Prefix.
	Addr netip.Prefix

	ns netns.NsHandle
}

// Pair is two hosts joined by a veth pair.
type Pair struct {
	A, B *Host
}

type config struct {
	addrA, addrB netip.Prefix
	mtu          int
	ipv6         bool
	queues       int
}

// Option changes how a Pair is made.
type Option func(*config)

// WithAddrs gives the two ends these addresses (both IPv4 or both IPv6).
func WithAddrs(a, b netip.Prefix) Option { return func(c *config) { c.addrA, c.addrB = a, b } }

// WithMTU sets the MTU of both ends.
func WithMTU(mtu int) Option { return func(c *config) { c.mtu = mtu } }

// WithQueues gives both ends n transmit and n receive queues (default 1).
func WithQueues(n int) Option { return func(c *config) { c.queues = n } }

// WithIPv6 leaves IPv6 on. By default it is off in both namespaces, so no
// router solicitation, DAD or MLD frame disturbs what a test counts.
func WithIPv6() Option { return func(c *config) { c.ipv6 = true } }

// New makes a Pair for a test and removes it in t.Cleanup. Without root the
// test is skipped with the reason, or failed under PACKETIO_CONFORM_REQUIRED.
func New(t testing.TB, opts ...Option) *Pair {
	t.Helper()
	testenv.NeedRoot(t)
	p, err := Create(opts...)
	if err != nil {
		t.Fatalf("netns: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("netns: %v", err)
		}
	})
	return p
}

// Create makes a Pair outside a test (examples use it). The caller must Close
// it; if the process dies first, the kernel removes everything anyway.
// Every step rolls back on failure.
func Create(opts ...Option) (p *Pair, err error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	if c.addrA.IsValid() != c.addrB.IsValid() {
		return nil, errors.New("netns: WithAddrs needs both addresses")
	}
	p = &Pair{A: &Host{Addr: c.addrA, ns: -1}, B: &Host{Addr: c.addrB, ns: -1}}
	defer func() {
		if err != nil {
			p.Close()
			p = nil
		}
	}()
	for _, h := range []*Host{p.A, p.B} {
		if h.ns, err = newNamespace(c.ipv6); err != nil {
			return p, err
		}
	}
	suffix, err := randomSuffix()
	if err != nil {
		return p, err
	}
	p.A.Link, p.B.Link = "pio"+suffix+"a", "pio"+suffix+"b"

	ha, err := netlink.NewHandleAt(p.A.ns)
	if err != nil {
		return p, fmt.Errorf("netns: netlink handle: %w", err)
	}
	defer ha.Close()
	queues := max(c.queues, 1)
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: p.A.Link, MTU: c.mtu, NumTxQueues: queues, NumRxQueues: queues},
		PeerName:      p.B.Link,
		PeerNamespace: netlink.NsFd(int(p.B.ns)),
		// Both ends get the count explicitly: left to the kernel, a veth
		// gets one transmit queue per CPU, and a frame sent on a queue the
		// peer has no receive queue for bypasses the peer's native XDP
		// program.
		PeerNumTxQueues: uint32(queues),
		PeerNumRxQueues: uint32(queues),
	}
	if err := ha.LinkAdd(veth); err != nil {
		return p, fmt.Errorf("netns: add veth %s/%s: %w", p.A.Link, p.B.Link, err)
	}
	for _, h := range []*Host{p.A, p.B} {
		if err := h.setUp(); err != nil {
			return p, err
		}
	}
	return p, nil
}

// setUp brings the host's link (and loopback) up, gives it its address and
// records its index and MAC.
func (h *Host) setUp() error {
	hd, err := netlink.NewHandleAt(h.ns)
	if err != nil {
		return fmt.Errorf("netns: netlink handle: %w", err)
	}
	defer hd.Close()
	link, err := hd.LinkByName(h.Link)
	if err != nil {
		return fmt.Errorf("netns: find %s: %w", h.Link, err)
	}
	if h.Addr.IsValid() {
		a := &netlink.Addr{IPNet: &net.IPNet{IP: h.Addr.Addr().AsSlice(), Mask: net.CIDRMask(h.Addr.Bits(), h.Addr.Addr().BitLen())}}
		if err := hd.AddrAdd(link, a); err != nil {
			return fmt.Errorf("netns: address %s on %s: %w", h.Addr, h.Link, err)
		}
	}
	if err := hd.LinkSetUp(link); err != nil {
		return fmt.Errorf("netns: bring up %s: %w", h.Link, err)
	}
	if lo, err := hd.LinkByName("lo"); err == nil {
		_ = hd.LinkSetUp(lo)
	}
	h.Index = link.Attrs().Index
	h.MAC = link.Attrs().HardwareAddr
	return nil
}

// Close deletes the veth pair and releases both namespaces. It is safe to
// call twice.
func (p *Pair) Close() error {
	var errs []error
	if p.A != nil && p.A.ns >= 0 && p.A.Link != "" {
		if hd, err := netlink.NewHandleAt(p.A.ns); err == nil {
			if l, err := hd.LinkByName(p.A.Link); err == nil {
				if err := hd.LinkDel(l); err != nil {
					errs = append(errs, fmt.Errorf("netns: delete %s: %w", p.A.Link, err))
				}
			}
			hd.Close()
		}
	}
	for _, h := range []*Host{p.A, p.B} {
		if h != nil && h.ns >= 0 {
			if err := h.ns.Close(); err != nil {
				errs = append(errs, err)
			}
			h.ns = -1
		}
	}
	return errors.Join(errs...)
}

// NamespaceFD is the host's namespace file descriptor, valid until the Pair
// closes: hand it to a child process (exec.Cmd.ExtraFiles) that must enter
// the namespace with setns(2).
func (h *Host) NamespaceFD() int { return int(h.ns) }

// SetFeature turns an offload feature of the host's link on or off with
// `ethtool -K LINK name on|off` inside its namespace (e.g. "tx" for
// transmit checksum offload, which takes TSO with it, or "gro").
func (h *Host) SetFeature(name string, on bool) error {
	v := "off"
	if on {
		v = "on"
	}
	return h.Do(func() error {
		out, err := exec.Command("ethtool", "-K", h.Link, name, v).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ethtool -K %s %s %s: %v: %s", h.Link, name, v, err, out)
		}
		return nil
	})
}

// PacketSocket opens a raw AF_PACKET socket (protocol 0: it sends, and
// receives nothing) inside the host's namespace, for sending frames on its
// link with unix.Sendto and a unix.SockaddrLinklayer.
func (h *Host) PacketSocket() (int, error) {
	fd := -1
	err := h.Do(func() (err error) {
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		return err
	})
	return fd, err
}

// ListenUDP is net.ListenUDP("udp4", &net.UDPAddr{IP: ip, Port: port})
// inside the host's namespace (port 0: any).
func (h *Host) ListenUDP(ip net.IP, port int) (*net.UDPConn, error) {
	var c *net.UDPConn
	err := h.Do(func() (err error) {
		c, err = net.ListenUDP("udp4", &net.UDPAddr{IP: ip, Port: port})
		return err
	})
	return c, err
}

// Do runs fn inside the host's namespace on a locked OS thread and returns
// its error. Sockets fn opens stay in the namespace.
func (h *Host) Do(fn func() error) error {
	if h.ns < 0 {
		return errors.New("netns: host is closed")
	}
	return do(h.ns, fn)
}

func do(ns netns.NsHandle, fn func() error) error {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns: current namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netns: enter namespace: %w", err)
	}
	defer func() {
		// A thread that cannot go back stays locked, so the runtime
		// throws it away instead of reusing it in the wrong namespace.
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
	}()
	return fn()
}

// newNamespace makes an anonymous namespace and returns a handle to it,
// without leaving the calling thread inside it.
func newNamespace(ipv6 bool) (netns.NsHandle, error) {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return -1, fmt.Errorf("netns: current namespace: %w", err)
	}
	defer orig.Close()
	ns, err := netns.New() // unshares this thread into the new namespace
	if err != nil {
		runtime.UnlockOSThread()
		return -1, fmt.Errorf("netns: new namespace: %w", err)
	}
	if !ipv6 {
		for _, k := range []string{"all", "default"} {
			if err = os.WriteFile("/proc/sys/net/ipv6/conf/"+k+"/disable_ipv6", []byte("1"), 0); err != nil {
				if errors.Is(err, os.ErrNotExist) {
					err = nil // no IPv6 in this kernel: already off
					continue
				}
				err = fmt.Errorf("netns: disable IPv6: %w", err)
				break
			}
		}
	}
	if serr := netns.Set(orig); serr != nil {
		ns.Close()
		return -1, fmt.Errorf("netns: leave new namespace: %w", serr) // thread stays locked and dies
	}
	runtime.UnlockOSThread()
	if err != nil {
		ns.Close()
		return -1, err
	}
	return ns, nil
}

func randomSuffix() (string, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("netns: random name: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
