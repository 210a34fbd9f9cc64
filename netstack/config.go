package netstack

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/packetio/packetio"
)

// ErrInvalidConfig is wrapped by every error New returns for a Config it
// refuses. The message names the field and the value.
var ErrInvalidConfig = errors.New("netstack: invalid config")

// Config says what the stack is on its link. Only Addr is required.
type Config struct {
	// Addr is the stack's address and the prefix of its link, IPv4 or
	// IPv6, for example 192.0.2.10/24. It must be a unicast address that is
	// neither the prefix's network nor (IPv4) its broadcast address.
	Addr netip.Prefix
	// Addr6 gives an IPv4 stack an IPv6 address as well (dual stack). It
	// must be IPv6 and is refused when Addr is already IPv6.
	Addr6 netip.Prefix
	// MAC is the stack's Ethernet address. Nil picks a random locally
	// administered one. A group (multicast) or all-zero address is refused.
	MAC net.HardwareAddr
	// MTU is the largest IP packet the stack sends. Zero means
	// min(1500, the device's MaxFrameSize less the Ethernet header). It is
	// refused above what one frame carries (on a device with MultiBuffer,
	// above what the link carries: MaxTxLen; a longer packet then leaves as
	// a chain of frames), below 68 for IPv4 and below 1280 when the stack
	// has an IPv6 address.
	MTU int
	// Gateway is the router for destinations off Addr's prefix; it must lie
	// on that prefix. Without it only the prefix is reachable.
	Gateway netip.Addr
	// Gateway6 is the router for destinations off Addr6's prefix.
	Gateway6 netip.Addr
	// Neighbors pins link addresses: entries are installed as static
	// neighbours and never resolved or replaced. Each address must be of a
	// family the stack has and each MAC a unicast, non-zero one.
	Neighbors map[netip.Addr]net.HardwareAddr
	// VLAN is the 802.1Q VLAN ID the stack sends and receives on, 1 to
	// 4094; zero means untagged. Frames on any other VLAN (or untagged
	// frames, when set) are dropped and counted.
	VLAN uint16
	// NoGSO makes the stack hand the link one MSS-sized segment at a time
	// instead of up to 64 KiB that the endpoint segments.
	NoGSO bool
	// NoGRO turns off merging of received TCP segments before the stack
	// sees them.
	NoGRO bool
	// SendBufferSize and ReceiveBufferSize set the default TCP buffer of
	// each connection. Zero means 4 MiB; the stack may still auto-tune the
	// receive buffer up to 32 MiB.
	SendBufferSize, ReceiveBufferSize int
	// TxWait bounds how long a packet waits for room on a full transmit
	// queue before it is dropped and counted in Stats.TxDropped (TCP then
	// retransmits it). Zero means 5 ms; negative is refused.
	TxWait time.Duration
	// RACK turns on gVisor's RACK-TLP loss detection (RFC 8985) in place
	// of SACK-based recovery with duplicate-ACK counting (RFC 6675). It is
	// off by default: in upstream gVisor, RACK together with GSO can
	// leave a sender that recovers from a retransmission timeout
	// retransmitting one segment per timeout (200 ms) although every one
	// is acknowledged at once, until the connection's deadline (about one
	// 1 MiB echo in 30 over a pipe dropping on full rings, at MTU 576;
	// none in 1,900 with RACK off). The README has the measurements.
	RACK bool
	// RxSpin is how long a receive goroutine keeps looking at a busy
	// queue that went empty before it sleeps in the device's Poll, on
	// devices whose Poll sleeps (Capabilities().BlockingPoll: afpacket,
	// afxdp). A queue is busy when its last two batches came less than
	// RxSpin apart: under a bulk transfer the next batch is then found
	// without a sleep and a wake-up, while a lone request, further apart,
	// makes the goroutine sleep at once. Zero means DefaultRxSpin; negative
	// never spins; at most 1 ms. The spin yields to other goroutines
	// (runtime.Gosched) but keeps a CPU busy while it lasts.
	RxSpin time.Duration
	// AckDelay is how long a TCP connection that answers what it
	// receives (a server replying to requests, either end of a
	// request/response exchange) holds the ACK for a request, so that the
	// reply carries it instead of a bare ACK leaving first. A connection
	// counts as answering once it sends data less than AckDelay after data
	// arrived, and stops when a held ACK has to leave on its own; two full
	// segments, out-of-order data and a FIN are acknowledged at once, and a
	// connection that only receives never delays. A peer that sends with
	// Nagle's algorithm on and writes one request in two small pieces
	// waits up to AckDelay for the second (as with Linux's 40 ms and
	// more); Go's net package turns Nagle off. Zero means
	// DefaultAckDelay; negative acknowledges every batch of segments at
	// once (upstream gVisor); at most 100 ms, half the shortest
	// retransmission timeout of Linux and gVisor peers (200 ms). Above
	// about 2 ms a Linux peer with two small segments in flight may send
	// a tail-loss probe (a duplicate segment) before the held ACK leaves.
	AckDelay time.Duration
	// SendEager makes a TCP sender send whatever an ACK lets it, at once,
	// as upstream gVisor does. By default, while data is in flight, new
	// data that the window would cut below a full (GSO) segment and below
	// a third of the window waits for the next ACK, so that a bulk sender
	// sends fewer, larger packets (Linux's tcp_tso_should_defer). Only new
	// data is held, only while at least two full segments are in flight
	// (their ACK comes at once and sends it), and never while a loss is
	// being recovered.
	SendEager bool
	// EagerWake makes every goroutine a received segment wakes start an
	// idle thread (on another CPU, if one is idle), as upstream gVisor and
	// the Go runtime do. By default a receive goroutine hands a segment to
	// TCP's processor goroutine without starting one, and the processor,
	// when it has no other connection queued, hands the data (or the room
	// to write) to the reader or writer the same way: each runs on the
	// thread that woke it as soon as that thread sleeps or yields, which it
	// does at once (a receive goroutine yields before its next batch). A
	// request/response exchange then stays on one thread instead of waking
	// another CPU at each hand-off; the README has the measurements.
	// gVisor's TCPLazyWakeOption (the fourth patch); only amd64 has the
	// runtime hook it needs, elsewhere every wake-up is eager.
	EagerWake bool
}

