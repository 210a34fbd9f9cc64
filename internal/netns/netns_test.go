package netns

import (
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
)

func TestPairCarriesUDPAndLeavesNothing(t *testing.T) {
	p := New(t, WithAddrs(netip.MustParsePrefix("10.11.0.1/24"), netip.MustParsePrefix("10.11.0.2/24")))

	if _, err := netlink.LinkByName(p.A.Link); err == nil {
		t.Fatalf("%s is visible in the test's own namespace", p.A.Link)
	}
	if p.A.Index == 0 || len(p.B.MAC) != 6 {
		t.Fatalf("host not described: %+v %+v", p.A, p.B)
	}

	var conn *net.UDPConn
	if err := p.B.Do(func() (err error) {
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 11, 0, 2), Port: 9000})
		return err
	}); err != nil {
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
