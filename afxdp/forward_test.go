package afxdp_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

func openOn(t testing.TB, h *netns.Host, opts ...afxdp.Option) *afxdp.Device {
	t.Helper()
	var d *afxdp.Device
	if err := h.Do(func() (err error) {
		d, err = afxdp.Open(h.Link, opts...)
		return err
	}); err != nil {
		t.Fatalf("afxdp.Open(%s): %v", h.Link, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestForwardingConservesFrames: 100,000 frames go Receive -> Transmit ->
// Reclaim -> Recycle on one end of the veth, sent from and counted back at
// the other, with no special option: every frame comes home, nothing is
// refused.
func TestForwardingConservesFrames(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t)
	steer := afxdp.WithSteering(testFilter)
	fwd := openOn(t, p.B, steer)
	src := openOn(t, p.A, steer)
	if c := fwd.Capabilities(); !c.HandsBackFrames || !c.SharedRegion {
		t.Fatalf("capabilities %+v", c)
	}
	rx, tx := fwd.RxQueue(0), fwd.TxQueue(0)
	srx, stx := src.RxQueue(0), src.TxQueue(0)
	rx.Fill(rx.NumFreeFillSlots())
	srx.Fill(srx.NumFreeFillSlots())
	rxFree, txFree := rx.NumFreeFrames(), tx.NumFreeFrames()

	const total = 100000
	forwarded, back, sent := 0, 0, 0
	reclaimed := make([]packetio.Desc, 0, 4096)
	pending := make([]packetio.Desc, 0, 512)
	deadline := time.Now().Add(60 * time.Second)
	for (forwarded < total || back < forwarded*9/10) && time.Now().Before(deadline) {
		if sent < total && sent-back < 512 {
			n, err := stx.SendFunc(min(64, total-sent), func(i int, f []byte) int {
				clear(f[:64])
				copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x88, 0xb5})
				binary.BigEndian.PutUint32(f[14:], uint32(sent+i))
				return 64
			})
			if err != nil {
				t.Fatal(err)
			}
			sent += n
		}
		if _, err := rx.Poll(time.Millisecond); err != nil {
			t.Fatal(err)
		}
		pending = append(pending, rx.Receive(256)...)
		for _, d := range pending {
			rx.Region().Frame(d)[11] = 2 // rewrite in place: mark as forwarded
		}
		n := tx.Transmit(pending)
		forwarded += n
		pending = append(pending[:0], pending[n:]...)
		reclaimed = tx.Reclaim(1<<20, reclaimed[:0])
		rx.Recycle(reclaimed)
		rx.Fill(rx.NumFreeFillSlots())
		for _, d := range srx.Receive(256) {
			if f := srx.Region().Frame(d); len(f) > 11 && f[11] == 2 {
				back++
			}
			srx.Recycle([]packetio.Desc{d})
		}
		srx.Fill(srx.NumFreeFillSlots())
		stx.Complete(1 << 20)
	}
	rx.Recycle(pending)
	for i := 0; i < 1000 && tx.NumInFlight() > 0; i++ {
		reclaimed = tx.Reclaim(1<<20, reclaimed[:0])
		rx.Recycle(reclaimed)
		time.Sleep(time.Millisecond)
	}
	rx.Fill(rx.NumFreeFillSlots())
	txs, _ := tx.Stats()
	rxs, _ := rx.Stats()
	t.Logf("forwarded %d, %d back at the sender; tx %+v; rx %+v", forwarded, back, txs.Backend, rxs.Backend)
	if forwarded < total {
		t.Fatalf("forwarded %d of %d", forwarded, total)
	}
	if tx.NumInFlight() != 0 {
		t.Fatalf("%d frames never came back", tx.NumInFlight())
	}
	if got := rx.NumFreeFrames(); got != rxFree {
		t.Errorf("receive pool %d -> %d", rxFree, got)
	}
	if got := tx.NumFreeFrames(); got != txFree {
		t.Errorf("transmit pool %d -> %d", txFree, got)
	}
	if txs.Backend["pool_rejected"] != 0 || rxs.Backend["pool_rejected"] != 0 {
		t.Errorf("pool_rejected: tx %d rx %d", txs.Backend["pool_rejected"], rxs.Backend["pool_rejected"])
	}
	if back < forwarded/2 {
		t.Errorf("only %d of %d forwarded frames reached the sender", back, forwarded)
	}
}

