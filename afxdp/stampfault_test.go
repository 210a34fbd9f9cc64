package afxdp_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
)

// TestFaultZeroStamp: a packet whose stamp reads zero is a fault the
// caller sees, not a packet with a made-up stamp. packetio's program never
// writes a zero stamp, so the test swaps a program that does under the
// open device (through the device's own BPF link). From the first such
// packet ReceiveTimestamps takes nothing, Capabilities().RxTimestamps is
// false and Stats counts the packet as "unstamped"; Receive still hands
// over every packet, each the frame as sent.
func TestFaultZeroStamp(t *testing.T) {
	p := faultPair(t)
	d := openOn(t, p.B, faultSteering, afxdp.WithTimestamps())
	src := openOn(t, p.A, afxdp.WithTransmitOnly())
	rx := d.RxQueue(0)
	stamper, ok := rx.(packetio.TimestampReceiver)
	if !ok || !d.Capabilities().RxTimestamps {
		t.Fatalf("no stamps with WithTimestamps: TimestampReceiver %v, Capabilities().RxTimestamps %v", ok, d.Capabilities().RxTimestamps)
	}
	rx.Fill(rx.NumFreeFillSlots())

	// Stamped as packetio's program stamps them: taken, stamps set.
	sendSeq(t, src.TxQueue(0), 0, 8)
	descs, stamps := waitStamped(t, rx, stamper, 8)
	for i, st := range stamps {
		if st == 0 {
			t.Errorf("packet %d stamped 0 by packetio's program", i)
		}
	}
	rx.Recycle(descs)

	swapZeroStampProgram(t, p.B.Do, p.B.Link)
	sent := sendSeq(t, src.TxQueue(0), 8, 8)
	deadline := time.Now().Add(3 * time.Second)
	for n, _ := rx.Poll(10 * time.Millisecond); n < 8 && time.Now().Before(deadline); n, _ = rx.Poll(10 * time.Millisecond) {
	}
	if got, st := stamper.ReceiveTimestamps(64); got != nil || st != nil {
		t.Fatalf("ReceiveTimestamps took %d packets stamped zero (stamps %v)", len(got), st)
	}
	if d.Capabilities().RxTimestamps {
		t.Error("Capabilities().RxTimestamps still true after a zero stamp")
	}
	if s, err := rx.Stats(); err != nil || s.Backend["unstamped"] != 1 {
		t.Errorf("Stats: unstamped %d (%v), want 1", s.Backend["unstamped"], err)
	}
	got := map[uint32][]byte{}
	for time.Now().Before(deadline) && len(got) < len(sent) {
		_, _ = rx.Poll(10 * time.Millisecond)
		ds := rx.Receive(64)
		for _, ds := range ds {
			b := rx.Region().Frame(ds)
			if len(b) >= 18 {
				got[binary.BigEndian.Uint32(b[14:])] = bytes.Clone(b)
			}
		}
		rx.Recycle(ds)
	}
	for seq, want := range sent {
		if !bytes.Equal(got[seq], want) {
			t.Errorf("packet %d through Receive: % x, want % x", seq, got[seq], want)
		}
	}
	if ds, st := stamper.ReceiveTimestamps(64); ds != nil || st != nil {
		t.Errorf("ReceiveTimestamps took packets again after the fault")
	}
}

// sendSeq sends n 64-byte fault frames numbered from first and returns
// them by number.
func sendSeq(t *testing.T, tx packetio.TxQueue, first uint32, n int) map[uint32][]byte {
	t.Helper()
	sent := map[uint32][]byte{}
	for try := 0; try < 100 && len(sent) < n; try++ {
		k, err := tx.SendFunc(n-len(sent), func(i int, f []byte) int {
			seq := first + uint32(len(sent)+i)
			faultFrame(f, seq, 64)
			sent[seq] = bytes.Clone(f[:64])
			return 64
		})
		if err != nil {
			t.Fatalf("SendFunc: %v", err)
		}
		if k < n-len(sent) {
			time.Sleep(time.Millisecond)
		}
		tx.Complete(1 << 20)
	}
	if len(sent) != n {
		t.Fatalf("sent %d of %d frames", len(sent), n)
	}
	return sent
}

