//go:build linux

package afpacket

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
)

// A tagged frame crosses the veth; the receiving kernel strips the tag into
// skb metadata and Receive must put it back: the frame arrives as sent.
func TestIntegrationVLANTagIsPutBack(t *testing.T) { testVLANTagIsPutBack(t) }

// The same on a TPACKET_V2 ring.
func TestIntegrationLowLatencyVLANTagIsPutBack(t *testing.T) {
	testVLANTagIsPutBack(t, WithLowLatency())
}

func testVLANTagIsPutBack(t *testing.T, rxOpts ...Option) {
	pair := netns.New(t)
	a := openIn(t, pair.A, WithRxQueues(0))
	b := openIn(t, pair.B, append(rxOpts, WithTxQueues(0))...)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{},
		&layers.Ethernet{SrcMAC: testSrcMAC, DstMAC: pair.B.MAC, EthernetType: layers.EthernetTypeDot1Q},
		&layers.Dot1Q{Priority: 5, VLANIdentifier: 42, Type: testEtherType},
		gopacket.Payload(bytes.Repeat([]byte{0xab}, 100))); err != nil {
		t.Fatal(err)
	}
	frame := buf.Bytes()
	sendFrames(t, a.TxQueue(0), [][]byte{frame})
	got := receiveTagged(t, b.RxQueue(0), 1)
	if len(got) != 1 || !bytes.Equal(got[0], frame) {
		t.Fatalf("tagged frame arrived as %x\nwant %x", got, frame)
	}
	p := gopacket.NewPacket(got[0], layers.LayerTypeEthernet, gopacket.Default)
	if q, ok := p.Layer(layers.LayerTypeDot1Q).(*layers.Dot1Q); !ok || q.VLANIdentifier != 42 || q.Priority != 5 {
		t.Fatalf("gopacket does not see VLAN 42 prio 5: %v", p)
	}
}

func receiveTagged(t *testing.T, rx packetio.RxQueue, want int) [][]byte {
	var got [][]byte
	deadline := time.Now().Add(3 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		rx.Poll(50 * time.Millisecond)
		descs := rx.Receive(64)
		for _, d := range descs {
			f := rx.Region().Frame(d)
			if len(f) > 18 && bytes.Equal(f[6:12], testSrcMAC) {
				got = append(got, append([]byte(nil), f...))
			}
		}
		rx.Recycle(descs)
	}
	return got
}

func TestIntegrationTimestamps(t *testing.T) { testTimestamps(t) }

// The same on a TPACKET_V2 ring.
func TestIntegrationLowLatencyTimestamps(t *testing.T) { testTimestamps(t, WithLowLatency()) }

func testTimestamps(t *testing.T, rxOpts ...Option) {
	pair := netns.New(t)
	a := openIn(t, pair.A, WithRxQueues(0))
	b := openIn(t, pair.B, append(rxOpts, WithTxQueues(0))...)
	rx := b.RxQueue(0).(*RxQueue)
	start := uint64(time.Now().UnixNano())
	var frames [][]byte
	for i := range 16 {
		frames = append(frames, testFrame(t, pair.B.MAC, uint32(i), 64))
	}
	sendFrames(t, a.TxQueue(0), frames)
	n := 0
	deadline := time.Now().Add(3 * time.Second)
	for n < len(frames) && time.Now().Before(deadline) {
		rx.Poll(50 * time.Millisecond)
		descs, ts := rx.ReceiveTimestamps(64)
		if len(ts) != len(descs) {
			t.Fatalf("%d descs, %d stamps", len(descs), len(ts))
		}
		for i, d := range descs {
			if !ours(rx.Region().Frame(d)) {
				continue
			}
			n++
			if ts[i] < start-uint64(time.Second) || ts[i] > uint64(time.Now().UnixNano())+uint64(time.Second) {
				t.Errorf("stamp %d is not near now (%d)", ts[i], start)
			}
		}
		rx.Recycle(descs)
	}
	if n != len(frames) {
		t.Fatalf("%d of %d frames", n, len(frames))
	}
}

