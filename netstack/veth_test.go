//go:build linux

package netstack

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afpacket"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/netstack/afxdpsteer"
)

// The veth tests put a stack on one end of a veth pair (host A) through a
// packetio backend and talk to the kernel's own TCP/IP in the other
// namespace (host B).
//
// Addressing on afpacket: AF_PACKET is a tap, so A's kernel sees every frame
// the stack sees. The stack therefore uses 10.9.0.3, an address no kernel
// owns: A's kernel ignores ARP for it and drops TCP to it, where with A's
// own address 10.9.0.1 it would answer every SYN to the stack's ports with
// a reset. The stack uses A's MAC, so B's frames reach A's interface
// without promiscuous mode. The afxdp modes use the same addresses, for the
// reasons in veth_afxdp_test.go.
var (
	vethKernelA = mustPrefix("10.9.0.1/24")
	vethKernelB = mustPrefix("10.9.0.2/24")
	vethStack   = mustPrefix("10.9.0.3/24")
	// IPv6 the same way: B's kernel has fd09::2, the stack fd09::3, and
	// A's kernel only its link-local address.
	vethKernelB6 = mustPrefix("fd09::2/64")
	vethStack6   = mustPrefix("fd09::3/64")
)

// vethMode is how the backend is opened.
type vethMode struct {
	name string
	// open opens the device on h, inside h's namespace. need is what the
	// subtest will send the stack, for a backend that steers (afxdp);
	// taps ignore it.
	open func(h *netns.Host, need afxdpsteer.Traffic) (packetio.Device, error)
	// need, when set, stops a test the machine cannot run (a skip with
	// the reason, a failure under PACKETIO_CONFORM_REQUIRED).
	need func(t *testing.T)
	// peerTxOff turns off transmit checksum offload (and with it TSO) on
	// the kernel's end, for devices that cannot take its super-frames or
	// partial checksums.
	peerTxOff bool
	// groOnA turns on GRO on A's end, so A's kernel merges B's segments
	// into super-frames before the device sees them.
	groOnA bool
	// offload is true when the device segments and checksums for the
	// stack, false when the stack cuts its own segments.
	offload bool
	// warmup, when set, runs before the goroutine baseline is taken, to
	// start what a backend keeps for the whole process (DPDK's EAL).
	warmup func(t *testing.T)
	// queues is the number of queues of each veth end (default 1).
	queues int
	// csumOffload is true when the device finishes the stack's TCP
	// checksums without segmenting (checksum-only offload).
	csumOffload bool
	// mtu, when set, is the MTU of both veth ends and of the stack; above
	// a frame, packets travel as chains of frames both ways.
	mtu int
}

var vethModes = []vethMode{
	{
		name: "afpacket-gso",
		open: func(h *netns.Host, _ afxdpsteer.Traffic) (packetio.Device, error) {
			return afpacket.Open(h.Link, afpacket.WithGSO())
		},
		offload: true,
	},
	{
		// B segments and checksums in software; A's kernel merges the
		// segments again (GRO) and hands the device super-frames with a
		// partial checksum, as it does behind a NIC with GRO.
		name: "afpacket-gso-kernel-gro",
		open: func(h *netns.Host, _ afxdpsteer.Traffic) (packetio.Device, error) {
			return afpacket.Open(h.Link, afpacket.WithGSO())
		},
		peerTxOff: true,
		groOnA:    true,
		offload:   true,
	},
	{
		name: "afpacket",
		open: func(h *netns.Host, _ afxdpsteer.Traffic) (packetio.Device, error) {
			return afpacket.Open(h.Link)
		},
		peerTxOff: true,
	},
	{
		// Two queues each way: a fanout group spreads flows over the
		// receive queues and replies follow them.
		name: "afpacket-gso-2-queues",
		open: func(h *netns.Host, _ afxdpsteer.Traffic) (packetio.Device, error) {
			return afpacket.Open(h.Link, afpacket.WithGSO(), afpacket.WithQueues(2), afpacket.WithFrames(512))
		},
		offload: true,
	},
}

// vethStackOn makes the pair, opens the device on A inside A's namespace
// for the traffic need names and starts a stack on it.
func vethStackOn(t *testing.T, m vethMode, need afxdpsteer.Traffic) (*netns.Pair, *Stack) {
	t.Helper()
	pair := vethPair(t, m)
	return pair, vethStartStack(t, m, pair, need)
}

