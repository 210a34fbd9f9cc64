//go:build linux

package main

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"golang.org/x/sys/unix"
)

// -client-cc names what the clients on B use, refuses a name the kernel
// lacks before anything runs, and reaches every client socket.
func TestClientCC(t *testing.T) {
	testenv.NeedRoot(t)
	pair := netns.New(t, netns.WithAddrs(netip.MustParsePrefix("10.9.0.1/24"), netip.MustParsePrefix("10.9.0.2/24")))
	for _, tc := range []struct{ cc, want, err string }{
		{"", "(B's default)", ""},
		{"cubic", "cubic", ""},
		{"reno", "reno", ""},
		{"no-such-cc", "", "-client-cc no-such-cc: setsockopt TCP_CONGESTION: no such file or directory"},
	} {
		got, err := clientCC(options{clientCC: tc.cc}, pair)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%q: error %v, want %q", tc.cc, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.cc, err)
		case !strings.Contains(got, tc.want):
			t.Errorf("%q: congestion control %q, want %q in it", tc.cc, got, tc.want)
		}
	}

	// A client dialled on B carries it.
	var l net.Listener
	if err := pair.A.Do(func() (err error) { l, err = net.Listen("tcp4", "10.9.0.1:0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var c net.Conn
	if err := pair.B.Do(func() (err error) {
		c, err = clientDialer(options{clientCC: "reno"}, 0).Dial("tcp4", l.Addr().String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got string
	var gerr error
	rc.Control(func(fd uintptr) { got, gerr = unix.GetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION) })
	if gerr != nil || got != "reno" {
		t.Errorf("client socket's congestion control %q (%v), want reno", got, gerr)
	}
}