// Four receive queues in one fanout group: many flows spread over several
// queues and every frame arrives exactly once.
func TestIntegrationFanoutSpreadsFlows(t *testing.T) {
	pair := netns.New(t)
	a := openIn(t, pair.A, WithRxQueues(0))
	b := openIn(t, pair.B, WithTxQueues(0), WithRxQueues(4))
	if !b.Capabilities().RSS {
		t.Fatal("4 rx queues and RSS false")
	}
	if c := openIn(t, pair.B, WithTxQueues(0)).Capabilities(); c.RSS {
		t.Fatal("1 rx queue and RSS true")
	}
	var frames [][]byte
	for i := range 256 {
		frames = append(frames, udpFrame(t, pair.B.MAC, uint16(1000+i), 64))
	}
	sendFrames(t, a.TxQueue(0), frames)
	perQueue := make([]int, 4)
	total := 0
	deadline := time.Now().Add(3 * time.Second)
	for total < len(frames) && time.Now().Before(deadline) {
		for i := range 4 {
			rx := b.RxQueue(i)
			rx.Poll(5 * time.Millisecond)
			descs := rx.Receive(256)
			for _, d := range descs {
				if f := rx.Region().Frame(d); len(f) > 12 && bytes.Equal(f[6:12], testSrcMAC) {
					perQueue[i]++
					total++
				}
			}
			rx.Recycle(descs)
		}
	}
	if total != len(frames) {
		t.Fatalf("%d of %d frames arrived (per queue %v)", total, len(frames), perQueue)
	}
	busy := 0
	for _, n := range perQueue {
		if n > 0 {
			busy++
		}
	}
	if busy < 2 {
		t.Fatalf("256 flows landed on %d queue(s): %v", busy, perQueue)
	}
	t.Logf("per queue: %v", perQueue)
}

// udpFrame is an IPv4/UDP frame of size bytes from source port sport, with
// correct checksums.
func udpFrame(t testing.TB, dst net.HardwareAddr, sport uint16, size int) []byte {
	t.Helper()
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolUDP,
		SrcIP: net.IPv4(10, 0, 0, 1), DstIP: net.IPv4(10, 0, 0, 2)}
	udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: 9}
	_ = udp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		&layers.Ethernet{SrcMAC: testSrcMAC, DstMAC: dst, EthernetType: layers.EthernetTypeIPv4},
		ip, udp, gopacket.Payload(make([]byte, size-42))); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// WithGSO both ways: a 64 KiB-class TCP super-frame crosses as one packet
// with its metadata, and a partial UDP checksum is finished on receive.
func TestIntegrationGSO(t *testing.T) { testGSO(t) }

// The same with a TPACKET_V2 ring receiving: the virtio header sits in front
// of the packet in its slot as it does in a V3 block.
func TestIntegrationLowLatencyGSO(t *testing.T) { testGSO(t, WithLowLatency()) }

