package netstack

import (
	"fmt"
	"testing"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/seqnum"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// TestSendDefer plays the peer of a bulk sender by hand over a GSO link
// (third_party/gvisor/patches/0003-*): the stack sends its initial window
// of ten segments, the peer acknowledges one, and the ACK opens the
// congestion window by two segments, well below a third of it. With
// TCPSendDeferOption (netstack's default) the stack holds the new data
// until the rest is acknowledged and then sends it as one larger segment;
// without it (Config.SendEager, upstream gVisor) it sends the two-segment
// sliver at once. Unpatched gVisor has no such option, so the test does
// not build there.
func TestSendDefer(t *testing.T) {
	const mss = 1460
	for _, tc := range []struct {
		name string
		hold bool
	}{{"defer", true}, {"eager", false}} {
		t.Run(tc.name, func(t *testing.T) {
			opt := tcpip.TCPSendDeferOption(tc.hold)
			h := newRcvWndHarness(t, true, &opt)
			defer h.close()
			var got tcpip.TCPSendDeferOption
			if err := h.s.TransportProtocolOption(tcp.ProtocolNumber, &got); err != nil || got != opt {
				t.Fatalf("TCPSendDeferOption reads back %v, %v; want %v", got, err, opt)
			}

			una := h.stackNxt
			if _, err := h.conn.Write(make([]byte, 64<<10)); err != nil {
				t.Fatalf("write: %v", err)
			}
			// The initial congestion window: ten segments, in one or
			// more GSO packets.
			for h.stackNxt.LessThan(una.Add(10 * mss)) {
				h.expectData(t)
			}
			if inflight := una.Size(h.stackNxt); inflight != 10*mss {
				t.Fatalf("%d bytes in flight after the initial window; want %d", inflight, 10*mss)
			}

			// One segment acknowledged: two may go (slow start), a
			// sixth of the eleven-segment window.
			h.sendAck(t, h.peerNxt, una.Add(mss))
			seg := h.readWithin(100 * time.Millisecond)
			for seg != nil && len(seg.Payload()) == 0 {
				seg = h.readWithin(100 * time.Millisecond)
			}
			if !tc.hold {
				if seg == nil || len(seg.Payload()) != 2*mss {
					t.Fatalf("eager: after one segment's ACK got %v; want %d bytes at once", describeSeg(seg), 2*mss)
				}
				return
			}
			if seg != nil {
				t.Fatalf("defer: after one segment's ACK the stack sent %s; want it held for a larger window", describeSeg(seg))
			}

			// Everything acknowledged: the held data leaves at once, as
			// one segment larger than the sliver.
			nxt := h.stackNxt
			h.sendAck(t, h.peerNxt, nxt)
			n := h.expectData(t)
			if n <= 2*mss {
				t.Errorf("defer: after the whole window's ACK the stack sent %d bytes; want more than %d", n, 2*mss)
			}
			if start := h.stackNxt - seqnum.Value(n); start != nxt {
				t.Errorf("defer: the next segment starts at %d; want %d (nothing sent in between)", start, nxt)
			}
		})
	}
}

// describeSeg says what a segment the test read carried.
func describeSeg(seg header.TCP) string {
	if seg == nil {
		return "nothing within 100 ms"
	}
	return fmt.Sprintf("a segment with %d bytes of data", len(seg.Payload()))
}

// TestSendEagerConfig checks that Config.SendEager reaches gVisor: the
// default sets TCPSendDeferOption, SendEager clears it.
func TestSendEagerConfig(t *testing.T) {
	a, b := stackPair(t, Config{}, Config{SendEager: true})
	checkTCPOption(t, "default", a, tcpip.TCPSendDeferOption(true))
	checkTCPOption(t, "SendEager", b, tcpip.TCPSendDeferOption(false))
}
