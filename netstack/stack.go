package netstack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"

	"github.com/packetio/packetio"
)

const nicID tcpip.NICID = 1

// Stack is a TCP/IP stack running over one packetio device. Its methods are
// safe for concurrent use.
type Stack struct {
	dev packetio.Device
	cfg resolved
	ep  *endpoint
	s   *stack.Stack

	has4, has6 bool

	done      chan struct{}
	doneOnce  sync.Once
	mu        sync.Mutex
	err       error // why the stack stopped; nil while it runs
	closing   bool
	closeOnce sync.Once
}

var (
	claimMu sync.Mutex
	claims  = map[packetio.Device]bool{}
)

// New starts a stack on every queue of dev. The device must have at least
// one receive and one transmit queue, and carries one stack at a time.
// Close stops the stack and leaves the device open; the caller closes it.
func New(dev packetio.Device, cfg Config) (*Stack, error) {
	if dev == nil {
		return nil, fmt.Errorf("netstack: nil device: %w", packetio.ErrUnsupported)
	}
	if dev.NumRxQueues() < 1 || dev.NumTxQueues() < 1 {
		return nil, fmt.Errorf("netstack: device has %d receive and %d transmit queues, needs at least one of each: %w",
			dev.NumRxQueues(), dev.NumTxQueues(), packetio.ErrUnsupported)
	}
	caps := dev.Capabilities()
	r, err := cfg.resolve(caps)
	if err != nil {
		return nil, err
	}
	if err := claim(dev); err != nil {
		return nil, err
	}
	st := &Stack{dev: dev, cfg: r, done: make(chan struct{})}
	st.has4 = r.Addr.Addr().Is4()
	st.has6 = r.Addr.Addr().Is6() || r.Addr6.IsValid()
	if err := st.start(); err != nil {
		if st.s != nil {
			st.s.Destroy()
		}
		if st.ep != nil {
			st.ep.Close()
			st.ep.waitRx()
		}
		release(dev)
		return nil, err
	}
	return st, nil
}

func claim(dev packetio.Device) (err error) {
	claimMu.Lock()
	defer claimMu.Unlock()
	defer func() {
		if recover() != nil { // a device type that cannot be a map key
			err = nil
		}
	}()
	if claims[dev] {
		return fmt.Errorf("netstack: the %s device already carries a stack: %w", dev.Capabilities().Backend, packetio.ErrUnsupported)
	}
	claims[dev] = true
	return nil
}

func release(dev packetio.Device) {
	claimMu.Lock()
	defer claimMu.Unlock()
	defer func() { _ = recover() }()
	delete(claims, dev)
}

func tcpipErr(what string, e tcpip.Error) error {
	return fmt.Errorf("netstack: %s: %s", what, e)
}

func (st *Stack) start() error {
	r := &st.cfg
	var nets []stack.NetworkProtocolFactory
	if st.has4 {
		nets = append(nets, ipv4.NewProtocol, arp.NewProtocol)
	}
	if st.has6 {
		nets = append(nets, ipv6.NewProtocolWithOptions(ipv6.Options{}))
	}
	st.s = stack.New(stack.Options{
		NetworkProtocols:   nets,
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol},
		HandleLocal:        true,
	})
	for _, opt := range []tcpip.SettableTransportProtocolOption{
		ptr(tcpip.TCPSACKEnabled(true)),
		ptr(tcpip.CongestionControlOption("cubic")),
		ptr(tcpip.TCPModerateReceiveBufferOption(true)),
		ptr(lossDetection(r.RACK)),
		ptr(tcpip.TCPDelayedAckOption(r.AckDelay)),
		ptr(tcpip.TCPSendDeferOption(!r.SendEager)),
		ptr(tcpip.TCPLazyWakeOption(!r.EagerWake)),
		&tcpip.TCPSendBufferSizeRangeOption{Min: 4096, Default: r.SendBufferSize, Max: max(r.SendBufferSize, 32<<20)},
		&tcpip.TCPReceiveBufferSizeRangeOption{Min: 4096, Default: r.ReceiveBufferSize, Max: max(r.ReceiveBufferSize, 32<<20)},
	} {
		if e := st.s.SetTransportProtocolOption(tcp.ProtocolNumber, opt); e != nil {
			return tcpipErr(fmt.Sprintf("TCP option %T", opt), e)
		}
	}
	st.ep = newEndpoint(st.dev, r, st.fail)
	if e := st.s.CreateNICWithOptions(nicID, st.ep, stack.NICOptions{Name: "packetio", Disabled: true}); e != nil {
		return tcpipErr("create NIC", e)
	}
	var routes []tcpip.Route
	for _, p := range []netip.Prefix{r.Addr, r.Addr6} {
		if !p.IsValid() {
			continue
		}
		pa := tcpip.ProtocolAddress{
			Protocol:          protoOf(p.Addr()),
			AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpAddr(p.Addr()), PrefixLen: p.Bits()},
		}
		if e := st.s.AddProtocolAddress(nicID, pa, stack.AddressProperties{}); e != nil {
			return tcpipErr("add address "+p.String(), e)
		}
		routes = append(routes, tcpip.Route{Destination: pa.AddressWithPrefix.Subnet(), NIC: nicID})
	}
	if r.Gateway.IsValid() {
		routes = append(routes, defaultRoute(r.Gateway))
	}
	if r.Gateway6.IsValid() {
		routes = append(routes, defaultRoute(r.Gateway6))
	}
	st.s.SetRouteTable(routes)
	for ip, mac := range r.Neighbors {
		if e := st.s.AddStaticNeighbor(nicID, protoOf(ip), tcpAddr(ip), tcpip.LinkAddress(mac)); e != nil {
			return tcpipErr("neighbor "+ip.String(), e)
		}
	}
	if e := st.s.EnableNIC(nicID); e != nil {
		return tcpipErr("enable NIC", e)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

func defaultRoute(gw netip.Addr) tcpip.Route {
	var dst tcpip.Subnet
	if gw.Is4() {
		dst = header.IPv4EmptySubnet
	} else {
		dst = header.IPv6EmptySubnet
	}
	return tcpip.Route{Destination: dst, Gateway: tcpAddr(gw), NIC: nicID}
}

func protoOf(a netip.Addr) tcpip.NetworkProtocolNumber {
	if a.Is4() {
		return ipv4.ProtocolNumber
	}
	return ipv6.ProtocolNumber
}

func tcpAddr(a netip.Addr) tcpip.Address {
	if a.Is4() {
		return tcpip.AddrFrom4(a.As4())
	}
	return tcpip.AddrFrom16(a.As16())
}

// fail records the first failure of a queue and marks the stack done.
func (st *Stack) fail(err error) {
	st.mu.Lock()
	if st.err == nil && !st.closing {
		st.err = err
	}
	st.mu.Unlock()
	st.doneOnce.Do(func() { close(st.done) })
}

// Err says why the stack stopped: nil while it runs, the device's error
// after a queue failed (wrapping packetio.ErrQueueFailed or
// packetio.ErrClosed), net.ErrClosed after Close.
func (st *Stack) Err() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.err
}