func testGSO(t *testing.T, rxOpts ...Option) {
	pair := netns.New(t)
	a := openIn(t, pair.A, WithGSO(), WithRxQueues(0))
	b := openIn(t, pair.B, append(rxOpts, WithGSO(), WithTxQueues(0))...)
	if !a.Capabilities().Offload || !b.Capabilities().Offload {
		t.Fatal("WithGSO and Offload false")
	}
	tx := a.TxQueue(0).(*TxQueue)
	rx := b.RxQueue(0).(*RxQueue)

	// A TCP super-frame: 4000 bytes of payload, MSS 1400.
	super, cs, co := l4Frame(t, false, true, false, 4000)
	copy(super[6:12], testSrcMAC)
	binary.BigEndian.PutUint16(super[cs+co:], pseudoPartial(super, 14, cs, false, 6))
	superOff := packetio.Offload{Flags: packetio.OffloadNeedsCsum, GSOType: packetio.OffloadGSOTCPv4,
		HdrLen: uint16(cs + 20), GSOSize: 1400, CsumStart: uint16(cs), CsumOff: uint16(co)}
	// A UDP frame whose checksum the receiver must finish.
	udp, ucs, uco := l4Frame(t, false, false, false, 300)
	copy(udp[6:12], testSrcMAC)
	wantUDP := append([]byte(nil), udp...)
	binary.BigEndian.PutUint16(udp[ucs+uco:], pseudoPartial(udp, 14, ucs, false, 17))
	udpOff := packetio.Offload{Flags: packetio.OffloadNeedsCsum, CsumStart: uint16(ucs), CsumOff: uint16(uco)}

	descs := tx.Alloc(2)
	if len(descs) != 2 {
		t.Fatal("Alloc(2) short")
	}
	for i, f := range [][]byte{super, udp} {
		descs[i].Len = uint32(copy(tx.Region().Writable(descs[i]), f))
	}
	n, err := tx.TransmitOffload(descs, []packetio.Offload{superOff, udpOff})
	if n != 2 || err != nil {
		t.Fatalf("TransmitOffload: %d, %v", n, err)
	}
	tx.Complete(1 << 20)

	var gotSuper, gotUDP bool
	deadline := time.Now().Add(3 * time.Second)
	for !(gotSuper && gotUDP) && time.Now().Before(deadline) {
		rx.Poll(50 * time.Millisecond)
		ds, offs := rx.ReceiveOffload(64)
		if len(ds) != len(offs) {
			t.Fatalf("%d descs, %d offloads", len(ds), len(offs))
		}
		for i, d := range ds {
			f := rx.Region().Frame(d)
			if len(f) < 14 || !bytes.Equal(f[6:12], testSrcMAC) {
				continue
			}
			switch {
			case len(f) == len(super):
				gotSuper = true
				if !offs[i].Segmented() || offs[i].GSOSize != 1400 {
					t.Errorf("super-frame arrived with %+v", offs[i])
				}
				if !bytes.Equal(f[cs+co+2:], super[cs+co+2:]) {
					t.Error("super-frame payload differs")
				}
			case len(f) == len(udp):
				gotUDP = true
				if offs[i].Flags&packetio.OffloadNeedsCsum != 0 {
					t.Errorf("NEEDS_CSUM still set after completion: %+v", offs[i])
				}
				if !bytes.Equal(f, wantUDP) {
					t.Errorf("UDP checksum not finished:\n got %x\nwant %x", f, wantUDP)
				}
			default:
				t.Errorf("unexpected %d-byte frame (%+v)", len(f), offs[i])
			}
		}
		rx.Recycle(ds)
	}
	if !gotSuper || !gotUDP {
		t.Fatalf("super-frame arrived %v, UDP frame arrived %v", gotSuper, gotUDP)
	}

	// Refusals.
	descs = tx.Alloc(1)
	descs[0].Len = 300
	if n, err := tx.TransmitOffload(descs, nil); n != 0 || !errors.Is(err, packetio.ErrBadLength) {
		t.Errorf("mismatched offs: %d, %v", n, err)
	}
	if n, err := tx.TransmitOffload(descs, []packetio.Offload{{Flags: 1, CsumStart: 60000}}); n != 0 || !errors.Is(err, packetio.ErrBadLength) {
		t.Errorf("csum_start 60000: %d, %v", n, err)
	}
	if n, err := tx.TransmitOffload(descs, []packetio.Offload{{GSOType: packetio.OffloadGSOTCPv4}}); n != 0 || !errors.Is(err, packetio.ErrBadLength) {
		t.Errorf("GSO size 0: %d, %v", n, err)
	}
	tx.Free(descs)
}

func TestIntegrationOffloadRefusedWithoutGSO(t *testing.T) {
	pair := netns.New(t)
	d := openIn(t, pair.A)
	tx := d.TxQueue(0).(*TxQueue)
	descs := tx.Alloc(1)
	descs[0].Len = 64
	if n, err := tx.TransmitOffload(descs, make([]packetio.Offload, 1)); n != 0 || !errors.Is(err, packetio.ErrUnsupported) {
		t.Fatalf("TransmitOffload without GSO: %d, %v", n, err)
	}
	tx.Free(descs)
	if ds, offs := d.RxQueue(0).(*RxQueue).ReceiveOffload(8); ds != nil || offs != nil {
		t.Fatal("ReceiveOffload without GSO returned something")
	}
	if n, err := tx.TransmitGather([][]byte{{1}}, []int{1}, make([]packetio.Offload, 1)); n != 0 || !errors.Is(err, packetio.ErrUnsupported) {
		t.Fatalf("gather offloads without GSO: %d, %v", n, err)
	}
}

