package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/examples/internal/forward"
	"github.com/packetio/packetio/examples/internal/frame"
	"github.com/packetio/packetio/examples/internal/testbed"
	"github.com/packetio/packetio/internal/csum"
	"github.com/packetio/packetio/internal/testenv"
)

func TestValidSize(t *testing.T) {
	for _, tc := range []struct {
		n  int
		ok bool
	}{{63, false}, {64, true}, {1518, true}, {1519, false}, {8999, false}, {9000, true}, {9001, false}, {9018, false}} {
		if got := validSize(tc.n); got != tc.ok {
			t.Errorf("validSize(%d) = %v", tc.n, got)
		}
	}
	if !isJumbo(9000) || isJumbo(1518) {
		t.Error("isJumbo")
	}
}

// TestJumboNA: every column either runs at 9000 bytes or says why not.
func TestJumboNA(t *testing.T) {
	for _, c := range allColumns() {
		why := jumboNA(c)
		runs := c == colKernel || c == colAfpacket || c == colAfxdp || c == colAfxdpBusy || c == colCxsk || c == colCxskBusy || c == colTrafgen || c == colTcpdump || c == colNetsniff
		switch {
		case runs && why != "":
			t.Errorf("%s: %q, want it measured", c, why)
		case !runs && !strings.HasPrefix(why, "n/a: "):
			t.Errorf("%s: %q, want n/a with a reason", c, why)
		}
	}
}

// fakeRegion is a Region of n frames of size bytes over plain memory.
type fakeRegion struct {
	mem  []byte
	size int
}

func (r *fakeRegion) Bytes() []byte  { return r.mem }
func (r *fakeRegion) FrameSize() int { return r.size }
func (r *fakeRegion) NumFrames() int { return len(r.mem) / r.size }
func (r *fakeRegion) Frame(d packetio.Desc) []byte {
	if d.Addr+uint64(d.Len) > uint64(len(r.mem)) {
		return nil
	}
	return r.mem[d.Addr : d.Addr+uint64(d.Len) : d.Addr+uint64(d.Len)]
}
func (r *fakeRegion) Writable(d packetio.Desc) []byte {
	if d.Addr >= uint64(len(r.mem)) {
		return nil
	}
	end := (d.Addr/uint64(r.size) + 1) * uint64(r.size)
	return r.mem[d.Addr:end:end]
}

// jumboFrame is a 9000-byte-on-the-wire frame as the sweep sends it.
func jumboFrame(t *testing.T) []byte {
	t.Helper()
	spec := frame.Spec{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, SrcIP: netip.MustParseAddr("10.99.0.2"), DstIP: routedFirst,
		SrcPort: 1024, DstPort: discardPort, Size: jumboSize - 4}
	b := make([]byte, spec.Len())
	if frame.Build(b, spec) != jumboSize-4 {
		t.Fatalf("frame of %d bytes", len(b))
	}
	return b
}

// TestChainBuild: a jumbo frame across 4 KiB frames is a chain of 3, every
// one but the last marked OptContinued, whose bytes are the frame's (the
// flow's port set); too few frames build nothing.
func TestChainBuild(t *testing.T) {
	tmpl := jumboFrame(t)
	reg := &fakeRegion{mem: make([]byte, 8*4096), size: 4096}
	c := &chainSender{reg: reg, tmpl: tmpl, l4: 34, flows: 8}
	if c.per() != 3 {
		t.Fatalf("per() = %d, want 3", c.per())
	}
	descs := make([]packetio.Desc, 4)
	for i := range descs {
		descs[i] = packetio.Desc{Addr: uint64(i*4096 + 256)}
	}
	if n := c.build(descs, 3); n != 3 {
		t.Fatalf("build took %d descs, want 3", n)
	}
	var got []byte
	for i, d := range descs[:3] {
		if cont := d.Options&packetio.OptContinued != 0; cont != (i < 2) {
			t.Errorf("desc %d: OptContinued %v", i, cont)
		}
		got = append(got, reg.Frame(d)...)
	}
	if l, k := packetLen(descs); l != len(tmpl) || k != 3 || whole(descs[:3]) != 1 {
		t.Errorf("packetLen %d over %d descs, whole %d", l, k, whole(descs[:3]))
	}
	want := bytes.Clone(tmpl)
	setFlow(want, 34, 3, false)
	if !bytes.Equal(got, want) {
		t.Error("the chain's bytes are not the frame's")
	}
	if n := c.build(descs[:2], 0); n != 0 {
		t.Errorf("build on 2 descs took %d", n)
	}
}

