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
	conn := listenUDP7777(t, p.B)
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

// TestTransmitChecksumOffloadChain: a 5,001-byte datagram sent as a chain
// of frames (the first cut at an odd length) with a checksum request
// reaches a kernel UDP socket whole. Linux's copy mode would finish the
// requested checksum over the chain's first frame alone; TransmitOffload
// finishes a chain's checksum itself (without it, this datagram is dropped
// for its checksum).
func TestTransmitChecksumOffloadChain(t *testing.T) {
	testenv.NeedBPF(t)
	p := netns.New(t, netns.WithAddrs(netip.MustParsePrefix("10.67.0.1/24"), netip.MustParsePrefix("10.67.0.2/24")), netns.WithMTU(9000))
	d := openOn(t, p.A, afxdp.WithTransmitOnly(), afxdp.WithTxChecksumOffload(), afxdp.WithMultiBuffer())
	tx := d.TxQueue(0).(packetio.OffloadTransmitter)
	conn := listenUDP7777(t, p.B)
	payload := bytes.Repeat([]byte("0123456789abcdefg"), 5001/17)
	payload = append(payload, make([]byte, 5001-len(payload))...)
	whole := make([]byte, 34+8+len(payload))
	whole = whole[:partialUDP(whole, p.A.MAC, p.B.MAC, payload)]
	descs := tx.Alloc(8)
	var cuts []int
	for at := 0; at < len(whole); {
		i := len(cuts)
		if i == len(descs) {
			t.Fatalf("%d frames do not hold %d bytes", len(descs), len(whole))
		}
		f := tx.Region().Writable(descs[i])
		n := min(len(whole)-at, len(f))
		if i == 0 {
			n = 1001 // an odd cut
		}
		copy(f, whole[at:at+n])
		descs[i].Len = uint32(n)
		descs[i].Options |= packetio.OptContinued
		cuts = append(cuts, n)
		at += n
	}
	tx.Free(descs[len(cuts):])
	descs = descs[:len(cuts)]
	descs[len(descs)-1].Options &^= packetio.OptContinued
	offs := make([]packetio.Offload, len(descs))
	offs[0] = packetio.Offload{Flags: packetio.OffloadNeedsCsum, CsumStart: 34, CsumOff: 6}
	if n, err := tx.TransmitOffload(descs, offs); n != len(descs) || err != nil {
		t.Fatalf("TransmitOffload of a %d-frame chain: %d, %v", len(descs), n, err)
	}
	for i := 0; i < 100 && tx.NumInFlight() > 0; i++ {
		tx.Complete(8)
		time.Sleep(time.Millisecond)
	}
	buf := make([]byte, 9000)
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := conn.Read(buf)
	if err != nil || !bytes.Equal(buf[:n], payload) {
		t.Fatalf("a %d-frame chain (%v bytes each) with a checksum request: %d bytes, %v; want the %d sent", len(cuts), cuts, n, err, len(payload))
	}
}

// listenUDP7777 is a kernel UDP socket on 10.67.0.2:7777 in h's
// namespace, closed when the test ends.
func listenUDP7777(t *testing.T, h *netns.Host) *net.UDPConn {
	t.Helper()
	var conn *net.UDPConn
	if err := h.Do(func() (err error) {
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 67, 0, 2), Port: 7777})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
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