// Done is closed when the stack stops: after Close, or when a queue of the
// device fails. Err then says why. A failed stack still needs Close.
func (st *Stack) Done() <-chan struct{} { return st.done }

// Close stops the stack: every connection is reset and every listener and
// socket returns net.ErrClosed. It waits for the receive goroutines and
// leaves the device open. It is idempotent.
func (st *Stack) Close() error {
	st.closeOnce.Do(func() {
		st.mu.Lock()
		st.closing = true
		if st.err == nil {
			st.err = fmt.Errorf("netstack: stack closed: %w", net.ErrClosed)
		}
		st.mu.Unlock()
		st.s.Destroy() // resets connections while transmit still works
		st.ep.Close()
		st.ep.waitRx()
		release(st.dev)
		st.doneOnce.Do(func() { close(st.done) })
	})
	return nil
}

func (st *Stack) isClosing() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.closing
}

// Stats returns the stack's counters.
func (st *Stack) Stats() Stats {
	s := st.ep.stats.load()
	ts := st.s.Stats()
	s.TCPRetransmits = ts.TCP.Retransmits.Value()
	s.TCPChecksumErrors = ts.TCP.ChecksumErrors.Value()
	s.TCPResetsSent = ts.TCP.ResetsSent.Value()
	s.TCPEstablishedResets = ts.TCP.EstablishedResets.Value()
	s.TCPCurrentEstablished = ts.TCP.CurrentEstablished.Value()
	s.UDPReceiveBufferErrors = ts.UDP.ReceiveBufferErrors.Value()
	for _, r := range st.ep.rx {
		if rs, err := r.q.Stats(); err == nil {
			s.RxDeviceDropped += rs.Dropped
		}
	}
	return s
}

// MAC returns the stack's Ethernet address (Config.MAC, or the one New
// picked).
func (st *Stack) MAC() net.HardwareAddr { return append(net.HardwareAddr(nil), st.cfg.mac...) }

// MTU returns the MTU the stack uses.
func (st *Stack) MTU() int { return st.cfg.mtu }

// TCPIP returns the gVisor stack underneath, for what this package does
// not wrap. Changing its NICs, addresses or routes is the caller's risk.
func (st *Stack) TCPIP() *stack.Stack { return st.s }

// sockAddr is a parsed network and address.
type sockAddr struct {
	full  tcpip.FullAddress
	proto tcpip.NetworkProtocolNumber
	any   bool // unspecified host: bind to every address
}