// Defaults used when a Config field is zero.
const (
	DefaultMTU        = 1500
	DefaultBufferSize = 4 << 20
	DefaultTxWait     = 5 * time.Millisecond
	DefaultRxSpin     = 20 * time.Microsecond
	DefaultAckDelay   = time.Millisecond
	maxAckDelay       = 100 * time.Millisecond
	maxRxSpin         = time.Millisecond
	maxBufferSize     = 64 << 20
)

// resolved is a Config checked against a device, with defaults filled in.
type resolved struct {
	Config
	mac    net.HardwareAddr
	hdrLen int // Ethernet header, with the 802.1Q tag when VLAN is set
	mtu    int
}

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
}

// checkAddr refuses addresses a stack cannot own.
func checkAddr(field string, p netip.Prefix) error {
	a := p.Addr()
	switch {
	case a.Is4In6():
		return bad("%s %s is an IPv4-mapped IPv6 address; give the IPv4 address", field, p)
	case a.IsUnspecified():
		return bad("%s %s is the unspecified address", field, p)
	case a.IsLoopback():
		return bad("%s %s is a loopback address", field, p)
	case a.IsMulticast():
		return bad("%s %s is a multicast address", field, p)
	case a.Is4() && a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return bad("%s %s is the limited broadcast address", field, p)
	}
	if a.Is4() && p.Bits() < 31 {
		if a == p.Masked().Addr() {
			return bad("%s %s is the network address of its prefix", field, p)
		}
		if a == broadcast4(p) {
			return bad("%s %s is the broadcast address of its prefix", field, p)
		}
	}
	return nil
}

func broadcast4(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	for i := p.Bits(); i < 32; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	return netip.AddrFrom4(b)
}

func checkMAC(field string, mac net.HardwareAddr) error {
	if len(mac) != 6 {
		return bad("%s %q is not a 6-byte Ethernet address", field, mac.String())
	}
	if mac[0]&1 != 0 {
		return bad("%s %s is a group (multicast or broadcast) address", field, mac)
	}
	if [6]byte(mac) == [6]byte{} {
		return bad("%s is all zeros", field)
	}
	return nil
}

func checkGateway(field string, gw netip.Addr, p netip.Prefix, pfield string) error {
	if !gw.IsValid() {
		return nil
	}
	if !p.IsValid() {
		return bad("%s %s given without %s", field, gw, pfield)
	}
	if gw.Is4() != p.Addr().Is4() || !p.Contains(gw) {
		return bad("%s %s is not on %s %s", field, gw, pfield, p)
	}
	if gw == p.Addr() {
		return bad("%s %s is the stack's own address", field, gw)
	}
	return nil
}

