package afxdp_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// TestTransmitChecksumOffload: a UDP datagram whose checksum field holds
// only the pseudo-header sum, sent through TransmitOffload with
// OffloadNeedsCsum, is accepted by a kernel UDP socket at the far end; the
// same frame sent plainly is dropped for its bad checksum.
func TestTransmitChecksumOffload(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t, netns.WithAddrs(netip.MustParsePrefix("10.67.0.1/24"), netip.MustParsePrefix("10.67.0.2/24")))
	d := openOn(t, p.A, afxdp.WithTransmitOnly(), afxdp.WithTxChecksumOffload())
	if !d.Capabilities().TxChecksumOffload {
		t.Fatal("TxChecksumOffload false")
	}
	tx := d.TxQueue(0).(packetio.OffloadTransmitter)
	var conn *net.UDPConn
	if err := p.B.Do(func() (err error) {
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 67, 0, 2), Port: 7777})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	payload := []byte("finished by the device")
	send := func(off packetio.Offload) {
		descs := tx.Alloc(1)
		if len(descs) != 1 {
			t.Fatal("no frame")
		}
		descs[0].Len = uint32(partialUDP(tx.Region().Writable(descs[0]), p.A.MAC, p.B.MAC, payload))
		if n, err := tx.TransmitOffload(descs, []packetio.Offload{off}); n != 1 || err != nil {
			t.Fatalf("TransmitOffload: %d, %v", n, err)
		}
		for i := 0; i < 100 && tx.NumInFlight() > 0; i++ {
			tx.Complete(8)
			time.Sleep(time.Millisecond)
		}
	}
	buf := make([]byte, 256)
	send(packetio.Offload{})
	_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := conn.Read(buf); err == nil {
		t.Fatal("the partial checksum was accepted without the offload")
	}
	send(packetio.Offload{Flags: packetio.OffloadNeedsCsum, CsumStart: 34, CsumOff: 6})
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := conn.Read(buf)
	if err != nil || !bytes.Equal(buf[:n], payload) {
		t.Fatalf("offloaded datagram: %q, %v", buf[:n], err)
	}
	// What it refuses.
	descs := tx.Alloc(1)
	descs[0].Len = 60
	if _, err := tx.TransmitOffload(descs, []packetio.Offload{{GSOType: packetio.OffloadGSOTCPv4, GSOSize: 1000}}); !errors.Is(err, packetio.ErrUnsupported) {
		t.Errorf("GSO: %v", err)
	}
	if _, err := tx.TransmitOffload(descs, []packetio.Offload{{Flags: packetio.OffloadNeedsCsum, CsumStart: 50, CsumOff: 16}}); !errors.Is(err, packetio.ErrBadLength) {
		t.Errorf("checksum past the packet: %v", err)
	}
	if _, err := tx.TransmitOffload(descs, nil); !errors.Is(err, packetio.ErrBadLength) {
		t.Errorf("no offloads: %v", err)
	}
	tx.Free(descs)

	plain := openOn(t, p.B, afxdp.WithSteering(testFilter), afxdp.WithFrames(512))
	if _, err := plain.TxQueue(0).(packetio.OffloadTransmitter).TransmitOffload(nil, nil); !errors.Is(err, packetio.ErrUnsupported) {
		t.Errorf("without WithTxChecksumOffload: %v", err)
	}
}

// partialUDP writes an IPv4/UDP frame 10.67.0.1:7776 -> 10.67.0.2:7777
// whose UDP checksum field holds the pseudo-header sum, not complemented.
func partialUDP(f []byte, src, dst net.HardwareAddr, payload []byte) int {
	copy(f[0:6], dst)
	copy(f[6:12], src)
	binary.BigEndian.PutUint16(f[12:], 0x0800)
	ip := f[14:34]
	ulen := 8 + len(payload)
	clear(ip)
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+ulen))
	ip[8], ip[9] = 64, 17
	copy(ip[12:16], []byte{10, 67, 0, 1})
	copy(ip[16:20], []byte{10, 67, 0, 2})
	binary.BigEndian.PutUint16(ip[10:], ^fold(sum16(ip)))
	u := f[34:]
	binary.BigEndian.PutUint16(u[0:], 7776)
	binary.BigEndian.PutUint16(u[2:], 7777)
	binary.BigEndian.PutUint16(u[4:], uint16(ulen))
	copy(u[8:], payload)
	binary.BigEndian.PutUint16(u[6:], fold(sum16(ip[12:20])+17+uint32(ulen)))
	return 34 + ulen
}

func sum16(b []byte) uint32 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	return s
}

func fold(s uint32) uint16 {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}