func TestIntegrationTransmitGather(t *testing.T) {
	pair := netns.New(t)
	a := openIn(t, pair.A, WithRxQueues(0))
	b := openIn(t, pair.B, WithTxQueues(0))
	tx := a.TxQueue(0).(*TxQueue)
	f1 := testFrame(t, pair.B.MAC, 1, 100)
	f2 := testFrame(t, pair.B.MAC, 2, 300)
	segs := [][]byte{f1[:14], f1[14:50], f1[50:], f2}
	free := tx.NumFreeFrames()
	n, err := tx.TransmitGather(segs, []int{3, 1}, nil)
	if n != 2 || err != nil {
		t.Fatalf("TransmitGather: %d, %v", n, err)
	}
	if tx.NumFreeFrames() != free || tx.NumInFlight() != 0 {
		t.Fatal("gather touched the pool or the pending list")
	}
	got := receiveOurs(t, b.RxQueue(0), 2, 3*time.Second)
	if len(got) != 2 || !bytes.Equal(got[0], f1) || !bytes.Equal(got[1], f2) {
		t.Fatalf("gathered frames arrived as %d frames", len(got))
	}
	many := make([][]byte, maxGatherSegs+1)
	for i := range many {
		many[i] = []byte{byte(i)}
	}
	for _, c := range []struct {
		name   string
		segs   [][]byte
		counts []int
		offs   []packetio.Offload
		n      int
		want   error
	}{
		{"nothing", nil, nil, nil, 0, nil},
		{"offs length", segs, []int{3, 1}, make([]packetio.Offload, 1), 0, packetio.ErrBadLength},
		{"zero count", segs, []int{0}, nil, 0, packetio.ErrBadLength},
		{"count past the segments", segs, []int{3, 2}, nil, 1, packetio.ErrBadLength},
		{"empty segment", [][]byte{f1, {}}, []int{1, 1}, nil, 1, packetio.ErrBadLength},
		{"too many segments", many, []int{len(many)}, nil, 0, packetio.ErrBadLength},
	} {
		n, err := tx.TransmitGather(c.segs, c.counts, c.offs)
		if n != c.n || !errors.Is(err, c.want) || (c.want == nil && err != nil) {
			t.Errorf("%s: %d, %v; want %d, %v", c.name, n, err, c.n, c.want)
		}
	}
}

// The fast path allocates nothing, with packets actually flowing.
func TestIntegrationNoAllocations(t *testing.T) { testNoAllocations(t) }

// The same with TPACKET_V2 rings.
func TestIntegrationLowLatencyNoAllocations(t *testing.T) { testNoAllocations(t, WithLowLatency()) }

func testNoAllocations(t *testing.T, opts ...Option) {
	pair := netns.New(t)
	a := openIn(t, pair.A, opts...)
	b := openIn(t, pair.B, opts...)
	tx := a.TxQueue(0).(*TxQueue)
	rx := b.RxQueue(0).(*RxQueue)
	btx := b.TxQueue(0).(*TxQueue)
	frame := testFrame(t, pair.B.MAC, 0, 64)
	build := func(i int, f []byte) int { return copy(f, frame) }
	back := make([]packetio.Desc, 0, maxPending)
	segs := [][]byte{frame[:14], frame[14:]}
	counts := []int{2}
	check := func(name string, f func()) {
		t.Helper()
		f()
		if n := testing.AllocsPerRun(200, f); n != 0 {
			t.Errorf("%s: %.1f allocations per call", name, n)
		}
	}
	check("SendFunc+Complete", func() { tx.SendFunc(32, build); tx.Complete(1 << 20) })
	check("Alloc+Transmit+Reclaim+Free", func() {
		ds := tx.Alloc(32)
		for i := range ds {
			ds[i].Len = uint32(copy(tx.Region().Writable(ds[i]), frame))
		}
		n := tx.Transmit(ds)
		tx.Free(ds[n:])
		back = tx.Reclaim(1<<20, back[:0])
		tx.Free(back)
	})
	check("TransmitGather", func() { tx.TransmitGather(segs, counts, nil) })
	time.Sleep(20 * time.Millisecond)
	received := 0
	check("Fill+Poll+Receive+Recycle", func() {
		rx.Fill(rx.NumFreeFillSlots())
		rx.Poll(0)
		ds := rx.Receive(64)
		received += len(ds)
		rx.Recycle(ds)
		tx.SendFunc(8, build)
		tx.Complete(1 << 20)
	})
	check("ReceiveTimestamps", func() {
		ds, _ := rx.ReceiveTimestamps(64)
		received += len(ds)
		rx.Recycle(ds)
		tx.SendFunc(8, build)
		tx.Complete(1 << 20)
	})
	check("Forward", func() {
		ds := rx.Receive(64)
		received += len(ds)
		n := btx.Transmit(ds)
		rx.Recycle(ds[n:])
		back = btx.Reclaim(1<<20, back[:0])
		rx.Recycle(back)
		tx.SendFunc(8, build)
		tx.Complete(1 << 20)
	})
	if received == 0 {
		t.Fatal("no packet arrived while measuring")
	}
	if r := rx.pool.Rejected() + tx.pool.Rejected() + btx.pool.Rejected(); r != 0 {
		t.Fatalf("%d frames refused by a pool", r)
	}
}