// TestLengthsChains: a chain is one packet of its summed length.
func TestLengthsChains(t *testing.T) {
	l := &lengths{want: 8996}
	c := packetio.OptContinued
	descs := []packetio.Desc{{Len: 3824, Options: c}, {Len: 3824, Options: c}, {Len: 1348}, {Len: 3824, Options: c}, {Len: 100}, {Len: 8996}}
	if got := l.check(descs); got != 2 || l.wrong.Load() != 1 {
		t.Fatalf("check: %d right, %d wrong; want 2 and 1", got, l.wrong.Load())
	}
}

// TestForwardChain: forward.FIB.ForwardHead on a jumbo chain's first frame
// does what Forward does on the whole frame, and refuses what it refuses.
func TestForwardChain(t *testing.T) {
	var fib forward.FIB
	p, h, err := forward.ParseRoute(routedNet.String()+","+sinkMAC.String(), net.HardwareAddr{2, 0, 0, 0, 0, 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := fib.Add(p, h); err != nil {
		t.Fatal(err)
	}
	whole, chain := jumboFrame(t), jumboFrame(t)
	if v := fib.Forward(whole, false); v != forward.Forwarded {
		t.Fatalf("Forward: %v", v)
	}
	head := chain[:3824]
	if v := fib.Forward(head, false); v != forward.BadHeader {
		t.Fatalf("Forward on a chain's first frame: %v, want it refused (the IP length is beyond it)", v)
	}
	if v := fib.ForwardHead(head, len(chain), false); v != forward.Forwarded {
		t.Fatalf("ForwardHead: %v", v)
	}
	if !bytes.Equal(whole, chain) {
		t.Error("ForwardHead rewrote the frame otherwise than Forward")
	}
	for _, tc := range []struct {
		name   string
		length int
		mod    func(b []byte)
		l3OK   bool // the checksum was checked already (OptL3ChecksumOK)
		want   forward.Verdict
	}{
		{"short chain", 3824, nil, false, forward.BadHeader},
		{"bad checksum", len(chain), func(b []byte) { b[24] ^= 1 }, false, forward.BadHeader},
		{"not IPv4", len(chain), func(b []byte) { b[12] = 0x86 }, false, forward.NotIPv4},
		{"TTL 1", len(chain), func(b []byte) { b[22] = 1 }, true, forward.TTLExpired},
		{"no route", len(chain), func(b []byte) { b[30] = 11 }, true, forward.NoRoute},
	} {
		b := jumboFrame(t)
		if tc.mod != nil {
			tc.mod(b)
		}
		if v := fib.ForwardHead(b[:3824], tc.length, tc.l3OK); v != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, v, tc.want)
		}
	}
}

// counters are an interface's packet and byte counters.
type counters struct{ rxp, rxb, txp, txb uint64 }

