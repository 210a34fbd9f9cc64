package xdp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/host"
	"github.com/packetio/packetio/internal/netns"
)

// napiOf reads h's NAPI settings through a sysfs of its own namespace.
func napiOf(t *testing.T, h *netns.Host) (int, time.Duration) {
	t.Helper()
	var d int
	var fl time.Duration
	err := h.Do(func() error {
		return host.InNetnsSysfs(func(root string) (err error) {
			d, fl, err = host.ReadNAPI(root, h.Link)
			return err
		})
	})
	if err != nil {
		t.Fatalf("read NAPI settings of %s: %v", h.Link, err)
	}
	return d, fl
}

// TestNAPITuningIsRestored: a native attach asked to tune sets the veth's
// NAPI deferral while the fleet is open and puts the values back on Close,
// and on an Open that fails after tuning; by default veth is not tuned.
func TestNAPITuningIsRestored(t *testing.T) {
	p := vethPair(t)
	d0, f0 := napiOf(t, p.B)

	f := openIn(t, p.B, WithFilter(filter.MatchEtherType(testEtherType)), WithDriverMode())
	info, _ := f.Info()
	if d, fl := napiOf(t, p.B); d != d0 || fl != f0 || len(info.Tuning) != 0 {
		t.Fatalf("veth tuned by default: %d/%v -> %d/%v, %v", d0, f0, d, fl, info.Tuning)
	}
	f.Close()

	opts := []Option{WithFilter(filter.MatchEtherType(testEtherType)), WithDriverMode(), WithHostTuning(Tuning{NAPIDefer: 3, NAPIFlush: 50 * time.Microsecond, NAPIAllDrivers: true})}
	f = openIn(t, p.B, opts...)
	if d, fl := napiOf(t, p.B); d != 3 || fl != 50*time.Microsecond {
		t.Fatalf("while open: %d/%v, want 3/50us", d, fl)
	}
	info, _ = f.Info()
	t.Logf("%s", info)
	if len(info.Tuning) != 2 {
		t.Errorf("Info.Tuning %v, want the two NAPI changes", info.Tuning)
	}
	f.Close()
	if d, fl := napiOf(t, p.B); d != d0 || fl != f0 {
		t.Fatalf("after Close: %d/%v, want %d/%v", d, fl, d0, f0)
	}

	// An Open that fails after tuning restores too.
	failing := append(opts, withOpenedHook(func(*Fleet) error { return errors.New("injected failure") }))
	err := p.B.Do(func() error {
		_, err := Open(p.B.Link, failing...)
		return err
	})
	if err == nil {
		t.Fatal("Open succeeded through the injected failure")
	}
	if d, fl := napiOf(t, p.B); d != d0 || fl != f0 {
		t.Fatalf("after a failed Open: %d/%v, want %d/%v", d, fl, d0, f0)
	}
	if id := xdpAttached(t, p.B); id != 0 {
		t.Fatalf("program %d left attached", id)
	}
}

// TestMultiBufferJumbo: on a veth with a 9000-byte MTU, 8000-byte frames
// cross both ways as chains of 2048-byte frames, byte for byte.
func TestMultiBufferJumbo(t *testing.T) {
	p := vethPair(t, netns.WithMTU(9000))
	a := openIn(t, p.A, WithFilter(filter.MatchEtherType(testEtherType)), WithMultiBuffer(), WithNeedWakeup()).Socket(0)
	b := openIn(t, p.B, WithFilter(filter.MatchEtherType(testEtherType)), WithMultiBuffer(), WithNeedWakeup()).Socket(0)
	if !a.MultiBuffer() {
		t.Fatal("not bound with XDP_USE_SG")
	}
	for _, dir := range []struct {
		name     string
		from, to *Socket
	}{{"A->B", a, b}, {"B->A", b, a}} {
		var payloads [][]byte
		for i := range 8 {
			payloads = append(payloads, testFrame(make([]byte, 8000), uint32(i), 7000+125*i))
		}
		dir.to.Fill(dir.to.NumFreeFillSlots())
		sent := 0
		for try := 0; sent < len(payloads) && try < 100; try++ {
			n, err := dir.from.SendBatch(payloads[sent:])
			if err != nil {
				t.Fatalf("%s: SendBatch: %v", dir.name, err)
			}
			sent += n
		}
		got := map[uint32][]byte{}
		buf := make([]byte, 9000)
		deadline := time.Now().Add(3 * time.Second)
		for len(got) < sent && time.Now().Before(deadline) {
			if _, err := dir.to.Poll(10 * time.Millisecond); err != nil {
				t.Fatal(err)
			}
			pkts := dir.to.ReceivePackets(256)
			for _, pk := range pkts {
				if len(pk) < 2 {
					t.Errorf("%s: a %d-byte packet in %d descriptor(s)", dir.name, pk.Len(), len(pk))
				}
				n := dir.to.CopyOut(pk, buf)
				if n >= 18 && binary.BigEndian.Uint16(buf[12:]) == testEtherType {
					got[binary.BigEndian.Uint32(buf[14:])] = bytes.Clone(buf[:n])
				}
			}
			dir.to.RecyclePackets(pkts)
			dir.to.Fill(dir.to.NumFreeFillSlots())
		}
		if len(got) != len(payloads) {
			st, _ := dir.to.Stats()
			t.Fatalf("%s: %d of %d jumbo frames arrived (%v)", dir.name, len(got), len(payloads), st)
		}
		for i, pl := range payloads {
			if !bytes.Equal(got[uint32(i)], pl) {
				t.Fatalf("%s: frame %d changed on the way", dir.name, i)
			}
		}
	}
}