// parse checks network ("tcp", "tcp4", "tcp6" or the udp ones, as kind
// says) and a "host:port" address with a literal IP. An empty host is
// allowed when listening: it means every address of the family, and for a
// bare "tcp" or "udp" both families where the stack has both.
func (st *Stack) parse(kind, network, address string, listen bool) (sockAddr, error) {
	var fam byte
	switch network {
	case kind:
	case kind + "4":
		fam = 4
	case kind + "6":
		fam = 6
	default:
		return sockAddr{}, net.UnknownNetworkError(network)
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return sockAddr{}, err
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return sockAddr{}, fmt.Errorf("netstack: port %q is not a number from 0 to 65535", port)
	}
	if !listen && p == 0 {
		return sockAddr{}, fmt.Errorf("netstack: dialing port 0 in %q", address)
	}
	sa := sockAddr{full: tcpip.FullAddress{Port: uint16(p)}}
	if host == "" {
		if !listen {
			return sockAddr{}, fmt.Errorf("netstack: %q has no host to dial", address)
		}
		sa.any = true
		switch {
		case fam == 4 || fam == 0 && !st.has6:
			sa.proto = ipv4.ProtocolNumber
		default:
			sa.proto = ipv6.ProtocolNumber
		}
	} else {
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return sockAddr{}, fmt.Errorf("netstack: %q is not an IP address (the stack resolves no names): %w", host, err)
		}
		ip = ip.WithZone("").Unmap()
		switch {
		case fam == 4 && !ip.Is4(), fam == 6 && !ip.Is6():
			return sockAddr{}, &net.AddrError{Err: "address of the wrong family for " + network, Addr: host}
		}
		sa.proto = protoOf(ip)
		if !ip.IsUnspecified() {
			sa.full.Addr = tcpAddr(ip)
		} else if !listen {
			return sockAddr{}, fmt.Errorf("netstack: cannot dial the unspecified address %s", host)
		} else {
			sa.any = true
		}
	}
	if sa.proto == ipv4.ProtocolNumber && !st.has4 {
		return sockAddr{}, fmt.Errorf("netstack: %s %s: the stack has no IPv4 address", network, address)
	}
	if sa.proto == ipv6.ProtocolNumber && !st.has6 {
		return sockAddr{}, fmt.Errorf("netstack: %s %s: the stack has no IPv6 address", network, address)
	}
	return sa, nil
}

// Listen announces on a local TCP address, like net.Listen. network is
// "tcp", "tcp4" or "tcp6"; the host must be empty or a literal IP.
func (st *Stack) Listen(network, address string) (net.Listener, error) {
	sa, err := st.parse("tcp", network, address, true)
	if err != nil {
		return nil, opErr("listen", network, nil, err)
	}
	if st.isClosing() {
		return nil, opErr("listen", network, nil, net.ErrClosed)
	}
	l, err := gonet.ListenTCP(st.s, sa.full, sa.proto)
	if err != nil {
		return nil, st.mapErr("listen", network, err, false)
	}
	return &listener{TCPListener: l, st: st, network: network}, nil
}

// Dial connects to a TCP address, like net.Dial. The host must be a literal
// IP address.
func (st *Stack) Dial(network, address string) (net.Conn, error) {
	return st.DialContext(context.Background(), network, address)
}

// DialContext is Dial with a context that bounds the connection attempt.
func (st *Stack) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	sa, err := st.parse("tcp", network, address, false)
	if err != nil {
		return nil, opErr("dial", network, nil, err)
	}
	if st.isClosing() {
		return nil, opErr("dial", network, nil, net.ErrClosed)
	}
	c, err := gonet.DialContextTCP(ctx, st.s, sa.full, sa.proto)
	if err != nil {
		if ctx.Err() != nil {
			return nil, opErr("dial", network, nil, ctx.Err())
		}
		return nil, st.mapErr("dial", network, err, false)
	}
	return &tcpConn{TCPConn: c, st: st}, nil
}

// ListenPacket opens a UDP socket on a local address, like
// net.ListenPacket. network is "udp", "udp4" or "udp6".
func (st *Stack) ListenPacket(network, address string) (net.PacketConn, error) {
	sa, err := st.parse("udp", network, address, true)
	if err != nil {
		return nil, opErr("listen", network, nil, err)
	}
	if st.isClosing() {
		return nil, opErr("listen", network, nil, net.ErrClosed)
	}
	c, err := gonet.DialUDP(st.s, &sa.full, nil, sa.proto)
	if err != nil {
		return nil, st.mapErr("listen", network, err, false)
	}
	return &udpConn{UDPConn: c, st: st}, nil
}

// DialUDP opens a UDP socket connected to address, like net.Dial with a
// udp network: Write sends to it and Read takes only its datagrams.
func (st *Stack) DialUDP(network, address string) (net.Conn, error) {
	sa, err := st.parse("udp", network, address, false)
	if err != nil {
		return nil, opErr("dial", network, nil, err)
	}
	if st.isClosing() {
		return nil, opErr("dial", network, nil, net.ErrClosed)
	}
	c, err := gonet.DialUDP(st.s, nil, &sa.full, sa.proto)
	if err != nil {
		return nil, st.mapErr("dial", network, err, false)
	}
	return &udpConn{UDPConn: c, st: st}, nil
}

func opErr(op, network string, addr net.Addr, err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		return err
	}
	return &net.OpError{Op: op, Net: network, Addr: addr, Err: err}
}

// lossDetection is the TCP loss-detection setting for Config.RACK.
func lossDetection(rack bool) tcpip.TCPRecovery {
	if rack {
		return tcpip.TCPRACKLossDetection
	}
	return 0
}
