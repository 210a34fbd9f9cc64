package afxdp_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// TestSteeringSpecTailCalled: a program of the caller's own drops one
// EtherType (counting it) and tail-calls packetio's steering program,
// compiled by SteeringSpec, for everything else; the device opened with
// WithProgram gets the steered datagrams, a kernel socket the others, and
// the caller's counter the dropped frames.
func TestSteeringSpecTailCalled(t *testing.T) {
	testenv.NeedBPF(t)
	const dropType = 0x88b6
	xsks, err := ebpf.NewMap(&ebpf.MapSpec{Name: "xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer xsks.Close()
	spec, err := afxdp.SteeringSpec(packetio.SteeringFilter{Match: packetio.MatchDstPort(packetio.IPProtoUDP, 9000)})
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Instructions.AssociateMap(afxdp.SteeringMapName, xsks); err != nil {
		t.Fatal(err)
	}
	steer, err := ebpf.NewProgram(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer steer.Close()
	progs, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.ProgramArray, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer progs.Close()
	if err := progs.Put(uint32(0), steer); err != nil {
		t.Fatal(err)
	}
	drops, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer drops.Close()
	mine, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "mine", Type: ebpf.XDP, License: "MIT", Instructions: asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 14),
		asm.JGT.Reg(asm.R4, asm.R3, "steer"),
		asm.LoadMem(asm.R4, asm.R2, 12, asm.Half),
		asm.JNE.Imm(asm.R4, int32(filter.NetShort(dropType)), "steer"),
		// drops[0]++ and XDP_DROP.
		asm.StoreImm(asm.R10, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, drops.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "drop"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("drop"),
		asm.Return(),
		// Everything else: packetio's steering, XDP_PASS if the call fails.
		asm.Mov.Reg(asm.R1, asm.R6).WithSymbol("steer"),
		asm.LoadMapPtr(asm.R2, progs.FD()),
		asm.Mov.Imm(asm.R3, 0),
		asm.FnTailCall.Call(),
		asm.Mov.Imm(asm.R0, 2),
		asm.Return(),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()

	p := netns.New(t, netns.WithAddrs(netip.MustParsePrefix("10.78.0.1/24"), netip.MustParsePrefix("10.78.0.2/24")))
	d := openOn(t, p.B, afxdp.WithProgram(mine, xsks))
	if c := d.Capabilities(); c.SteeringBy != "user" {
		t.Errorf("Capabilities().SteeringBy = %q, want user", c.SteeringBy)
	}
	if in := d.Info(); !strings.Contains(in.Program, `yours: "mine"`) {
		t.Errorf("Info().Program = %q", in.Program)
	}

	kconn, err := p.B.ListenUDP(net.IPv4(10, 78, 0, 2), 9001)
	if err != nil {
		t.Fatal(err)
	}
	defer kconn.Close()
	sender, err := p.A.ListenUDP(net.IPv4(10, 78, 0, 1), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	fd, err := p.A.PacketSocket()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	const n = 40
	for i := range n {
		for _, port := range []int{9000, 9001} {
			if _, err := sender.WriteToUDP([]byte(fmt.Sprintf("datagram %d", i)), &net.UDPAddr{IP: net.IPv4(10, 78, 0, 2), Port: port}); err != nil {
				t.Fatal(err)
			}
		}
		frame := make([]byte, 60)
		copy(frame, p.B.MAC)
		copy(frame[6:], p.A.MAC)
		binary.BigEndian.PutUint16(frame[12:], dropType)
		if err := unix.Sendto(fd, frame, 0, &unix.SockaddrLinklayer{Ifindex: p.A.Index, Halen: 6}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	kernelGot := 0
	buf := make([]byte, 2048)
	_ = kconn.SetReadDeadline(time.Now().Add(3 * time.Second))
	for kernelGot < n {
		if _, err := kconn.Read(buf); err != nil {
			break
		}
		kernelGot++
	}
	devGot, other := 0, 0
	q := d.RxQueue(0)
	deadline := time.Now().Add(3 * time.Second)
	for devGot < n && time.Now().Before(deadline) {
		q.Fill(q.NumFreeFillSlots())
		_, _ = q.Poll(5 * time.Millisecond)
		descs := q.Receive(64)
		for _, ds := range descs {
			b := q.Region().Frame(ds)
			if len(b) >= 38 && binary.BigEndian.Uint16(b[12:]) == filter.EtherTypeIPv4 && b[23] == 17 && binary.BigEndian.Uint16(b[36:]) == 9000 {
				devGot++
			} else {
				other++
			}
		}
		q.Recycle(descs)
	}
	var dropped uint64
	if err := drops.Lookup(uint32(0), &dropped); err != nil {
		t.Fatal(err)
	}
	if devGot != n || other != 0 || kernelGot != n || dropped != n {
		t.Errorf("device got %d of %d steered datagrams (+%d others), the kernel socket %d of %d, the caller's program dropped %d of %d",
			devGot, n, other, kernelGot, n, dropped, n)
	}
}

// TestSteeringSpecRefusals: the zero filter (an interface's addresses) and
// a filter WithSteering refuses are refused here too.
func TestSteeringSpecRefusals(t *testing.T) {
	if _, err := afxdp.SteeringSpec(packetio.SteeringFilter{}); err == nil {
		t.Error("the zero filter compiled without an interface")
	}
	_, err := afxdp.SteeringSpec(packetio.SteeringFilter{Promiscuous: true, Match: packetio.MatchDstPort(packetio.IPProtoUDP, 53)})
	if !errors.Is(err, packetio.ErrInvalid) && !errors.Is(err, packetio.ErrUnsupported) {
		t.Errorf("promiscuous with matches: %v, want it refused", err)
	}
	spec, err := afxdp.SteeringSpec(packetio.SteeringFilter{Promiscuous: true})
	if err != nil || spec.Type != ebpf.XDP || spec.Name != "xsk_filter" {
		t.Errorf("promiscuous: %v, %+v", err, spec)
	}
}
