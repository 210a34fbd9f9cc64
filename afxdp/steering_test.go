package afxdp_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket/layers"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/filter/pcapfilter"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/testframe"
)

// marker opens the payload of every frame the steering tests send: magic,
// then the frame's number, so either receiver can tell which frame it got.
var magic = []byte("pio-steer")

func marked(n int) []byte {
	b := append([]byte(nil), magic...)
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

// markOf finds the marker in a frame.
func markOf(b []byte) (int, bool) {
	i := bytes.Index(b, magic)
	if i < 0 || i+len(magic)+4 > len(b) {
		return 0, false
	}
	return int(binary.BigEndian.Uint32(b[i+len(magic):])), true
}

// kernelTap is a packet socket on h's interface: it sees what the kernel's
// stack receives, so a frame the XDP program passed shows up here.
type kernelTap struct{ fd int }

func newKernelTap(t *testing.T, h *netns.Host) *kernelTap {
	t.Helper()
	var fd int
	err := h.Do(func() (err error) {
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: h.Index})
	})
	if err != nil {
		t.Fatalf("packet socket: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	tv := unix.Timeval{Usec: 20000}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	return &kernelTap{fd: fd}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// drain reads marked frames until the socket is quiet for a while.
func (k *kernelTap) drain(got map[int]bool) {
	buf := make([]byte, 4096)
	quiet := 0
	for quiet < 10 {
		n, _, err := unix.Recvfrom(k.fd, buf, 0)
		if err != nil {
			quiet++
			continue
		}
		if m, ok := markOf(buf[:n]); ok {
			got[m] = true
		}
	}
}

type steerCase struct {
	name   string
	filter packetio.SteeringFilter
	match  []testframe.Spec
	miss   []testframe.Spec
}

// TestSteeringDeliversWhatItNames: for each kind of match and for
// conjunctions, frames that match arrive on the device and nowhere else,
// and near misses reach the kernel (a packet socket on the same interface)
// and not the device.
func TestSteeringDeliversWhatItNames(t *testing.T) {
	mac := [6]byte{0x02, 0x5e, 0x00, 0x00, 0x00, 0x42}
	udp := func(dport uint16) testframe.Spec { return testframe.Spec{DPort: dport, SPort: 4000} }
	cases := []steerCase{
		{"DstMAC", packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchDstMAC(mac)}},
			[]testframe.Spec{{DstMAC: mac[:]}, {DstMAC: mac[:], V6: true}},
			[]testframe.Spec{{DstMAC: net.HardwareAddr{0x02, 0x5e, 0, 0, 0, 0x43}}, {}}},
		{"VLAN", packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchVLAN(100)}},
			[]testframe.Spec{{VLAN: []uint16{100}}, {VLAN: []uint16{100}, V6: true}, {VLAN: []uint16{100, 7}, QinQ: true}},
			[]testframe.Spec{{VLAN: []uint16{101}}, {}, {VLAN: []uint16{7, 100}}}},
		{"EtherType", packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchEtherType(0x88b6)}},
			[]testframe.Spec{{Ether: 0x88b6}, {Ether: 0x88b6, VLAN: []uint16{5}}},
			[]testframe.Spec{{Ether: 0x88b7}, {}}},
		{"IPProto", packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchIPProto(47)}},
			[]testframe.Spec{{Proto: 47}, {Proto: 47, V6: true}, {Proto: 47, IPOpts: true}},
			[]testframe.Spec{{Proto: 50}, {Proto: 50, V6: true}, udp(47)}},
		{"SrcIPv4", packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchSrcIP(netip.MustParsePrefix("10.1.0.0/16"))}},
			[]testframe.Spec{{Src: "10.1.2.3", Dst: "10.9.9.9"}, {Src: "10.1.255.255", Dst: "10.9.9.9", IPOpts: true}},
			[]testframe.Spec{{Src: "10.2.0.1", Dst: "10.9.9.9"}, {Src: "10.9.9.9", Dst: "10.1.2.3"}}},
		{"DstIPv6", packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchDstIP(netip.MustParsePrefix("2001:db8:77::/48"))}},
			[]testframe.Spec{{V6: true, Src: "2001:db8::1", Dst: "2001:db8:77::5"}},
			[]testframe.Spec{{V6: true, Src: "2001:db8::1", Dst: "2001:db8:78::5"}, {V6: true, Src: "2001:db8:77::5", Dst: "2001:db8::1"}}},
		{"UDPDstPort", packetio.SteeringFilter{Match: packetio.MatchDstPort(packetio.IPProtoUDP, 9000)},
			[]testframe.Spec{udp(9000), {V6: true, DPort: 9000}, {DPort: 9000, IPOpts: true}, {DPort: 9000, VLAN: []uint16{3}}},
			[]testframe.Spec{udp(9001), {Proto: layers.IPProtocolTCP, DPort: 9000}, {SPort: 9000, DPort: 1}, {DPort: 9000, FragOff: 20}}},
		{"TCPSrcPort", packetio.SteeringFilter{Match: packetio.MatchSrcPort(packetio.IPProtoTCP, 443)},
			[]testframe.Spec{{Proto: layers.IPProtocolTCP, SPort: 443, DPort: 5000}, {V6: true, Proto: layers.IPProtocolTCP, SPort: 443, DPort: 5000}},
			[]testframe.Spec{{Proto: layers.IPProtocolTCP, SPort: 5000, DPort: 443}, {SPort: 443, DPort: 5000}}},
		{"TwoPorts", packetio.SteeringFilter{Match: append(packetio.MatchDstPort(packetio.IPProtoUDP, 9000), packetio.MatchDstPort(packetio.IPProtoUDP, 9001)...)},
			[]testframe.Spec{udp(9000), udp(9001)},
			[]testframe.Spec{udp(9002), udp(8999)}},
		{"Conjunction", packetio.SteeringFilter{Match: append([]packetio.Match{
			packetio.MatchVLAN(20), packetio.MatchDstIP(netip.MustParsePrefix("10.9.0.0/16"))},
			packetio.MatchDstPort(packetio.IPProtoUDP, 53)...)},
			[]testframe.Spec{{VLAN: []uint16{20}, Dst: "10.9.1.1", Src: "10.0.0.1", DPort: 53}},
			[]testframe.Spec{{VLAN: []uint16{21}, Dst: "10.9.1.1", Src: "10.0.0.1", DPort: 53},
				{VLAN: []uint16{20}, Dst: "10.8.1.1", Src: "10.0.0.1", DPort: 53},
				{VLAN: []uint16{20}, Dst: "10.9.1.1", Src: "10.0.0.1", DPort: 54},
				{Dst: "10.9.1.1", Src: "10.0.0.1", DPort: 53}}},
		{"Promiscuous", packetio.SteeringFilter{Promiscuous: true},
			[]testframe.Spec{{}, {V6: true}, {Ether: 0x88b7}, {VLAN: []uint16{9}}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runSteerCase(t, c) })
	}
}

