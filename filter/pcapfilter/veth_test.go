package pcapfilter_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/gopacket/layers"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/filter/pcapfilter"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/testframe"
)

// TestExpressionOverVeth: a fleet filtering with a tcpdump expression
// receives exactly the frames the expression names, sent from the other
// namespace, and none of the near misses.
func TestExpressionOverVeth(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t)
	const expr = "udp dst port 9000 and src net 10.1.0.0/16 and not ip[8] < 10"
	var f *xdp.Fleet
	if err := p.B.Do(func() (err error) {
		f, err = xdp.Open(p.B.Link, xdp.WithFilter(pcapfilter.Match(expr)), xdp.WithNumFrames(1024))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, err := p.A.PacketSocket()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	cases := []struct {
		s    testframe.Spec
		want bool
	}{
		{testframe.Spec{Src: "10.1.2.3", Dst: "10.9.9.9", DPort: 9000}, true},
		{testframe.Spec{Src: "10.1.2.3", Dst: "10.9.9.9", DPort: 9000, IPOpts: true}, true},
		{testframe.Spec{Src: "10.1.2.3", Dst: "10.9.9.9", DPort: 9000, VLAN: []uint16{7}}, false}, // tcpdump needs "vlan and" for tagged frames
		{testframe.Spec{Src: "10.2.2.3", Dst: "10.9.9.9", DPort: 9000}, false},
		{testframe.Spec{Src: "10.1.2.3", Dst: "10.9.9.9", DPort: 9001}, false},
		{testframe.Spec{Src: "10.1.2.3", Dst: "10.9.9.9", DPort: 9000, Proto: layers.IPProtocolTCP}, false},
		{testframe.Spec{Src: "10.1.2.3", Dst: "10.9.9.9", SPort: 9000, DPort: 1}, false},
	}
	magic := []byte("pcap-veth")
	for round := range 10 {
		for i, c := range cases {
			c.s.Payload = append(append([]byte(nil), magic...), byte(round), byte(i))
			if err := unix.Sendto(fd, c.s.Build(t), 0, &unix.SockaddrLinklayer{Ifindex: p.A.Index, Halen: 6}); err != nil {
				t.Fatal(err)
			}
		}
	}
	s := f.Socket(0)
	s.Fill(s.NumFreeFillSlots())
	got := map[[2]byte]bool{}
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := s.Poll(20 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		descs := s.Receive(64)
		for _, d := range descs {
			b := s.GetFrame(d)
			if i := bytes.Index(b, magic); i >= 0 && i+len(magic)+2 <= len(b) {
				got[[2]byte{b[i+len(magic)], b[i+len(magic)+1]}] = true
			}
		}
		s.Recycle(descs)
		s.Fill(s.NumFreeFillSlots())
	}
	for round := range 10 {
		for i, c := range cases {
			if arrived := got[[2]byte{byte(round), byte(i)}]; arrived != c.want {
				t.Errorf("round %d frame %d (%+v): arrived %v, want %v", round, i, c.s, arrived, c.want)
			}
		}
	}
}
