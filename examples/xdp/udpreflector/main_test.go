package main

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/examples/internal/bed"
	"github.com/packetio/packetio/examples/internal/inplace"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// TestReflectsOnOwnPair: a kernel UDP client (net.DialUDP inside the far
// namespace) gets every datagram back byte for byte, from 1 byte to the
// largest that fits a 1500-byte MTU, over IPv4 and IPv6 (so the reflected
// UDP checksum, recomputed, is one the client's kernel accepts); the
// reflector counts each one, and a datagram to another port is left to the
// kernel (it is not reflected, and the kernel refuses it).
func TestReflectsOnOwnPair(t *testing.T) {
	testenv.NeedBPF(t)
	for _, tc := range []struct {
		name   string
		opts   []netns.Option
		tuning inplace.Tuning
		want   string // the first line
	}{
		{"ipv4", []netns.Option{netns.WithAddrs(netip.MustParsePrefix("10.96.0.1/24"), netip.MustParsePrefix("10.96.0.2/24"))},
			inplace.Tuning{Program: "udpreflector", Batch: 64, Feed: "fed by the test"},
			`^udpreflector: afxdp/xdp on \S+, 1 queue, native XDP copy mode, up to \d+ frames a kick, need-wakeup on, busy-poll off, stamps off, batch 64, workers unpinned; fed by the test$`},
		// -busy-poll and -cpu reach the sockets and the workers.
		{"ipv6", []netns.Option{netns.WithIPv6(), netns.WithAddrs(netip.MustParsePrefix("fd00:96::1/64"), netip.MustParsePrefix("fd00:96::2/64"))},
			inplace.Tuning{Program: "udpreflector", Batch: 32, BusyPoll: true, CPUs: []int{0}},
			`^udpreflector: afxdp/xdp on \S+, 1 queue, native XDP copy mode, up to \d+ frames a kick, need-wakeup on, busy-poll 50us budget 64\b.*, stamps off, batch 32, worker CPU 0$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := netns.New(t, tc.opts...)
			const port, n = 9000, 60
			var out bytes.Buffer
			r, err := start(context.Background(), bed.Of(p.A), port, tc.tuning, &out)
			os.Stderr.Write(out.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			if first, _, _ := strings.Cut(out.String(), "\n"); !regexp.MustCompile(tc.want).MatchString(first) {
				t.Errorf("first line %q does not match %q", first, tc.want)
			}
			stopped := false
			defer func() {
				if !stopped {
					r.stop(os.Stderr)
				}
			}()
			if tc.name == "ipv6" {
				waitForAddresses(t, p)
			}
			back, err := client(context.Background(), bed.Of(p.B), netip.AddrPortFrom(p.A.Addr.Addr(), port), n)
			if err != nil {
				t.Fatal(err)
			}
			if back != n {
				t.Fatalf("%d of %d came back", back, n)
			}
			// Another port is not reflected: the kernel answers with
			// ICMP port unreachable, which a connected socket reports.
			if _, err := client(context.Background(), bed.Of(p.B), netip.AddrPortFrom(p.A.Addr.Addr(), port+1), 1); err == nil {
				t.Fatal("a datagram to another port came back")
			}
			stopped = true
			if err := r.stop(os.Stderr); err != nil {
				t.Fatal(err)
			}
			if got := r.st.reflected.Load(); got < n {
				t.Fatalf("reflected %d, want at least %d", got, n)
			}
			if r.st.notReflectable.Load() != 0 || r.st.ringFull.Load() != 0 {
				t.Fatalf("%d not reflectable, %d ring full", r.st.notReflectable.Load(), r.st.ringFull.Load())
			}
		})
	}
}

// waitForAddresses waits until both IPv6 addresses have left duplicate
// address detection, so that the kernel will send from them.
func waitForAddresses(t *testing.T, p *netns.Pair) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, h := range []*netns.Host{p.A, p.B} {
		for {
			tentative := false
			if err := h.Do(func() error {
				lk, err := netlink.LinkByName(h.Link)
				if err != nil {
					return err
				}
				addrs, err := netlink.AddrList(lk, netlink.FAMILY_V6)
				for _, a := range addrs {
					tentative = tentative || a.Flags&unix.IFA_F_TENTATIVE != 0
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if !tentative {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s's address is still tentative", h.Link)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