// TestSendBatchRefusesWhatDoesNotFit: without multi-buffer a payload
// larger than a frame is refused whole, and with it one longer than 18
// frames; nothing is queued either way.
func TestSendBatchRefusesWhatDoesNotFit(t *testing.T) {
	p := vethPair(t, netns.WithMTU(9000))
	plain := openIn(t, p.A, WithFilter(filter.MatchNone())).Socket(0)
	if n, err := plain.SendBatch([][]byte{make([]byte, 60), make([]byte, 3000)}); n != 0 || !errors.Is(err, ErrBadLength) {
		t.Fatalf("3000 bytes without multi-buffer: %d, %v", n, err)
	}
	mb := openIn(t, p.B, WithFilter(filter.MatchNone()), WithMultiBuffer()).Socket(0)
	if n, err := mb.SendBatch([][]byte{make([]byte, 19*2048)}); n != 0 || !errors.Is(err, ErrBadLength) {
		t.Fatalf("19 frames: %d, %v", n, err)
	}
	if plain.NumTransmitted() != 0 || mb.NumTransmitted() != 0 {
		t.Fatal("something was queued")
	}
}

// TestTxChecksumMetadata: a frame whose UDP checksum field holds only the
// pseudo-header sum, sent with a checksum request in its transmit
// metadata, arrives with a correct checksum: the kernel's UDP socket on
// the far end accepts it (copy mode finishes the sum in software).
func TestTxChecksumMetadata(t *testing.T) {
	p := vethPair(t, netns.WithAddrs(netip.MustParsePrefix("10.66.0.1/24"), netip.MustParsePrefix("10.66.0.2/24")))
	s := openIn(t, p.A, WithFilter(filter.MatchNone()), WithTxMetadata(), WithNeedWakeup()).Socket(0)
	var conn *net.UDPConn
	if err := p.B.Do(func() (err error) {
		conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(10, 66, 0, 2), Port: 7777})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	payload := []byte("checksummed by the kernel, asked in metadata")
	send := func(ask bool) {
		n, err := s.SendFunc(1, func(i int, f []byte) int {
			l := udpFrame(f, p.A.MAC, p.B.MAC, payload)
			if ask {
				if err := (TxMetadata{Flags: TxMetaChecksum, CsumStart: 34, CsumOffset: 6}).Put(s.TxMetaOf(f)); err != nil {
					t.Fatal(err)
				}
			}
			return l
		})
		if err != nil || n != 1 {
			t.Fatalf("SendFunc: %d, %v", n, err)
		}
	}
	// First without the request: the partial sum is a wrong checksum,
	// and the kernel drops the datagram.
	send(false)
	_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	buf := make([]byte, 256)
	if n, err := conn.Read(buf); err == nil {
		t.Fatalf("a datagram with only the pseudo-header sum was accepted: %q", buf[:n])
	}
	send(true)
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := conn.Read(buf)
	if err != nil {
		st, _ := s.Stats()
		t.Fatalf("the checksum-offloaded datagram did not arrive: %v (%v)", err, st)
	}
	if !bytes.Equal(buf[:n], payload) {
		t.Fatalf("got %q", buf[:n])
	}
}