// TestCrossQueueTransmit: with one shared region, a frame received on queue
// 0 is transmitted on queue 1 as it is, and reclaimed there for queue 0.
func TestCrossQueueTransmit(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t, netns.WithQueues(2))
	d := openOn(t, p.B, afxdp.WithSteering(testFilter), afxdp.WithFrames(1024))
	if d.NumRxQueues() != 2 || !d.Capabilities().SharedRegion || d.RxQueue(0).Region() != d.TxQueue(1).Region() {
		t.Fatalf("%d queues, shared %v", d.NumRxQueues(), d.Capabilities().SharedRegion)
	}
	src := openOn(t, p.A, afxdp.WithSteering(testFilter), afxdp.WithQueues(1), afxdp.WithFrames(1024))
	for i := range 2 {
		d.RxQueue(i).Fill(d.RxQueue(i).NumFreeFillSlots())
	}
	sendTestFrames(t, src.TxQueue(0), 32)
	var got []packetio.Desc
	var from int
	deadline := time.Now().Add(3 * time.Second)
	for len(got) == 0 && time.Now().Before(deadline) {
		for i := range 2 {
			if descs := d.RxQueue(i).Receive(8); len(descs) > 0 {
				got, from = append(got, descs...), i
				break
			}
		}
		time.Sleep(time.Millisecond)
	}
	if len(got) == 0 {
		t.Fatal("nothing arrived")
	}
	other := d.TxQueue(1 - from)
	if n := other.Transmit(got); n != len(got) {
		t.Fatalf("queue %d took %d of %d frames received on queue %d", 1-from, n, len(got), from)
	}
	var back []packetio.Desc
	for i := 0; i < 1000 && len(back) < len(got); i++ {
		back = other.Reclaim(1<<20, back)
		time.Sleep(time.Millisecond)
	}
	if len(back) != len(got) {
		t.Fatalf("reclaimed %d of %d", len(back), len(got))
	}
	rq := d.RxQueue(from)
	before := rq.NumFreeFrames()
	rq.Recycle(back)
	if rq.NumFreeFrames() != before+len(back) {
		t.Fatalf("recycling to queue %d: %d -> %d", from, before, rq.NumFreeFrames())
	}
	if st, _ := rq.Stats(); st.Backend["pool_rejected"] != 0 {
		t.Fatalf("%d refused", st.Backend["pool_rejected"])
	}
}

// TestVLANStrippedByTheDriver: a sender whose frames carry their VLAN tag
// out of band (a tc program pushes it as skb metadata, as a NIC that strips
// tags does) still matches MatchVLAN: the program reads the tag the driver
// holds through bpf_xdp_metadata_rx_vlan_tag.
func TestVLANStrippedByTheDriver(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t)
	d := openOn(t, p.B, afxdp.WithSteering(packetio.SteeringFilter{Match: []packetio.Match{packetio.MatchVLAN(100)}}),
		afxdp.WithXDP(xdp.WithDriverMode()), afxdp.WithFrames(1024))
	t.Logf("%s", d.Info())
	if d.Info().VLAN == "" {
		t.Fatal("Info does not say how VLAN tags are seen")
	}
	// On the sender, a tc egress program puts every frame's tag into skb
	// metadata (bpf_skb_vlan_push), so the frame reaches the peer's XDP
	// program without the tag in its bytes.
	var l link.Link
	if err := p.A.Do(func() error {
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SchedCLS, License: "Dual BSD/GPL", Instructions: asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.Mov.Imm(asm.R2, filter.NetShort(0x8100)),
			asm.Mov.Imm(asm.R3, 100),
			asm.FnSkbVlanPush.Call(),
			asm.Mov.Imm(asm.R0, 0), // TC_ACT_OK
			asm.Return(),
		}})
		if err != nil {
			return err
		}
		defer prog.Close()
		l, err = link.AttachTCX(link.TCXOptions{Interface: p.A.Index, Program: prog, Attach: ebpf.AttachTCXEgress})
		return err
	}); err != nil {
		testenv.CannotRun(t, "a tc egress program (tcx) to push the tag as metadata: %v", err)
		return
	}
	defer l.Close()
	// A packet socket, not AF_XDP: an AF_XDP transmit skips the qdisc
	// layer, and the tc program with it.
	fd, err := p.A.PacketSocket()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	rx := d.RxQueue(0)
	rx.Fill(rx.NumFreeFillSlots())
	frame := make([]byte, 64)
	copy(frame, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x88, 0xb5})
	const sent = 16
	for range sent {
		if err := unix.Sendto(fd, frame, 0, &unix.SockaddrLinklayer{Ifindex: p.A.Index, Halen: 6}); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	deadline := time.Now().Add(3 * time.Second)
	for got < sent && time.Now().Before(deadline) {
		if _, err := rx.Poll(10 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		descs := rx.Receive(64)
		for _, desc := range descs {
			f := rx.Region().Frame(desc)
			if len(f) >= 14 && f[12] == 0x88 && f[13] == 0xb5 {
				got++ // the tag is not in the bytes: it was matched from metadata
			}
		}
		rx.Recycle(descs)
		rx.Fill(rx.NumFreeFillSlots())
	}
	if got != sent {
		t.Fatalf("received %d of %d frames whose tag the driver held", got, sent)
	}
}