// waitStamped takes n stamped packets off rx within 3 s.
func waitStamped(t *testing.T, rx packetio.RxQueue, s packetio.TimestampReceiver, n int) ([]packetio.Desc, []uint64) {
	t.Helper()
	var descs []packetio.Desc
	var stamps []uint64
	for deadline := time.Now().Add(3 * time.Second); len(descs) < n && time.Now().Before(deadline); {
		_, _ = rx.Poll(10 * time.Millisecond)
		ds, st := s.ReceiveTimestamps(n - len(descs))
		descs, stamps = append(descs, ds...), append(stamps, st...)
	}
	if len(descs) != n {
		t.Fatalf("received %d of %d stamped packets", len(descs), n)
	}
	return descs, stamps
}

// swapZeroStampProgram puts, through the BPF link that holds the XDP
// program on ifname (in the namespace do runs in), a program that grows
// every packet by a stamp's 16 bytes, writes zeros there, and redirects it
// into the same XSKMAP: what a driver or program that failed to stamp
// would hand the socket. The device's Close destroys the link whatever
// program it holds.
func swapZeroStampProgram(t *testing.T, do func(func() error) error, ifname string) {
	t.Helper()
	var id ebpf.ProgramID
	if err := do(func() error {
		l, err := netlink.LinkByName(ifname)
		if err != nil {
			return err
		}
		if l.Attrs().Xdp == nil || l.Attrs().Xdp.ProgId == 0 {
			return fmt.Errorf("no XDP program on %s", ifname)
		}
		id = ebpf.ProgramID(l.Attrs().Xdp.ProgId)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	xsks := xskMapOf(t, id)
	defer xsks.Close()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.XDP,
		License: "Dual BSD/GPL",
		Instructions: asm.Instructions{
			asm.Mov.Reg(asm.R6, asm.R1),
			asm.Mov.Imm(asm.R2, -16),
			asm.FnXdpAdjustHead.Call(),
			asm.JNE.Imm(asm.R0, 0, "pass"),
			asm.LoadMem(asm.R2, asm.R6, 0, asm.Word), // data
			asm.LoadMem(asm.R3, asm.R6, 4, asm.Word), // data_end
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, 16),
			asm.JGT.Reg(asm.R4, asm.R3, "pass"),
			asm.Mov.Imm(asm.R5, 0),
			asm.StoreMem(asm.R2, 0, asm.R5, asm.DWord),
			asm.StoreMem(asm.R2, 8, asm.R5, asm.DWord),
			asm.LoadMapPtr(asm.R1, xsks.FD()),
			asm.LoadMem(asm.R2, asm.R6, 16, asm.Word), // rx_queue_index
			asm.Mov.Imm(asm.R3, 2),                    // XDP_PASS without a socket
			asm.FnRedirectMap.Call(),
			asm.Return(),
			asm.Mov.Imm(asm.R0, 2).WithSymbol("pass"),
			asm.Return(),
		},
	})
	if err != nil {
		t.Fatalf("load the zero-stamp program: %v", err)
	}
	defer prog.Close()
	it := new(link.Iterator)
	defer it.Close()
	for it.Next() {
		info, err := it.Link.Info()
		if err != nil || info.Type != link.XDPType || info.Program != id {
			continue
		}
		if err := it.Link.Update(prog); err != nil {
			t.Fatalf("update the XDP link of program %d: %v", id, err)
		}
		return
	}
	t.Fatalf("no BPF link holds XDP program %d (%v)", id, it.Err())
}

// xskMapOf opens the XSKMAP program id uses.
func xskMapOf(t *testing.T, id ebpf.ProgramID) *ebpf.Map {
	t.Helper()
	prog, err := ebpf.NewProgramFromID(id)
	if err != nil {
		t.Fatalf("program %d: %v", id, err)
	}
	defer prog.Close()
	info, err := prog.Info()
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := info.MapIDs()
	for _, mid := range ids {
		m, err := ebpf.NewMapFromID(mid)
		if err != nil {
			continue
		}
		if m.Type() == ebpf.XSKMap {
			return m
		}
		m.Close()
	}
	t.Fatalf("program %d uses no XSKMAP (maps %v)", id, ids)
	return nil
}
