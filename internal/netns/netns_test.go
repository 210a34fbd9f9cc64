package netns

import (
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/testframe"
)

func TestPairCarriesUDPAndLeavesNothing(t *testing.T) {
	p := New(t, WithAddrs(netip.MustParsePrefix("10.11.0.1/24"), netip.MustParsePrefix("10.11.0.2/24")))

	if _, err := netlink.LinkByName(p.A.Link); err == nil {
		t.Fatalf("%s is visible in the test's own namespace", p.A.Link)
	}
	if p.A.Index == 0 || len(p.B.MAC) != 6 {
		t.Fatalf("host not described: %+v %+v", p.A, p.B)
	}

	conn, err := p.B.ListenUDP(net.IPv4(10, 11, 0, 2), 9000)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := p.A.Do(func() error {
		c, err := net.Dial("udp4", "10.11.0.2:9000")
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("across the pair"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	n, _, err := conn.ReadFromUDP(buf)
	if err != nil || string(buf[:n]) != "across the pair" {
		t.Fatalf("got %q, %v", buf[:n], err)
	}

	// A frame from A's packet socket reaches B's UDP socket.
	fd, err := p.A.PacketSocket()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	frame := testframe.Spec{Src: "10.11.0.1", Dst: "10.11.0.2", SPort: 40000, DPort: 9000, SrcMAC: p.A.MAC, DstMAC: p.B.MAC, Payload: []byte("raw frame")}.Build(t)
	if err := unix.Sendto(fd, frame, 0, &unix.SockaddrLinklayer{Ifindex: p.A.Index, Halen: 6}); err != nil {
		t.Fatal(err)
	}
	if n, _, err = conn.ReadFromUDP(buf); err != nil || string(buf[:n]) != "raw frame" {
		t.Fatalf("raw frame: got %q, %v", buf[:n], err)
	}

	if err := p.A.Do(func() error {
		b, err := os.ReadFile("/proc/sys/net/ipv6/conf/" + p.A.Link + "/disable_ipv6")
		if err == nil && strings.TrimSpace(string(b)) != "1" {
			t.Errorf("IPv6 is on for %s", p.A.Link)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := p.A.Do(func() error { return nil }); err == nil {
		t.Fatal("Do on a closed host succeeded")
	}
}

func TestCreateRefusesOneAddress(t *testing.T) {
	if _, err := Create(WithAddrs(netip.MustParsePrefix("10.0.0.1/24"), netip.Prefix{})); err == nil {
		t.Fatal("one address accepted")
	}
}
