// Package bed gives the afxdp/xdp examples the interfaces they run on: the
// ones the user named, in the program's own network namespace, or veth
// pairs between throwaway namespaces that an example makes itself (needs
// root) and removes when it exits; the kernel removes them too if the
// program is killed, since nothing but the program holds the namespaces.
// It also has the raw AF_PACKET socket the examples use to send test
// frames from the far end of a pair and to watch what comes out of it.
package bed

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/netns"
)

// Port is one interface and the namespace it lives in.
type Port struct {
	// Name is the interface's name.
	Name string
	// Host is the throwaway namespace holding it, or nil for an
	// interface of the program's own namespace.
	Host *netns.Host
}

// Named is the interface the user named, in the program's namespace.
func Named(name string) Port { return Port{Name: name} }

// Of is the interface of one end of a veth pair.
func Of(h *netns.Host) Port { return Port{Name: h.Link, Host: h} }

// Do runs fn in the port's namespace: what opening a Fleet, a kernel socket
// or a raw socket on it needs (they stay in that namespace afterwards,
// whatever thread uses them).
func (p Port) Do(fn func() error) error {
	if p.Host == nil {
		return fn()
	}
	return p.Host.Do(fn)
}

// Addresses of the pairs the examples make.
var (
	AddrA = netip.MustParsePrefix("10.98.0.1/24")
	AddrB = netip.MustParsePrefix("10.98.0.2/24")
)

// NewPair makes a veth pair between two throwaway namespaces, with address
// a on end A and b on end B (both invalid: no addresses). Close removes it.
func NewPair(a, b netip.Prefix) (*netns.Pair, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("making a veth pair in throwaway namespaces needs root (or name an interface with -i)")
	}
	var opts []netns.Option
	if a.IsValid() || b.IsValid() {
		opts = append(opts, netns.WithAddrs(a, b))
	}
	return netns.Create(opts...)
}

// Interrupted returns a context cancelled on SIGINT or SIGTERM, so that a
// loop stops and the deferred Close calls run: the host is left as it was.
func Interrupted() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// Raw is an AF_PACKET socket on one interface: it sends whole Ethernet
// frames and receives the ones the interface receives (not its own).
type Raw struct {
	fd      int
	ifindex int
}

// OpenRaw opens a raw socket on p, in p's namespace.
func OpenRaw(p Port) (*Raw, error) {
	r := &Raw{fd: -1}
	err := p.Do(func() error {
		ifi, err := netInterface(p.Name)
		if err != nil {
			return err
		}
		r.ifindex = ifi
		proto := int(htons(unix.ETH_P_ALL))
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
		if err != nil {
			return fmt.Errorf("raw socket on %s: %w", p.Name, err)
		}
		r.fd = fd
		// Room for bursts of full-size test frames (root may force it).
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 4<<20)
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi}); err != nil {
			unix.Close(fd)
			r.fd = -1
			return fmt.Errorf("bind a raw socket to %s: %w", p.Name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func netInterface(name string) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, fmt.Errorf("no interface %q: %w", name, err)
	}
	return int(ifr.Uint32()), nil
}

// Send transmits one frame, waiting out a busy device for up to a second.
func (r *Raw) Send(frame []byte) error {
	sa := &unix.SockaddrLinklayer{Ifindex: r.ifindex, Halen: 6}
	for range 1000 {
		err := unix.Sendto(r.fd, frame, 0, sa)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.ENOBUFS), errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
			time.Sleep(time.Millisecond)
		default:
			return fmt.Errorf("raw send: %w", err)
		}
	}
	return errors.New("raw send: the interface stayed busy for a second")
}

// Recv waits up to timeout for a frame the interface received, copies it
// into buf and returns its length; 0 and no error when none came in time.
// Frames the interface sent are skipped.
func (r *Raw) Recv(buf []byte, timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return 0, nil
		}
		fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("raw poll: %w", err)
		}
		if n == 0 {
			continue
		}
		m, from, err := unix.Recvfrom(r.fd, buf, unix.MSG_DONTWAIT)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("raw receive: %w", err)
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && (ll.Pkttype == unix.PACKET_OUTGOING || ll.Ifindex != r.ifindex) {
			continue
		}
		return m, nil
	}
}

// Close closes the socket. It is idempotent.
func (r *Raw) Close() error {
	if r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}

// AfterFirstLine returns a writer to w that holds msg back until the first
// line has been written through it, so that a program's first line (what it
// runs) stays first when something was done, and said, before it.
func AfterFirstLine(w io.Writer, msg string) io.Writer {
	return &afterFirst{w: w, msg: msg}
}

type afterFirst struct {
	w    io.Writer
	msg  string
	done bool
}

func (a *afterFirst) Write(p []byte) (int, error) {
	if a.done {
		return a.w.Write(p)
	}
	i := bytes.IndexByte(p, '\n')
	if i < 0 {
		return a.w.Write(p)
	}
	n, err := a.w.Write(p[:i+1])
	if err != nil {
		return n, err
	}
	a.done = true
	if _, err := io.WriteString(a.w, a.msg); err != nil {
		return n, err
	}
	m, err := a.w.Write(p[i+1:])
	return n + m, err
}
