//go:build linux

package main

import (
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/netns"
)

// -client-cc: the self-test's clients are the kernel's sockets on B, and
// how they back off decides what a lossy receive path costs. Under a
// thousand connections the stack's receive ring drops about a fifth of what
// arrives (Stats.RxDeviceDropped); CUBIC halves its window and carries on,
// while BBR (v1) takes a loss rate that high for a policer and holds each
// flow to the rate it measured in the crowd for 48 round trips, which at a
// few kilobytes a round trip is seconds to minutes (measured: 1,000 1 MiB
// sinks finish in 3.2-3.5 s with CUBIC clients, 3.5-37 s with BBR).

// setCC gives a client socket congestion control name.
func setCC(c syscall.RawConn, name string) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptString(int(fd), unix.IPPROTO_TCP, unix.TCP_CONGESTION, name)
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("-client-cc %s: %w", name, os.NewSyscallError("setsockopt TCP_CONGESTION", serr))
	}
	return nil
}

// clientDialer is how the self-test's clients on B dial: with -client-cc,
// each socket is given it before it connects.
func clientDialer(o options, timeout time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: timeout}
	if name := o.clientCC; name != "" {
		d.Control = func(_, _ string, c syscall.RawConn) error { return setCC(c, name) }
	}
	return d
}

// clientCC is the congestion control the clients on B will use: -client-cc,
// tried on a socket in B first so a name the kernel lacks is refused before
// anything is measured, or B's default.
func clientCC(o options, pair *netns.Pair) (string, error) {
	var cc string
	err := pair.B.Do(func() error {
		if o.clientCC == "" {
			b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_congestion_control")
			cc = strings.TrimSpace(string(b)) + " (B's default)"
			return err
		}
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return os.NewSyscallError("socket", err)
		}
		defer unix.Close(fd)
		if err := unix.SetsockoptString(fd, unix.IPPROTO_TCP, unix.TCP_CONGESTION, o.clientCC); err != nil {
			return fmt.Errorf("-client-cc %s: %w", o.clientCC, os.NewSyscallError("setsockopt TCP_CONGESTION", err))
		}
		cc = o.clientCC
		return nil
	})
	return cc, err
}