// vethPair makes the pair and sets the kernel's offloads as m wants them.
func vethPair(t *testing.T, m vethMode) *netns.Pair {
	t.Helper()
	if m.need != nil {
		m.need(t)
	}
	if m.warmup != nil {
		m.warmup(t)
	}
	checkGoroutines(t)
	opts := []netns.Option{netns.WithAddrs(vethKernelA, vethKernelB), netns.WithIPv6(), netns.WithQueues(max(m.queues, 1))}
	if m.mtu != 0 {
		opts = append(opts, netns.WithMTU(m.mtu))
	}
	pair := netns.New(t, opts...)
	if err := pair.B.Do(func() error { return addNoDAD(pair.B.Link, vethKernelB6) }); err != nil {
		t.Fatal(err)
	}
	if m.peerTxOff {
		ethtool(t, pair.B, "tx", false)
	}
	if m.groOnA {
		ethtool(t, pair.A, "gro", true)
	}
	return pair
}

// vethStartStack opens the device on A for the traffic need names (to the
// stack's addresses) and starts a stack on it.
func vethStartStack(t *testing.T, m vethMode, pair *netns.Pair, need afxdpsteer.Traffic) *Stack {
	t.Helper()
	need.Addrs = []netip.Addr{vethStack.Addr(), vethStack6.Addr()}
	var dev packetio.Device
	if err := pair.A.Do(func() error {
		var err error
		dev, err = m.open(pair.A, need)
		return err
	}); err != nil {
		t.Fatalf("open %s on %s: %v", m.name, pair.A.Link, err)
	}
	t.Cleanup(func() { dev.Close() })
	return newStack(t, dev, Config{Addr: vethStack, Addr6: vethStack6, MAC: pair.A.MAC, MTU: m.mtu})
}

// addNoDAD gives link an IPv6 address that is usable at once (no duplicate
// address detection). It runs inside the link's namespace.
func addNoDAD(link string, p netip.Prefix) error {
	l, err := netlink.LinkByName(link)
	if err != nil {
		return fmt.Errorf("find %s: %w", link, err)
	}
	a := &netlink.Addr{
		IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 128)},
		Flags: unix.IFA_F_NODAD,
	}
	if err := netlink.AddrAdd(l, a); err != nil {
		return fmt.Errorf("address %s on %s: %w", p, link, err)
	}
	return nil
}

// family is what a subtest speaks to the kernel: its network and the
// addresses of the stack and of B's kernel.
type family struct {
	name, tcp, udp string
	stack, kernel  netip.Addr
}

var families = []family{
	{"v4", "tcp4", "udp4", vethStack.Addr(), vethKernelB.Addr()},
	{"v6", "tcp6", "udp6", vethStack6.Addr(), vethKernelB6.Addr()},
}

// ethtool turns an offload feature of h's link on or off, inside h's
// namespace.
func ethtool(t *testing.T, h *netns.Host, feature string, on bool) {
	t.Helper()
	if _, err := exec.LookPath("ethtool"); err != nil {
		testenv.CannotRun(t, "needs ethtool: %v", err)
	}
	if err := h.SetFeature(feature, on); err != nil {
		t.Fatal(err)
	}
}

