//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// TestCapabilitiesAreWhatConfigureKept uses net_tap, the one virtual device
// here that keeps checksum and TSO offloads, inside a throwaway namespace
// (the tap interface is made in the namespace Open runs in). net_null
// keeps none, so asking changes nothing.
func TestCapabilitiesAreWhatConfigureKept(t *testing.T) {
	testenv.NeedRoot(t)
	null := openT(t, "net_null0", append(small(), WithChecksumOffload())...)
	if c := null.Capabilities(); c.TxChecksumOffload || c.RxChecksumFlags {
		t.Fatalf("net_null claims offloads it does not keep: %+v", c)
	}
	if _, err := null.Tx[0].TransmitOffload(nil, nil); !errors.Is(err, packetio.ErrUnsupported) {
		t.Fatalf("TransmitOffload on net_null: %v", err)
	}
	null.Close()
	if _, err := Open("net_null0", append(append([]Option(nil), ealOpts...), append(small(), WithTSO())...)...); !errors.Is(err, packetio.ErrUnsupported) {
		t.Fatalf("TSO on net_null: %v, want ErrUnsupported", err)
	}

	p := netns.New(t)
	plain, err := openIn(t, p.A, "net_tap0,iface=piotap0", small()...)
	if err != nil {
		t.Fatal(err)
	}
	if c := plain.Capabilities(); c.TxChecksumOffload || c.RxChecksumFlags || !c.KernelCoexistence {
		t.Fatalf("tap without offloads asked: %+v", c)
	}
	plain.Close()

	d, err := openIn(t, p.A, "net_tap0,iface=piotap0", append(small(), WithTSO())...)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if c := d.Capabilities(); !c.TxChecksumOffload || !c.RxChecksumFlags {
		t.Fatalf("tap kept checksums and TSO, capabilities say %+v", c)
	}
	tx := d.Tx[0]
	desc := tx.Alloc(1)[0]
	b := d.region.Bytes[desc.Addr:]
	copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(b[12:], 0x0800)
	b[14], b[23] = 0x45, packetio.IPProtoTCP
	binary.BigEndian.PutUint16(b[16:], 1500-14)
	desc.Len = 1500
	o := packetio.Offload{Flags: packetio.OffloadNeedsCsum, GSOType: packetio.OffloadGSOTCPv4, HdrLen: 54, GSOSize: 500, CsumStart: 34, CsumOff: 16}
	if n, err := tx.TransmitOffload([]packetio.Desc{desc}, []packetio.Offload{o}); n != 1 || err != nil {
		t.Fatalf("TransmitOffload = %d, %v", n, err)
	}
	bad := tx.Alloc(1)
	bad[0].Len = 60
	if n, err := tx.TransmitOffload(bad, []packetio.Offload{{Flags: packetio.OffloadNeedsCsum, CsumStart: 34}}); n != 0 || !errors.Is(err, packetio.ErrBadLength) {
		t.Fatalf("offload on a packet with no headers: %d, %v", n, err)
	}
	tx.Free(bad)
}
