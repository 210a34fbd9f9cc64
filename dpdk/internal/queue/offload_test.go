package queue

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/packetio/packetio"
)

// tcpPacket writes an Ethernet (optionally VLAN-tagged) IPv4 TCP packet of
// n bytes into b and returns n.
func tcpPacket(b []byte, vlan bool, n int) int {
	l2 := 14
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	if vlan {
		binary.BigEndian.PutUint16(b[12:], 0x8100)
		binary.BigEndian.PutUint16(b[16:], 0x0800)
		l2 = 18
	}
	b[l2] = 0x45
	b[l2+9] = packetio.IPProtoTCP
	return n
}

func offloadRig(t *testing.T, csum, tso bool) (*rig, *Tx) {
	g := newRig(t, 64)
	c := g.cfg(64, 0xa0)
	c.TxChecksums, c.TSO = csum, tso
	q, err := NewTx(c)
	if err != nil {
		t.Fatal(err)
	}
	return g, q
}

func one(t *testing.T, q *Tx, vlan bool, n int) packetio.Desc {
	d := q.Alloc(1)[0]
	d.Len = uint32(tcpPacket(q.cfg.Region[d.Addr:], vlan, n))
	return d
}

func flagsOf(q *Tx, d packetio.Desc) (uint64, uint64) {
	m := (d.Addr &^ q.mask) + ObjHeader
	return ne.Uint64(q.r[m+offOlFlags:]), ne.Uint64(q.r[m+offTxOffload:])
}

func TestChecksumFlagsOnAVLANTaggedPacket(t *testing.T) {
	_, q := offloadRig(t, true, false)
	d := one(t, q, true, 100)
	if n, err := q.Transmit([]packetio.Desc{d}); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	f, l := flagsOf(q, d)
	if f != TxIPv4|TxIPCksum|TxTCPCksum || l != txOffload(18, 20, 0, 0) {
		t.Fatalf("flags %#x lens %#x", f, l)
	}
}

func TestNoOffloadNoFlags(t *testing.T) {
	_, q := offloadRig(t, false, false)
	d := one(t, q, false, 100)
	q.Transmit([]packetio.Desc{d})
	if f, _ := flagsOf(q, d); f != 0 {
		t.Fatalf("flags %#x", f)
	}
	if _, err := q.TransmitOffload([]packetio.Desc{d}, []packetio.Offload{{}}); !errors.Is(err, packetio.ErrUnsupported) {
		t.Fatalf("TransmitOffload without the capability: %v", err)
	}
}

func TestUnparseablePacketGoesOutPlain(t *testing.T) {
	_, q := offloadRig(t, true, false)
	d := q.Alloc(1)[0]
	binary.BigEndian.PutUint16(q.cfg.Region[d.Addr+12:], 0x0806) // ARP
	d.Len = 60
	if n, _ := q.Transmit([]packetio.Desc{d}); n != 1 {
		t.Fatal("ARP refused")
	}
	if f, _ := flagsOf(q, d); f != 0 {
		t.Fatalf("flags %#x on ARP", f)
	}
}

func TestTSO(t *testing.T) {
	_, q := offloadRig(t, true, true)
	d := one(t, q, false, 1500)
	o := packetio.Offload{Flags: packetio.OffloadNeedsCsum, GSOType: packetio.OffloadGSOTCPv4, HdrLen: 54, GSOSize: 1448, CsumStart: 34, CsumOff: 16}
	if n, err := q.TransmitOffload([]packetio.Desc{d}, []packetio.Offload{o}); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	f, l := flagsOf(q, d)
	if f != TxIPv4|TxIPCksum|TxTCPCksum|TxTCPSeg || l != txOffload(14, 20, 20, 1448) {
		t.Fatalf("flags %#x lens %#x", f, l)
	}
}

func TestOffloadRefusals(t *testing.T) {
	good := packetio.Offload{Flags: packetio.OffloadNeedsCsum, CsumStart: 34, CsumOff: 16}
	for _, tc := range []struct {
		name string
		tso  bool
		o    packetio.Offload
		want error
	}{
		{"csum_start disagrees", false, packetio.Offload{Flags: packetio.OffloadNeedsCsum, CsumStart: 30}, packetio.ErrBadLength},
		{"tso without the capability", false, packetio.Offload{GSOType: packetio.OffloadGSOTCPv4, HdrLen: 54, GSOSize: 1000}, packetio.ErrUnsupported},
		{"udp gso", true, packetio.Offload{GSOType: packetio.OffloadGSOUDP, HdrLen: 42, GSOSize: 1000}, packetio.ErrUnsupported},
		{"gso size 0", true, packetio.Offload{GSOType: packetio.OffloadGSOTCPv4, HdrLen: 54}, packetio.ErrBadLength},
		{"header past the packet", true, packetio.Offload{GSOType: packetio.OffloadGSOTCPv4, HdrLen: 2000, GSOSize: 100}, packetio.ErrBadLength},
		{"header inside l3", true, packetio.Offload{GSOType: packetio.OffloadGSOTCPv4, HdrLen: 34, GSOSize: 100}, packetio.ErrBadLength},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, q := offloadRig(t, true, tc.tso)
			free := q.NumFreeFrames()
			d := []packetio.Desc{one(t, q, false, 1500), one(t, q, false, 1500)}
			n, err := q.TransmitOffload(d, []packetio.Offload{good, tc.o})
			if n != 1 || !errors.Is(err, tc.want) {
				t.Fatalf("TransmitOffload = %d, %v; want 1, %v", n, err, tc.want)
			}
			if q.Stats().Backend["bad_offload"] != 1 {
				t.Fatal("bad_offload not counted")
			}
			q.Free(d[n:])
			for q.NumInFlight() > 0 {
				q.Transmit(build(t, q, 40))
				q.Complete(1 << 20)
			}
			if q.NumFreeFrames() != free {
				t.Fatalf("frames %d -> %d", free, q.NumFreeFrames())
			}
		})
	}
	_, q := offloadRig(t, true, false)
	if _, err := q.TransmitOffload(q.Alloc(2), []packetio.Offload{{}}); !errors.Is(err, packetio.ErrBadLength) {
		t.Fatalf("length mismatch: %v", err)
	}
}