// resolve checks c against what dev can do and fills in defaults.
func (c Config) resolve(caps packetio.Capabilities) (resolved, error) {
	r := resolved{Config: c}
	if !c.Addr.IsValid() {
		return r, bad("Addr is required (an address with its prefix length, such as 192.0.2.10/24)")
	}
	if err := checkAddr("Addr", c.Addr); err != nil {
		return r, err
	}
	if c.Addr6.IsValid() {
		if !c.Addr.Addr().Is4() {
			return r, bad("Addr6 %s given with an IPv6 Addr %s; put the only IPv6 address in Addr", c.Addr6, c.Addr)
		}
		if !c.Addr6.Addr().Is6() || c.Addr6.Addr().Is4In6() {
			return r, bad("Addr6 %s is not an IPv6 address", c.Addr6)
		}
		if err := checkAddr("Addr6", c.Addr6); err != nil {
			return r, err
		}
	}
	if err := checkGateway("Gateway", c.Gateway, c.Addr, "Addr"); err != nil {
		return r, err
	}
	if err := checkGateway("Gateway6", c.Gateway6, c.Addr6, "Addr6"); err != nil {
		return r, err
	}
	if c.MAC == nil {
		r.mac = make(net.HardwareAddr, 6)
		if _, err := rand.Read(r.mac); err != nil {
			return r, fmt.Errorf("netstack: random MAC: %w", err)
		}
		r.mac[0] = r.mac[0]&^1 | 2 // unicast, locally administered
	} else {
		if err := checkMAC("MAC", c.MAC); err != nil {
			return r, err
		}
		r.mac = append(net.HardwareAddr(nil), c.MAC...)
	}
	if c.VLAN > 4094 {
		return r, bad("VLAN %d is out of range (1 to 4094, or 0 for untagged)", c.VLAN)
	}
	r.hdrLen = 14
	if c.VLAN != 0 {
		r.hdrLen = 18
	}
	maxMTU := maxPacketLen(caps) - r.hdrLen
	r.mtu = c.MTU
	if r.mtu == 0 {
		r.mtu = min(DefaultMTU, maxMTU)
	}
	has6 := c.Addr.Addr().Is6() || c.Addr6.IsValid()
	switch {
	case r.mtu < 0:
		return r, bad("MTU %d is negative", c.MTU)
	case r.mtu > maxMTU:
		if maxMTU > caps.MaxFrameSize-r.hdrLen {
			return r, bad("MTU %d is above what the link carries (%d bytes with a %d-byte link header: at most %d)", r.mtu, maxPacketLen(caps), r.hdrLen, maxMTU)
		}
		return r, bad("MTU %d does not fit a %d-byte frame with a %d-byte link header (at most %d; a device with multi-buffer takes more)", r.mtu, caps.MaxFrameSize, r.hdrLen, maxMTU)
	case r.mtu > 65535:
		return r, bad("MTU %d is above 65535", r.mtu)
	case r.mtu < 68:
		return r, bad("MTU %d is below 68, the IPv4 minimum", r.mtu)
	case has6 && r.mtu < 1280:
		return r, bad("MTU %d is below 1280, the IPv6 minimum", r.mtu)
	}
	for ip, mac := range c.Neighbors {
		switch {
		case !ip.IsValid():
			return r, bad("Neighbors has an invalid address")
		case ip.Is4In6():
			return r, bad("Neighbors %s is an IPv4-mapped IPv6 address", ip)
		case ip.IsUnspecified() || ip.IsMulticast() || ip.IsLoopback():
			return r, bad("Neighbors %s is not a unicast address", ip)
		case ip.Is4() && !c.Addr.Addr().Is4():
			return r, bad("Neighbors %s is IPv4 but the stack has no IPv4 address", ip)
		case ip.Is6() && !has6:
			return r, bad("Neighbors %s is IPv6 but the stack has no IPv6 address", ip)
		}
		if err := checkMAC(fmt.Sprintf("Neighbors[%s]", ip), mac); err != nil {
			return r, err
		}
	}
	for _, b := range []struct {
		name string
		v    int
	}{{"SendBufferSize", c.SendBufferSize}, {"ReceiveBufferSize", c.ReceiveBufferSize}} {
		if b.v < 0 || b.v > maxBufferSize {
			return r, bad("%s %d is out of range (0 for the default, at most %d)", b.name, b.v, maxBufferSize)
		}
		if b.v > 0 && b.v < 4096 {
			return r, bad("%s %d is below 4096", b.name, b.v)
		}
	}
	if r.SendBufferSize == 0 {
		r.SendBufferSize = DefaultBufferSize
	}
	if r.ReceiveBufferSize == 0 {
		r.ReceiveBufferSize = DefaultBufferSize
	}
	if c.TxWait < 0 {
		return r, bad("TxWait %v is negative", c.TxWait)
	}
	if r.TxWait == 0 {
		r.TxWait = DefaultTxWait
	}
	var err error
	if r.RxSpin, err = resolveDuration("RxSpin", c.RxSpin, DefaultRxSpin, maxRxSpin); err != nil {
		return r, err
	}
	if r.AckDelay, err = resolveDuration("AckDelay", c.AckDelay, DefaultAckDelay, maxAckDelay); err != nil {
		return r, err
	}
	return r, nil
}

// resolveDuration is the rule RxSpin and AckDelay share: zero means def,
// negative turns the feature off (0), and above most is refused.
func resolveDuration(field string, v, def, most time.Duration) (time.Duration, error) {
	switch {
	case v > most:
		return 0, bad("%s %v is above %v (negative turns it off, 0 is %v)", field, v, most, def)
	case v == 0:
		return def, nil
	case v < 0:
		return 0, nil
	}
	return v, nil
}