// udpFrame writes an IPv4/UDP frame 10.66.0.1:7776 -> 10.66.0.2:7777 whose
// UDP checksum field holds the pseudo-header sum, not complemented.
func udpFrame(f []byte, src, dst net.HardwareAddr, payload []byte) int {
	copy(f[0:6], dst)
	copy(f[6:12], src)
	binary.BigEndian.PutUint16(f[12:], filter.EtherTypeIPv4)
	ip := f[14:34]
	ulen := 8 + len(payload)
	ip[0], ip[1] = 0x45, 0
	binary.BigEndian.PutUint16(ip[2:], uint16(20+ulen))
	binary.BigEndian.PutUint32(ip[4:], 0x40000000) // id 0, DF
	ip[8], ip[9] = 64, 17
	binary.BigEndian.PutUint16(ip[10:], 0)
	copy(ip[12:16], []byte{10, 66, 0, 1})
	copy(ip[16:20], []byte{10, 66, 0, 2})
	binary.BigEndian.PutUint16(ip[10:], ^fold(sum(ip)))
	u := f[34:]
	binary.BigEndian.PutUint16(u[0:], 7776)
	binary.BigEndian.PutUint16(u[2:], 7777)
	binary.BigEndian.PutUint16(u[4:], uint16(ulen))
	copy(u[8:], payload)
	pseudo := sum(ip[12:20]) + 17 + uint32(ulen)
	binary.BigEndian.PutUint16(u[6:], fold(pseudo))
	return 34 + ulen
}

func sum(b []byte) uint32 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	return s
}

func fold(s uint32) uint16 {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// TestSharedMemoryForeignCompletions: one frame built once in the
// WithSharedMemory extra area is transmitted from two queues; each
// completion reaches WithOnForeignComplete exactly once, and no pool takes
// the frame.
func TestSharedMemoryForeignCompletions(t *testing.T) {
	p := vethPair(t, netns.WithQueues(2))
	var mu sync.Mutex
	completed := map[uint64]int{}
	f := openIn(t, p.A, WithFilter(filter.MatchNone()), WithSharedMemory(64<<10), WithNumFrames(512), WithNeedWakeup(),
		WithOnForeignComplete(func(addr uint64) { mu.Lock(); completed[addr]++; mu.Unlock() }))
	if f.NumQueues() != 2 {
		t.Fatalf("%d queues bound", f.NumQueues())
	}
	info, _ := f.Info()
	if !info.SharedUMEM {
		t.Fatalf("not one UMEM: %s", info)
	}
	base, extra := f.Extra()
	if len(extra) < 64<<10 || &f.Memory()[base] != &extra[0] {
		t.Fatalf("extra area %d bytes at %d", len(extra), base)
	}
	// Two frames in the extra area, one per queue, each sent 10 times.
	a0, a1 := base, base+uint64(info.FrameSize)
	testFrame(f.Memory()[a0:], 1, 64)
	testFrame(f.Memory()[a1:], 2, 64)
	for q, addr := range []uint64{a0, a1} {
		s := f.Socket(q)
		free := s.FreeTxFrames()
		for range 10 {
			if n := s.Transmit([]Desc{{Addr: addr, Len: 64}}); n != 1 {
				t.Fatalf("queue %d refused the shared frame", q)
			}
			for i := 0; i < 1000 && s.NumTransmitted() > 0; i++ {
				s.Complete(16)
				time.Sleep(100 * time.Microsecond)
			}
		}
		if s.FreeTxFrames() != free {
			t.Errorf("queue %d pool %d -> %d: a foreign frame went into it", q, free, s.FreeTxFrames())
		}
		if st, _ := s.Stats(); st.Foreign != 0 || st.Rejected != 0 {
			t.Errorf("queue %d: foreign %d rejected %d", q, st.Foreign, st.Rejected)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if completed[a0] != 10 || completed[a1] != 10 || len(completed) != 2 {
		t.Fatalf("completions reported %v, want 10 each for %d and %d", completed, a0, a1)
	}
}

// TestQueryXSKFeatures asks the kernel about a veth and the loopback
// device.
func TestQueryXSKFeatures(t *testing.T) {
	p := vethPair(t)
	for _, name := range []string{p.B.Link, "lo"} {
		var f XSKFeatures
		err := p.B.Do(func() (err error) {
			f, err = QueryXSKFeatures(name)
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s: %s", name, f)
		if name == "lo" && f.XDP != 0 {
			t.Errorf("lo reports XDP features %#x", f.XDP)
		}
		if name != "lo" && !f.RxSG() {
			t.Errorf("veth does not report rx-sg: %s", f)
		}
	}
}