// TestSteeringZeroFilter: the zero filter takes what is addressed to the
// interface (its MAC, broadcast) and leaves frames for other hosts alone.
func TestSteeringZeroFilter(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t)
	runSteerCaseOn(t, p, steerCase{filter: packetio.SteeringFilter{},
		match: []testframe.Spec{{DstMAC: p.B.MAC}, {DstMAC: net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}},
		miss:  []testframe.Spec{{DstMAC: net.HardwareAddr{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}}}})
}

func runSteerCase(t *testing.T, c steerCase) {
	testenv.NeedBPF(t)
	runSteerCaseOn(t, netns.New(t), c)
}

func runSteerCaseOn(t *testing.T, p *netns.Pair, c steerCase) {
	var d *afxdp.Device
	if err := p.B.Do(func() (err error) {
		d, err = afxdp.Open(p.B.Link, afxdp.WithSteering(c.filter), afxdp.WithFrames(1024))
		return err
	}); err != nil {
		t.Fatalf("open: %v", err)
	}
	defer d.Close()
	t.Logf("%s", d.Info().Filter)
	tap := newKernelTap(t, p.B)
	fd, err := p.A.PacketSocket()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	sa := &unix.SockaddrLinklayer{Ifindex: p.A.Index, Halen: 6}
	const rounds = 20
	want := map[int]bool{}
	n := 0
	for r := 0; r < rounds; r++ {
		for i, s := range append(append([]testframe.Spec(nil), c.match...), c.miss...) {
			s.Payload = marked(n)
			if i < len(c.match) {
				want[n] = true
			}
			if err := unix.Sendto(fd, s.Build(t), 0, sa); err != nil {
				t.Fatalf("send: %v", err)
			}
			n++
		}
	}
	rx := d.RxQueue(0)
	rx.Fill(rx.NumFreeFillSlots())
	got := map[int]bool{}
	// Generous deadlines, left as soon as everything is in: on a loaded
	// machine the peer's NAPI can run late, and a late frame is not a
	// steering fault.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := rx.Poll(20 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		descs := rx.Receive(256)
		for _, desc := range descs {
			if m, ok := markOf(rx.Region().Frame(desc)); ok {
				got[m] = true
			}
		}
		rx.Recycle(descs)
		rx.Fill(rx.NumFreeFillSlots())
		if len(descs) == 0 && len(got) >= len(want) {
			break
		}
	}
	kernel := map[int]bool{}
	for end := time.Now().Add(5 * time.Second); ; {
		tap.drain(kernel)
		if len(kernel) >= n-len(want) || time.Now().After(end) {
			break
		}
	}
	for m := range n {
		switch {
		case want[m] && !got[m]:
			t.Errorf("frame %d (%d of the case) matches and did not arrive", m, m%(n/rounds))
		case !want[m] && got[m]:
			t.Errorf("frame %d (%d of the case) is a near miss and arrived", m, m%(n/rounds))
		case want[m] && kernel[m]:
			t.Errorf("frame %d matches and still reached the kernel", m)
		case !want[m] && !kernel[m]:
			t.Errorf("frame %d is a near miss and never reached the kernel", m)
		}
	}
}