// kernelChecksumErrors reads the checksum failures h's kernel counted (TCP
// of both families, UDP, UDP over IPv6), from inside its namespace.
func kernelChecksumErrors(t *testing.T, h *netns.Host) map[string]uint64 {
	t.Helper()
	got := map[string]uint64{}
	if err := h.Do(func() error {
		// thread-self: /proc/self/net would be the namespace of the
		// process's main thread, not of this one.
		snmp, err := os.ReadFile("/proc/thread-self/net/snmp")
		if err != nil {
			return err
		}
		lines := strings.Split(string(snmp), "\n")
		for i := 0; i+1 < len(lines); i++ {
			names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
			if len(names) == 0 || len(names) != len(values) || names[0] != values[0] {
				continue
			}
			proto := strings.TrimSuffix(names[0], ":")
			if proto != "Tcp" && proto != "Udp" {
				continue
			}
			for j, n := range names {
				if n == "InCsumErrors" {
					got[proto], _ = strconv.ParseUint(values[j], 10, 64)
				}
			}
		}
		snmp6, err := os.ReadFile("/proc/thread-self/net/snmp6")
		if err != nil {
			return err
		}
		for _, l := range strings.Split(string(snmp6), "\n") {
			if f := strings.Fields(l); len(f) == 2 && f[0] == "Udp6InCsumErrors" {
				got["Udp6"], _ = strconv.ParseUint(f[1], 10, 64)
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("read %s's counters: %v", h.Link, err)
	}
	if len(got) != 3 {
		t.Fatalf("checksum counters of %s: found only %v", h.Link, got)
	}
	return got
}

// checkKernelClean fails if B's kernel found a bad TCP or UDP checksum in
// what the stack sent: a checksum the device was asked to finish, or one
// the endpoint computed, that does not add up.
func checkKernelClean(t *testing.T, h *netns.Host) {
	t.Helper()
	for proto, n := range kernelChecksumErrors(t, h) {
		if n != 0 {
			t.Errorf("%s's kernel counted %d %s checksum errors in what the stack sent", h.Link, n, proto)
		}
	}
}

// kernelDial connects from B's kernel.
func kernelDial(t *testing.T, h *netns.Host, network, addr string) net.Conn {
	t.Helper()
	var c net.Conn
	if err := h.Do(func() error {
		var err error
		c, err = net.DialTimeout(network, addr, 5*time.Second)
		return err
	}); err != nil {
		t.Fatalf("kernel dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestIntegrationVeth(t *testing.T) {
	for _, m := range vethModes {
		t.Run(m.name, func(t *testing.T) {
			for _, f := range families {
				t.Run("kernel-client-"+f.name, func(t *testing.T) { vethKernelClient(t, m, f) })
				t.Run("stack-client-"+f.name, func(t *testing.T) { vethStackClient(t, m, f) })
				t.Run("udp-"+f.name, func(t *testing.T) { vethUDP(t, m, f) })
			}
		})
	}
}

// A kernel TCP client talks to a netstack server: 200 small round trips,
// byte-exact, then 4 MiB each way.
func vethKernelClient(t *testing.T, m vethMode, f family) {
	pair, s := vethStackOn(t, m, afxdpsteer.Traffic{TCPPorts: []uint16{7}})
	l, err := s.Listen(f.tcp, ":7")
	if err != nil {
		t.Fatal(err)
	}
	done := echoServer(t, l)
	c := kernelDial(t, pair.B, f.tcp, netip.AddrPortFrom(f.stack, 7).String())
	c.SetDeadline(time.Now().Add(60 * time.Second))
	buf := make([]byte, 256)
	for i := range 200 {
		msg := []byte(fmt.Sprintf("round trip %d %x", i, randomBytes(t, i%64)))
		if _, err := c.Write(msg); err != nil {
			t.Fatalf("round trip %d: %v", i, err)
		}
		if _, err := io.ReadFull(c, buf[:len(msg)]); err != nil {
			t.Fatalf("round trip %d: %v", i, err)
		}
		if !bytes.Equal(buf[:len(msg)], msg) {
			t.Fatalf("round trip %d: got %q, want %q", i, buf[:len(msg)], msg)
		}
	}
	echo(t, c, randomBytes(t, 4<<20))
	c.Close()
	l.Close()
	<-done
	checkClean(t, "stack", s)
	checkKernelClean(t, pair.B)
	st := s.Stats()
	if m.offload && st.OffloadPackets == 0 {
		t.Errorf("the device segmented nothing for the stack: %+v", st)
	}
	if m.groOnA && st.RxSuperFrames == 0 {
		t.Errorf("A's kernel merged no segments for the stack: %+v", st)
	}
	if !m.offload && st.GSOPackets == 0 {
		t.Errorf("the stack cut no GSO packets: %+v", st)
	}
	if m.csumOffload && (st.OffloadChecksums == 0 || st.OffloadPackets != 0) {
		t.Errorf("want checksums finished by the device and nothing segmented by it: %+v", st)
	}
	if !m.csumOffload && !m.offload && st.OffloadChecksums != 0 {
		t.Errorf("checksum requests sent to a device without checksum offload: %+v", st)
	}
	if m.mtu > 1500 && (st.TxChained == 0 || st.RxChained == 0) {
		t.Errorf("MTU %d: packets sent as chains %d, received as chains %d; want both", m.mtu, st.TxChained, st.RxChained)
	}
	t.Logf("stack %+v", st)
}

// The stack dials a kernel listener (resolving the kernel's MAC by ARP) and
// echoes 4 MiB through it.
func vethStackClient(t *testing.T, m vethMode, f family) {
	pair := vethPair(t, m)
	var l net.Listener
	if err := pair.B.Do(func() error {
		var err error
		l, err = net.Listen(f.tcp, netip.AddrPortFrom(f.kernel, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s := vethStartStack(t, m, pair, afxdpsteer.Traffic{TCPPeers: []netip.AddrPort{l.Addr().(*net.TCPAddr).AddrPort()}})
	done := echoServer(t, l)
	c, err := s.Dial(f.tcp, l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	echo(t, c, randomBytes(t, 4<<20))
	c.Close()
	l.Close()
	<-done
	checkClean(t, "stack", s)
	checkKernelClean(t, pair.B)
}

// Datagrams both ways between a kernel UDP socket and the stack.
func vethUDP(t *testing.T, m vethMode, f family) {
	pair, s := vethStackOn(t, m, afxdpsteer.Traffic{UDPPorts: []uint16{53}})
	pc, err := s.ListenPacket(f.udp, ":53")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var kc net.PacketConn
	if err := pair.B.Do(func() error {
		var err error
		kc, err = net.ListenPacket(f.udp, netip.AddrPortFrom(f.kernel, 0).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	stackAddr := net.UDPAddrFromAddrPort(netip.AddrPortFrom(f.stack, 53))
	buf := make([]byte, 2048)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pc.SetDeadline(time.Now().Add(30 * time.Second))
	kc.SetDeadline(time.Now().Add(30 * time.Second))
	for i := range 50 {
		size := []int{1, 100, 1000, 1452}[i%4] // 1452: a full frame over IPv6
		msg := randomBytes(t, size)
		// Kernel to stack.
		if _, err := kc.WriteTo(msg, stackAddr); err != nil {
			t.Fatal(err)
		}
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			t.Fatalf("datagram %d to the stack: %v", i, err)
		}
		if !bytes.Equal(buf[:n], msg) {
			t.Fatalf("datagram %d to the stack differs", i)
		}
		// Stack to kernel.
		if _, err := pc.WriteTo(msg, from); err != nil {
			t.Fatal(err)
		}
		n, _, err = kc.ReadFrom(buf)
		if err != nil {
			t.Fatalf("datagram %d to the kernel: %v", i, err)
		}
		if !bytes.Equal(buf[:n], msg) {
			t.Fatalf("datagram %d to the kernel differs", i)
		}
		if ctx.Err() != nil {
			t.Fatal(ctx.Err())
		}
	}
	checkClean(t, "stack", s)
	checkKernelClean(t, pair.B)
}

// Two stacks, one on each end of the pair, over afpacket with GSO: the
// stacks' own super-frames cross the veth whole, both ways at once.
func TestIntegrationVethStackToStack(t *testing.T) {
	pair, a := vethStackOn(t, vethModes[0], afxdpsteer.Traffic{TCPPorts: []uint16{7}})
	var dev packetio.Device
	if err := pair.B.Do(func() error {
		var err error
		dev, err = afpacket.Open(pair.B.Link, afpacket.WithGSO())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	b := newStack(t, dev, Config{Addr: mustPrefix("10.9.0.4/24"), Addr6: mustPrefix("fd09::4/64"), MAC: pair.B.MAC})
	l, err := a.Listen("tcp", ":7")
	if err != nil {
		t.Fatal(err)
	}
	done := echoServer(t, l)
	for _, addr := range []string{"10.9.0.3:7", "[fd09::3]:7"} {
		c, err := b.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		echo(t, c, randomBytes(t, 16<<20))
		c.Close()
	}
	l.Close()
	<-done
	checkClean(t, "A", a)
	checkClean(t, "B", b)
	if a.Stats().RxSuperFrames == 0 || b.Stats().RxSuperFrames == 0 {
		t.Errorf("no super-frames crossed: A %+v, B %+v", a.Stats(), b.Stats())
	}
}
