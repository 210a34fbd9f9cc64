//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"errors"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// Every test in this process shares one EAL, started by the first Open with
// these options; the file prefix is the process id, so parallel test
// binaries never collide.
var ealOpts = []Option{WithNoHuge(), WithMemory(256)}

func openT(t testing.TB, name string, opts ...Option) *Device {
	t.Helper()
	testenv.NeedRoot(t)
	d, err := Open(name, append(append([]Option(nil), ealOpts...), opts...)...)
	if err != nil {
		t.Fatalf("Open(%s): %v", name, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func small() []Option {
	return []Option{WithTxDepth(256), WithRxDepth(256), WithFrames(1024)}
}

func TestNullSendAndReceive(t *testing.T) {
	d := openT(t, "net_null0", small()...)
	tx, rx := d.Tx[0], d.Rx[0]
	sent, err := tx.SendFunc(32, func(i int, frame []byte) int { return copy(frame, make([]byte, 64)) })
	if sent != 32 || err != nil {
		t.Fatalf("SendFunc = %d, %v", sent, err)
	}
	// net_null frees in the burst: everything is back at once.
	if got := tx.Complete(1 << 20); got != 32 {
		t.Fatalf("Complete = %d", got)
	}
	rx.Fill(rx.NumFreeFillSlots())
	n, err := rx.Poll(time.Second)
	if n == 0 || err != nil {
		t.Fatalf("Poll = %d, %v", n, err)
	}
	descs := rx.Receive(64)
	if len(descs) == 0 {
		t.Fatal("nothing received")
	}
	for _, x := range descs {
		if len(rx.Region().Frame(x)) != int(x.Len) || x.Len == 0 {
			t.Fatalf("bad desc %+v", x)
		}
	}
	rx.Recycle(descs)
	if s, _ := rx.Stats(); s.Backend["pool_rejected"] != 0 || s.Backend["foreign"] != 0 {
		t.Fatalf("stats %+v", s)
	}
	if err := tx.Err(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(tx.Err(), packetio.ErrClosed) || !errors.Is(rx.Err(), packetio.ErrClosed) {
		t.Fatal("Err after Close")
	}
	if _, err := os.Stat("/var/run/dpdk/" + prefixOf(d)); err == nil {
		t.Errorf("DPDK left /var/run/dpdk/%s behind", prefixOf(d))
	}
}

func prefixOf(d *Device) string {
	for i, a := range d.info.EALArgs {
		if a == "--file-prefix" && i+1 < len(d.info.EALArgs) {
			return d.info.EALArgs[i+1]
		}
	}
	return ""
}

// TestOneCgoCallPerBurst counts crossings into C through the queue's driver
// interface on a real port: one per Transmit and one per Receive, whatever
// the batch, and none for a Complete that finds frames waiting.
func TestOneCgoCallPerBurst(t *testing.T) {
	d := openT(t, "net_null0", small()...)
	tx, rx := d.Tx[0], d.Rx[0]
	rx.Fill(rx.NumFreeFillSlots())
	for _, n := range []int{1, 32, 64, 200} {
		c := tx.pmd.Calls
		descs := tx.Alloc(n)
		for i := range descs {
			descs[i].Len = 64
		}
		if sent := tx.Transmit(descs); sent != n {
			t.Fatalf("Transmit(%d) = %d", n, sent)
		}
		if got := tx.pmd.Calls - c; got != 1 {
			t.Fatalf("Transmit of %d: %d calls into C", n, got)
		}
		c = tx.pmd.Calls
		if got := tx.Complete(1 << 20); got != n { // net_null freed them in the burst
			t.Fatalf("Complete = %d", got)
		}
		if tx.pmd.Calls != c {
			t.Fatal("Complete crossed into C with frames waiting")
		}
		c = rx.pmd.Calls
		got := rx.Receive(n)
		if len(got) != n || rx.pmd.Calls-c != 1 {
			t.Fatalf("Receive(%d) = %d packets in %d calls", n, len(got), rx.pmd.Calls-c)
		}
		rx.Recycle(got)
		rx.Fill(rx.NumFreeFillSlots())
	}
}

// TestFastPathAllocatesNothing: a forwarding round on a real port.
func TestFastPathAllocatesNothing(t *testing.T) {
	d := openT(t, "net_null0", small()...)
	tx, rx := d.Tx[0], d.Rx[0]
	rx.Fill(rx.NumFreeFillSlots())
	back := make([]packetio.Desc, 0, 512)
	allocs := testing.AllocsPerRun(1000, func() {
		descs := rx.Receive(64)
		n := tx.Transmit(descs)
		rx.Recycle(descs[n:])
		back = tx.Reclaim(1<<20, back[:0])
		rx.Recycle(back)
		rx.Fill(rx.NumFreeFillSlots())
		tx.SendFunc(32, func(i int, frame []byte) int { return 64 })
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per round", allocs)
	}
}

// TestSteeringIsRefusedForReal: the software drivers have no rte_flow
// engine, so a real filter fails Open with ErrUnsupported, carrying the
// driver's reason, and leaves nothing behind: the device opens again.
func TestSteeringIsRefusedForReal(t *testing.T) {
	testenv.NeedRoot(t)
	filters := map[string]packetio.SteeringFilter{
		"ethertype": {Match: []packetio.Match{packetio.MatchEtherType(0x88b5)}},
		"udp port":  {Match: packetio.MatchDstPort(packetio.IPProtoUDP, 9000)},
		"vlan":      {Match: []packetio.Match{packetio.MatchVLAN(7)}},
	}
	for name, f := range filters {
		d, err := Open("net_null0", append(append([]Option(nil), ealOpts...), append(small(), WithSteering(f))...)...)
		if d != nil {
			d.Close()
			t.Fatalf("%s: net_null installed a filter", name)
		}
		if !errors.Is(err, packetio.ErrUnsupported) || !strings.Contains(err.Error(), "not implemented") {
			t.Fatalf("%s: %v, want ErrUnsupported with the driver's reason", name, err)
		}
	}
	// Several receive queues make the action RSS; TCP and IPv6 items go
	// through the shim too.
	rss := packetio.SteeringFilter{Match: append(packetio.MatchDstPort(packetio.IPProtoTCP, 80), packetio.MatchSrcIP(netip.MustParsePrefix("2001:db8::/32")))}
	if _, err := Open("net_null0", append(append([]Option(nil), ealOpts...), append(small(), WithRxQueues(2), WithSteering(rss))...)...); !errors.Is(err, packetio.ErrUnsupported) {
		t.Fatalf("tcp/ipv6 with RSS: %v, want ErrUnsupported", err)
	}
	p := netns.New(t)
	for name, f := range filters {
		d, err := openIn(t, p.A, "net_af_packet0,iface="+p.A.Link, append(small(), WithSteering(f))...)
		if d != nil {
			d.Close()
			t.Fatalf("%s: net_af_packet installed a filter", name)
		}
		if !errors.Is(err, packetio.ErrUnsupported) {
			t.Fatalf("%s on af_packet: %v, want ErrUnsupported", name, err)
		}
	}
	openT(t, "net_null0", small()...).Close()
	d, err := openIn(t, p.A, "net_af_packet0,iface="+p.A.Link, small()...)
	if err != nil {
		t.Fatalf("after refusals: %v", err)
	}
	d.Close()
}

func TestLifecycle(t *testing.T) {
	for i := 0; i < 20; i++ {
		d := openT(t, "net_null0", small()...)
		if err := d.Close(); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	d := openT(t, "net_null0", small()...)
	if _, err := Open("net_null0", small()...); !errors.Is(err, packetio.ErrBusy) || !strings.Contains(err.Error(), "already open") {
		t.Fatalf("second Open of one device: %v, want ErrBusy", err)
	}
	if _, err := Open("net_nosuchdriver0", small()...); err == nil || !strings.Contains(err.Error(), "opening") {
		t.Fatalf("unknown driver: %v", err)
	}
	if _, err := Open("eth0"); err == nil {
		t.Fatal("a kernel interface name was accepted")
	}
	if _, err := Open("net_null1", WithTxQueues(0)); err == nil {
		t.Fatal("no transmit queue accepted")
	}
	// A half-open device (more queues than net_af_packet has) leaves
	// nothing behind.
	p := netns.New(t)
	if _, err := openIn(t, p.A, "net_af_packet0,iface="+p.A.Link, WithTxQueues(4)); !errors.Is(err, packetio.ErrUnsupported) {
		t.Fatalf("4 queues on a 1-queue port: %v", err)
	}
	x, err := openIn(t, p.A, "net_af_packet0,iface="+p.A.Link, small()...)
	if err != nil {
		t.Fatalf("after a refused open: %v", err)
	}
	x.Close()
	in := d.Info()
	c := d.Capabilities()
	if in.Driver != "net_null" || in.MaxPacket != in.FrameSize-320 || c.Backend != "dpdk" || c.KernelCoexistence || c.ZeroCopy || !c.HandsBackFrames || c.MaxFrameSize != in.MaxPacket {
		t.Fatalf("info %+v caps %+v", in, c)
	}
}

// TestXStatsOverVeth sends frames on net_af_packet and reads them back in
// the port's counters and extended counters.
func TestXStatsOverVeth(t *testing.T) {
	testenv.NeedRoot(t)
	p := netns.New(t)
	d, err := openIn(t, p.A, "net_af_packet0,iface="+p.A.Link, small()...)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tx := d.TxQueue(0)
	sent, err := tx.SendFunc(8, func(i int, frame []byte) int {
		copy(frame, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x88, 0xb5})
		return 64
	})
	if sent != 8 || err != nil {
		t.Fatalf("SendFunc = %d, %v", sent, err)
	}
	ps, err := d.PortStats()
	if err != nil {
		t.Fatal(err)
	}
	x, err := d.XStats()
	if err != nil {
		t.Fatal(err)
	}
	if ps.OutPackets != 8 || x["tx_good_packets"] != ps.OutPackets || x["tx_q0_packets"] != 8 {
		t.Fatalf("port stats %+v, xstats %v", ps, x)
	}
	s, _ := tx.Stats()
	if s.Backend["xstat_tx_good_packets"] != 8 || s.Packets != 8 {
		t.Fatalf("queue stats %+v", s)
	}
}