func countersOf(t *testing.T, in func(func() error) error, name string) counters {
	t.Helper()
	var c counters
	if err := in(func() error {
		l, err := netlink.LinkByName(name)
		if err != nil {
			return err
		}
		s := l.Attrs().Statistics
		c = counters{s.RxPackets, s.RxBytes, s.TxPackets, s.TxBytes}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestJumboCells runs a 9000-byte cell of each loop on the jumbo pair,
// multi-buffer both ways (afxdp transmit and forward chain 4 KiB frames,
// afpacket receives chains of 2 KiB ones, the C reference transmits and
// forwards chains with -m), and checks that frames moved and every one was
// 8996 bytes: on the wire, by the interfaces' byte and packet counters,
// and as the packetio loops took them (a cell fails when more than 1 % of
// its packets are of another length).
func TestJumboCells(t *testing.T) {
	testenv.NeedBPF(t)
	before := hostNow(t)
	xsk := buildXskref(func(string) {})
	defer xsk.close()
	if xsk.skip != "" {
		testenv.CannotRun(t, "the C reference: %s", xsk.skip)
		return
	}
	e := &env{feeder: feederLive, flows: 8, batch: 64, warmup: 100 * time.Millisecond, window: 300 * time.Millisecond, cpus: allowedCPUs(), log: io.Discard}
	defer func() {
		if err := e.close(); err != nil {
			t.Error(err)
		}
		checkClean(t, before)
	}()
	for _, c := range []*cell{
		{loop: loopTx, size: jumboSize, column: colAfxdp, queues: 1},
		{loop: loopRx, size: jumboSize, column: colAfpacket, queues: 1},
		{loop: loopFwd, size: jumboSize, column: colAfxdp, queues: 1},
		{loop: loopTx, size: jumboSize, column: colCxsk, queues: 1},
		{loop: loopFwd, size: jumboSize, column: colCxsk, queues: 1},
	} {
		r, err := e.rig(1, true)
		if err != nil {
			t.Fatal(err)
		}
		a0, b0 := countersOf(t, r.bed.In, r.bed.Name), countersOf(t, r.bed.InPeer, r.bed.Peer)
		s, err := e.runCell(context.Background(), c, testpmdTools{}, xsk)
		if err != nil {
			t.Errorf("%s %s: %v", c.loop, c.column, err)
			continue
		}
		a1, b1 := countersOf(t, r.bed.In, r.bed.Name), countersOf(t, r.bed.InPeer, r.bed.Peer)
		// What crossed the wire each way that the cell is about: the
		// measured side's sends arrive at the peer, the feeder's at it.
		check := func(what string, packets, bytes uint64, each uint64) {
			t.Helper()
			if packets == 0 || bytes != packets*each {
				t.Errorf("%s %s: %s %d packets of %d bytes, want some of %d each", c.loop, c.column, what, packets, bytes, each)
			}
		}
		if c.loop != loopRx {
			check("peer received", b1.rxp-b0.rxp, b1.rxb-b0.rxb, jumboSize-4)
		}
		if c.loop != loopTx {
			// The peer's transmit counter. A veth whose NAPI takes
			// the frames (afxdp's native XDP program) counts them on
			// its receive side, after the Ethernet header is pulled:
			// 14 bytes less each.
			each := uint64(jumboSize - 4)
			if backendOf(c.column) == "afxdp" || isXsk(c.column) {
				each -= 14
			}
			check("feeder sent", b1.txp-b0.txp, b1.txb-b0.txb, each)
			if a1.rxp == a0.rxp {
				t.Errorf("%s %s: the measured side received nothing", c.loop, c.column)
			}
		}
		if s.mpps <= 0 {
			t.Errorf("%s %s: no packets counted", c.loop, c.column)
		}
	}
}

// TestRewriters: -forward route routes (forward.FIB.ForwardHead, a whole
// frame or a chain's first frame) and -forward mac writes the two MACs and
// nothing else, as testpmd's mac forwarding does.
func TestRewriters(t *testing.T) {
	macA := net.HardwareAddr{2, 0, 0, 0, 0, 2}
	r := &rig{macA: macA}
	var want forward.Hop
	copy(want.Dst[:], sinkMAC)
	copy(want.Src[:], macA)
	for _, tc := range []struct {
		rewrite string
		head    int // the bytes of the first frame: all, or a chain's first 4 KiB frame
		ttlLess byte
	}{
		{rewriteRoute, jumboSize - 4, 1},
		{rewriteRoute, 3824, 1},
		{rewriteMAC, jumboSize - 4, 0},
		{rewriteMAC, 3824, 0},
	} {
		e := &env{rewrite: tc.rewrite}
		rw, err := e.rewriter(r)
		if err != nil {
			t.Fatal(err)
		}
		orig, b := jumboFrame(t), jumboFrame(t)
		head := b[:tc.head]
		if v := rw(head, len(b), false); v != forward.Forwarded {
			t.Fatalf("%s, first frame of %d bytes: %v, want forwarded", tc.rewrite, len(head), v)
		}
		if !bytes.Equal(b[0:6], want.Dst[:]) || !bytes.Equal(b[6:12], want.Src[:]) {
			t.Errorf("%s: MACs %x %x, want %x %x", tc.rewrite, b[0:6], b[6:12], want.Dst, want.Src)
		}
		if got := orig[14+8] - b[14+8]; got != tc.ttlLess {
			t.Errorf("%s: TTL fell by %d, want %d", tc.rewrite, got, tc.ttlLess)
		}
		if csum.Checksum(b[14:34], 0) != 0 {
			t.Errorf("%s: the IP header checksum no longer holds", tc.rewrite)
		}
		if tc.rewrite == rewriteMAC && !bytes.Equal(b[12:], orig[12:]) {
			t.Errorf("mac: bytes after the MACs changed")
		}
		if v := rw(make([]byte, 13), 13, false); v == forward.Forwarded {
			t.Errorf("%s: a 13-byte frame was forwarded", tc.rewrite)
		}
	}
}

// TestTxFrame: -write frame writes the whole template into each frame,
// -write headers its 42 bytes of headers and leaves the payload as the
// buffer held it; both set the flow's source port; a buffer too short for
// the frame builds nothing.
func TestTxFrame(t *testing.T) {
	spec := frame.Spec{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: sinkMAC, SrcIP: testbed.AddrA.Addr(), DstIP: sinkIP, SrcPort: 1024, DstPort: discardPort, Size: 1510}
	tmpl := make([]byte, spec.Len())
	frame.Build(tmpl, spec)
	hl, l4 := spec.HeaderLen(), spec.HeaderLen()-8
	for _, write := range writes {
		e := &env{write: write}
		written := e.txWritten(tmpl, hl)
		b := bytes.Repeat([]byte{0xaa}, len(tmpl)+64)
		if n := txFrame(b, tmpl, written, l4, 5); n != len(tmpl) {
			t.Fatalf("%s: built %d bytes, want %d", write, n, len(tmpl))
		}
		if port := int(b[l4])<<8 | int(b[l4+1]); port != 1024+5 {
			t.Errorf("%s: source port %d, want %d", write, port, 1024+5)
		}
		want := slices.Clone(tmpl)
		want[l4], want[l4+1] = b[l4], b[l4+1]
		if write == writeHeaders {
			copy(want[hl:], bytes.Repeat([]byte{0xaa}, len(tmpl)-hl))
		}
		if !bytes.Equal(b[:len(tmpl)], want) || hl != 42 {
			t.Errorf("%s: frame differs from the template's %d bytes written over the buffer (headers %d bytes)", write, len(written), hl)
		}
		if n := txFrame(b[:len(tmpl)-1], tmpl, written, l4, 5); n != 0 {
			t.Errorf("%s: built %d bytes in a buffer one byte short", write, n)
		}
	}
}

// TestConfigSteer: afxdp's receive and forward cells steer with the
// feeder's filter under -steer filter and take every frame under -steer
// all (Promiscuous: the zero filter would take only what is addressed to
// the interface); a transmit-only open has no filter either way, and dpdk,
// which does not steer, gets the zero filter.
func TestConfigSteer(t *testing.T) {
	for _, tc := range []struct {
		steer       string
		column      string
		rxq         int
		match, prom bool // a steering filter; Promiscuous
	}{
		{steerFilter, colAfxdp, 1, true, false},
		{steerAll, colAfxdp, 1, false, true},
		{steerFilter, colAfxdp, 0, false, false},
		{steerAll, colAfxdp, 0, false, false},
		{steerAll, colDpdkXDP, 1, false, false},
		{steerFilter, colDpdkXDP, 1, false, false},
	} {
		e := &env{steer: tc.steer}
		c := e.config(false, tc.column, 1, tc.rxq)
		if got := len(c.Steering.Match) > 0; got != tc.match || c.Steering.Promiscuous != tc.prom {
			t.Errorf("-steer %s, %s, %d receive queues: steering %v (promiscuous %v), want a filter %v, promiscuous %v",
				tc.steer, tc.column, tc.rxq, c.Steering, c.Steering.Promiscuous, tc.match, tc.prom)
		}
	}
}