// TestBareOpenIsRefused: without WithSteering, Open refuses and says how to
// take everything on purpose.
func TestBareOpenIsRefused(t *testing.T) {
	_, err := afxdp.Open("lo")
	if !errors.Is(err, packetio.ErrUnsupported) || !bytes.Contains([]byte(err.Error()), []byte("Promiscuous: true")) {
		t.Fatalf("bare Open: %v", err)
	}
}

// TestSteeringRefusals: what cannot be expressed is refused at Open with
// ErrUnsupported and a reason, before anything is attached.
func TestSteeringRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		f    packetio.SteeringFilter
	}{
		{"port of another protocol", packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchIPProto(132), {Kind: packetio.MatchKindDstPort, IPProto: 132, Port: 9}}}},
		{"families that cannot meet", packetio.SteeringFilter{Match: []packetio.Match{
			packetio.MatchSrcIP(netip.MustParsePrefix("10.0.0.0/8")), packetio.MatchDstIP(netip.MustParsePrefix("2001:db8::/32"))}}},
		{"an IPv6 EtherType with an IPv4 prefix", packetio.SteeringFilter{Match: []packetio.Match{
			packetio.MatchEtherType(0x86dd), packetio.MatchSrcIP(netip.MustParsePrefix("10.0.0.0/8"))}}},
		{"ARP with a port", packetio.SteeringFilter{Match: append([]packetio.Match{packetio.MatchEtherType(0x0806)}, packetio.MatchDstPort(packetio.IPProtoUDP, 53)...)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := afxdp.Open("lo", afxdp.WithSteering(c.f))
			if !errors.Is(err, packetio.ErrUnsupported) {
				t.Fatalf("Open: %v, want ErrUnsupported", err)
			}
			t.Log(err)
		})
	}
}

// TestSteeringMatchesThroughMatchPacket: the compiled steering program,
// run by the kernel on single frames: every kind, with near misses.
func TestSteeringMatchesThroughMatchPacket(t *testing.T) {
	testenv.NeedBPF(t)
	m, err := afxdp.SteeringMatch(packetio.SteeringFilter{Match: append([]packetio.Match{
		packetio.MatchSrcIP(netip.MustParsePrefix("::ffff:10.0.0.0/104"))}, packetio.MatchDstPort(packetio.IPProtoTCP, 22)...)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := filter.NewClassifier(filter.Program{Matches: []filter.Match{m}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, v := range []struct {
		p    testframe.Spec
		want bool
	}{
		{testframe.Spec{Proto: layers.IPProtocolTCP, Src: "10.3.0.1", DPort: 22}, true},
		{testframe.Spec{Proto: layers.IPProtocolTCP, Src: "11.3.0.1", DPort: 22}, false},
		{testframe.Spec{Proto: layers.IPProtocolTCP, Src: "10.3.0.1", DPort: 23}, false},
		{testframe.Spec{Src: "10.3.0.1", DPort: 22}, false},
	} {
		got, err := c.Match(v.p.Build(t))
		if err != nil || got != v.want {
			t.Errorf("%+v: matched %v (%v), want %v", v.p, got, err, v.want)
		}
	}
}

// TestWithMatch: a device steered by a tcpdump expression (WithMatch) takes
// what the expression names.
func TestWithMatch(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t)
	d := openOn(t, p.B, afxdp.WithMatch(pcapfilter.Match("ether proto 0x88b5 and ether[14] < 8")), afxdp.WithFrames(512))
	src := openOn(t, p.A, afxdp.WithTransmitOnly(), afxdp.WithFrames(512))
	rx := d.RxQueue(0)
	rx.Fill(rx.NumFreeFillSlots())
	sent := sendTestFrames(t, src.TxQueue(0), 16) // byte 14 counts 0..15
	got := map[byte]bool{}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && len(got) < 8 {
		if _, err := rx.Poll(10 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		descs := rx.Receive(64)
		for _, desc := range descs {
			got[rx.Region().Frame(desc)[14]] = true
		}
		rx.Recycle(descs)
		rx.Fill(rx.NumFreeFillSlots())
	}
	time.Sleep(50 * time.Millisecond)
	for _, desc := range rx.Receive(64) {
		got[rx.Region().Frame(desc)[14]] = true
	}
	if sent != 16 || len(got) != 8 {
		t.Fatalf("sent %d, received %v: want exactly bytes 0-7", sent, got)
	}
	for b := range got {
		if b >= 8 {
			t.Fatalf("frame %d does not match the expression and arrived", b)
		}
	}
	if !strings.Contains(d.Info().Filter, "ether proto") {
		t.Errorf("Info filter %q", d.Info().Filter)
	}
}
