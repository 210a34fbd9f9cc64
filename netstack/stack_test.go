package netstack

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/pipe"
)

func TestEchoTCP(t *testing.T) {
	for _, tc := range []struct {
		name, network, listen, dial string
		cfg                         Config
	}{
		{"v4", "tcp4", ":7", "10.0.0.1:7", Config{}},
		{"v6", "tcp6", ":7", "[fd00::1]:7", Config{}},
		{"v4-no-gso-no-gro", "tcp4", ":7", "10.0.0.1:7", Config{NoGSO: true, NoGRO: true}},
		{"v6-no-gso", "tcp6", ":7", "[fd00::1]:7", Config{NoGSO: true}},
		{"v4-small-mtu", "tcp4", ":7", "10.0.0.1:7", Config{MTU: 576, Addr: mustPrefix("10.0.0.1/24")}},
		{"dual-stack-listener-v4-peer", "tcp", ":7", "10.0.0.1:7", Config{}},
		{"dual-stack-listener-v6-peer", "tcp", ":7", "[fd00::1]:7", Config{}},
		{"listen-on-own-address", "tcp", "10.0.0.1:7", "10.0.0.1:7", Config{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfgB := tc.cfg
			if cfgB.Addr.IsValid() {
				cfgB.Addr = mustPrefix("10.0.0.2/24")
			}
			a, b := stackPair(t, tc.cfg, cfgB)
			l, err := a.Listen(tc.network, tc.listen)
			if err != nil {
				t.Fatal(err)
			}
			done := echoServer(t, l)
			c, err := b.Dial(tc.network, tc.dial)
			if err != nil {
				t.Fatal(err)
			}
			echo(t, c, randomBytes(t, 1<<20))
			c.Close()
			l.Close()
			<-done
			checkClean(t, "server", a)
			checkClean(t, "client", b)
			st := b.Stats()
			if !tc.cfg.NoGSO && st.GSOPackets == 0 {
				t.Errorf("client cut no GSO packets: %+v", st)
			}
			if tc.cfg.NoGSO && st.GSOPackets != 0 {
				t.Errorf("NoGSO client cut %d GSO packets", st.GSOPackets)
			}
		})
	}
}

// Many connections over four queues each way: every queue is driven by one
// goroutine at a time (the race detector watches the pipe's rings) and
// replies leave on the queue their flow arrives on.
func TestEchoTCPFourQueues(t *testing.T) {
	a, b := stackPair(t, Config{}, Config{}, pipe.WithQueues(4))
	l, err := a.Listen("tcp", ":80")
	if err != nil {
		t.Fatal(err)
	}
	done := echoServer(t, l)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			addr := "10.0.0.1:80"
			if i%2 == 1 {
				addr = "[fd00::1]:80"
			}
			c, err := b.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			data := randomBytes(t, 256<<10)
			c.SetDeadline(time.Now().Add(30 * time.Second))
			go func() { c.Write(data); c.(interface{ CloseWrite() error }).CloseWrite() }()
			got, err := io.ReadAll(c)
			if err != nil || !bytes.Equal(got, data) {
				t.Errorf("connection %d: %d of %d bytes back, err %v", i, len(got), len(data), err)
			}
		}()
	}
	wg.Wait()
	l.Close()
	<-done
	checkClean(t, "server", a)
	checkClean(t, "client", b)
}

// Lost frames are recovered by TCP, and the stack counts nothing as its
// own fault.
func TestEchoTCPLossyWire(t *testing.T) {
	var n atomic.Int64
	drop := pipe.WithDrop(func(f []byte) bool { return n.Add(1)%97 == 0 })
	a, b := stackPair(t, Config{}, Config{}, drop)
	l, err := a.Listen("tcp4", ":7")
	if err != nil {
		t.Fatal(err)
	}
	done := echoServer(t, l)
	c, err := b.Dial("tcp4", "10.0.0.1:7")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, c, randomBytes(t, 1<<20))
	c.Close()
	l.Close()
	<-done
	if a.Stats().TCPRetransmits+b.Stats().TCPRetransmits == 0 {
		t.Error("frames were dropped but nothing was retransmitted")
	}
}

// Corrupted frames are dropped by the endpoint's checksum check and
// counted; TCP recovers them.
func TestBadChecksumDropped(t *testing.T) {
	checkGoroutines(t)
	da, db := devices(t)
	fa := newFaulty(da)
	fa.rx[0].corruptEvery.Store(50)
	a := newStack(t, fa, Config{Addr: mustPrefix("10.0.0.1/24"), Addr6: mustPrefix("fd00::1/64"), MAC: macA})
	b := newStack(t, db, Config{Addr: mustPrefix("10.0.0.2/24"), Addr6: mustPrefix("fd00::2/64"), MAC: macB})
	echoBothFamilies(t, a, b, 512<<10)
	st := a.Stats()
	if st.RxBadChecksum == 0 {
		t.Errorf("no bad checksums counted: %+v", st)
	}
	if st.TCPChecksumErrors != 0 {
		t.Errorf("the stack saw %d bad TCP checksums the endpoint should have dropped", st.TCPChecksumErrors)
	}
}

// What the device dropped before the stack saw it is in the stack's
// counters, summed over the receive queues.
func TestStatsDeviceDrops(t *testing.T) {
	checkGoroutines(t)
	da, _ := devices(t, pipe.WithQueues(2))
	fa := newFaulty(da)
	a := newStack(t, fa, Config{Addr: mustPrefix("10.0.0.1/24"), MAC: macA})
	if n := a.Stats().RxDeviceDropped; n != 0 {
		t.Fatalf("RxDeviceDropped %d before any drop", n)
	}
	fa.rx[0].dropped.Store(5)
	fa.rx[1].dropped.Store(7)
	if n := a.Stats().RxDeviceDropped; n != 12 {
		t.Fatalf("RxDeviceDropped %d, want 12 (5 on queue 0, 7 on queue 1)", n)
	}
}

func TestUDP(t *testing.T) {
	for _, tc := range []struct{ name, network, listen, dial string }{
		{"v4", "udp4", ":53", "10.0.0.1:53"},
		{"v6", "udp6", ":53", "[fd00::1]:53"},
		{"any-v4", "udp", "10.0.0.1:53", "10.0.0.1:53"},
		{"any-v6", "udp", "[fd00::1]:53", "[fd00::1]:53"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := stackPair(t, Config{}, Config{})
			pc, err := a.ListenPacket(tc.network, tc.listen)
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan struct{})
			go func() {
				defer close(served)
				buf := make([]byte, 65536)
				for {
					n, from, err := pc.ReadFrom(buf)
					if err != nil {
						return
					}
					if _, err := pc.WriteTo(buf[:n], from); err != nil {
						t.Errorf("WriteTo %v: %v", from, err)
						return
					}
				}
			}()
			c, err := b.DialUDP(tc.network, tc.dial)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 65536)
			// Sizes up to what one frame carries: the stack does not
			// fragment-reassemble (fragments are dropped and counted).
			for i, size := range []int{0, 1, 17, 512, 1000, 1200, 1232} {
				msg := randomBytes(t, size)
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := c.Write(msg); err != nil {
					t.Fatalf("datagram %d: %v", i, err)
				}
				n, err := c.Read(buf)
				if err != nil {
					t.Fatalf("datagram %d (%d bytes): %v", i, size, err)
				}
				if !bytes.Equal(buf[:n], msg) {
					t.Fatalf("datagram %d: %d bytes back for %d sent, differ", i, n, size)
				}
			}
			c.Close()
			pc.Close()
			<-served
			checkClean(t, "server", a)
			checkClean(t, "client", b)
		})
	}
}

// A datagram bigger than the MTU goes out in IP fragments, which the
// receiving endpoint drops and counts (it cannot check their checksums).
func TestUDPFragmentsDropped(t *testing.T) {
	a, b := stackPair(t, Config{}, Config{})
	pc, err := a.ListenPacket("udp4", ":9")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	c, err := b.DialUDP("udp4", "10.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(make([]byte, 4000)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "fragments counted", func() bool { return a.Stats().RxFragments > 0 })
	pc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, _, err := pc.ReadFrom(make([]byte, 8000)); err == nil {
		t.Errorf("a fragmented datagram of %d bytes was delivered", n)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestVLAN(t *testing.T) {
	t.Run("same", func(t *testing.T) {
		a, b := stackPair(t, Config{VLAN: 7}, Config{VLAN: 7})
		echoBothFamilies(t, a, b, 256<<10)
		checkClean(t, "server", a)
		checkClean(t, "client", b)
	})
	for _, tc := range []struct {
		name string
		a, b uint16
	}{{"different", 7, 8}, {"tagged-untagged", 7, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := stackPair(t, Config{VLAN: tc.a}, Config{VLAN: tc.b})
			l, err := a.Listen("tcp4", ":7")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			c, err := b.DialContext(ctx, "tcp4", "10.0.0.1:7")
			if err == nil {
				c.Close()
				t.Fatal("connected across VLANs")
			}
			t.Logf("dial: %v; client %+v", err, b.Stats())
			waitFor(t, "a frame counted as the wrong VLAN", func() bool { return a.Stats().RxWrongVLAN > 0 })
		})
	}
}

func TestCloseSemantics(t *testing.T) {
	a, b := stackPair(t, Config{}, Config{})
	l, err := a.Listen("tcp4", ":7")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := l.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	c, err := b.Dial("tcp4", "10.0.0.1:7")
	if err != nil {
		t.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		t.Fatal("accept failed")
	}

	// A deadline in the past: os.ErrDeadlineExceeded, a timeout.
	c.SetReadDeadline(time.Now().Add(-time.Second))
	_, err = c.Read(make([]byte, 1))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read past deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Errorf("read past deadline: %v is not a net.Error timeout", err)
	}
	c.SetReadDeadline(time.Time{})

	// Half close: the peer reads EOF and can still answer.
	if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("read after peer's CloseWrite: %v, want io.EOF", err)
	}
	if _, err := s.Write([]byte("x")); err != nil {
		t.Errorf("write after peer's CloseWrite: %v", err)
	}
	if n, err := io.ReadFull(c, make([]byte, 1)); n != 1 || err != nil {
		t.Errorf("read after own CloseWrite: %d, %v", n, err)
	}

	// Operations on a closed conn: net.ErrClosed.
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	for name, err := range map[string]error{
		"second Close": c.Close(),
		"Read":         second(c.Read(make([]byte, 1))),
		"Write":        second(c.Write([]byte("x"))),
		"SetDeadline":  c.SetDeadline(time.Now()),
	} {
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("%s after Close: %v, want net.ErrClosed", name, err)
		}
	}
	s.Close()

	// A listener: Accept blocked during Close, and after it.
	errc := make(chan error, 1)
	go func() { _, err := l.Accept(); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	l.Close()
	if err := <-errc; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept blocked across Close: %v, want net.ErrClosed", err)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
	if err := l.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second listener Close: %v, want net.ErrClosed", err)
	}

	// Refused and unreachable dials.
	if _, err := b.Dial("tcp4", "10.0.0.1:8"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial to a closed port: %v, want ECONNREFUSED", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := b.DialContext(ctx, "tcp4", "10.0.0.99:7"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("dial to nobody with a 100 ms context: %v, want context.DeadlineExceeded", err)
	}
	if _, err := b.Dial("tcp4", "192.0.2.1:7"); err == nil {
		t.Error("dial off-prefix with no gateway succeeded")
	}
}

func second(_ int, err error) error { return err }

// Close resets connections, wakes blocked calls with net.ErrClosed, leaves
// the device open and lets another stack take it.
func TestStackClose(t *testing.T) {
	checkGoroutines(t)
	da, db := devices(t)
	cfgA := Config{Addr: mustPrefix("10.0.0.1/24"), MAC: macA}
	a, err := New(da, cfgA)
	if err != nil {
		t.Fatal(err)
	}
	b := newStack(t, db, Config{Addr: mustPrefix("10.0.0.2/24"), MAC: macB})

	if _, err := New(da, cfgA); err == nil || !errors.Is(err, packetio.ErrUnsupported) {
		t.Errorf("a second stack on one device: %v, want a refusal", err)
	}

	l, err := a.Listen("tcp4", ":7")
	if err != nil {
		t.Fatal(err)
	}
	acc := make(chan net.Conn, 1)
	go func() { c, _ := l.Accept(); acc <- c }()
	c, err := b.Dial("tcp4", "10.0.0.1:7")
	if err != nil {
		t.Fatal(err)
	}
	s := <-acc
	pc, err := a.ListenPacket("udp4", ":9")
	if err != nil {
		t.Fatal(err)
	}

	blocked := make(chan error, 3)
	go func() { _, err := l.Accept(); blocked <- err }()
	go func() { _, err := s.Read(make([]byte, 1)); blocked <- err }()
	go func() { _, _, err := pc.ReadFrom(make([]byte, 1)); blocked <- err }()
	time.Sleep(20 * time.Millisecond)

	select {
	case <-a.Done():
		t.Fatal("Done closed before Close")
	default:
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := <-blocked; !errors.Is(err, net.ErrClosed) {
			t.Errorf("blocked call across Stack.Close: %v, want net.ErrClosed", err)
		}
	}
	<-a.Done()
	if !errors.Is(a.Err(), net.ErrClosed) {
		t.Errorf("Err after Close: %v", a.Err())
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := a.Listen("tcp4", ":8"); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Listen after Close: %v", err)
	}
	if _, err := a.Dial("tcp4", "10.0.0.2:8"); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Dial after Close: %v", err)
	}
	if _, err := a.ListenPacket("udp4", ":8"); !errors.Is(err, net.ErrClosed) {
		t.Errorf("ListenPacket after Close: %v", err)
	}

	// The peer's connection was reset.
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("peer read after Stack.Close: %v, want ECONNRESET", err)
	}
	c.Close()

	// The device is still open: a new stack on it works.
	if err := da.TxQueue(0).Err(); err != nil {
		t.Fatalf("device closed by Stack.Close: %v", err)
	}
	a2 := newStack(t, da, cfgA)
	l2, err := a2.Listen("tcp4", ":7")
	if err != nil {
		t.Fatal(err)
	}
	done := echoServer(t, l2)
	c2, err := b.Dial("tcp4", "10.0.0.1:7")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, c2, []byte("after a restart"))
	c2.Close()
	l2.Close()
	<-done
}

// A device closed under the stack (or a queue that fails) stops it: Done
// closes and Err says why.
func TestDeviceFailure(t *testing.T) {
	t.Run("device closed", func(t *testing.T) {
		checkGoroutines(t)
		da, _ := devices(t)
		a := newStack(t, da, Config{Addr: mustPrefix("10.0.0.1/24")})
		da.Close()
		select {
		case <-a.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Done not closed after the device closed")
		}
		if !errors.Is(a.Err(), packetio.ErrClosed) {
			t.Errorf("Err: %v, want packetio.ErrClosed", a.Err())
		}
	})
	t.Run("transmit queue failed", func(t *testing.T) {
		checkGoroutines(t)
		da, db := devices(t)
		fa := newFaulty(da)
		a := newStack(t, fa, Config{Addr: mustPrefix("10.0.0.1/24"), MAC: macA})
		newStack(t, db, Config{Addr: mustPrefix("10.0.0.2/24"), MAC: macB})
		fa.tx[0].failed.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		a.DialContext(ctx, "tcp4", "10.0.0.2:7")
		select {
		case <-a.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Done not closed after the queue failed")
		}
		if !errors.Is(a.Err(), packetio.ErrQueueFailed) {
			t.Errorf("Err: %v, want packetio.ErrQueueFailed", a.Err())
		}
	})
}

// A transmit queue that stays full is waited on, then dropped from and
// counted; a queue that takes part of a segmented packet is counted too.
// TCP recovers both, and the stack does not fail.
func TestFullQueue(t *testing.T) {
	checkGoroutines(t)
	da, db := devices(t)
	fb := newFaulty(db)
	a := newStack(t, da, Config{Addr: mustPrefix("10.0.0.1/24"), MAC: macA})
	b := newStack(t, fb, Config{Addr: mustPrefix("10.0.0.2/24"), MAC: macB, TxWait: time.Millisecond})
	l, err := a.Listen("tcp4", ":7")
	if err != nil {
		t.Fatal(err)
	}
	done := echoServer(t, l)
	c, err := b.Dial("tcp4", "10.0.0.1:7")
	if err != nil {
		t.Fatal(err)
	}
	// Forty rounds of a queue that is full for 3 ms, then takes only part
	// of the next segmented packet; then the queue behaves again and the
	// transfer must finish. The first partial transmit is armed before the
	// transfer starts, so that the opening burst (a GSO packet of the
	// initial window, ten segments) meets it however fast the transfer
	// then runs: armed only in the rounds, it was missed whenever loss
	// recovery kept every packet at three segments or fewer.
	// The queue is full from the start too, and stays full until the
	// stack has waited on it once (at most 2 s): toggled on a timer
	// alone, a transfer that ran between the full periods (1 run in 30
	// under the race detector) counted drops but no waits.
	fb.tx[0].partial.Store(3)
	fb.tx[0].full.Store(true)
	stop := make(chan struct{})
	stalls := make(chan struct{})
	go func() {
		defer close(stalls)
		defer fb.tx[0].full.Store(false)
		for start := time.Now(); b.Stats().TxWaits == 0 && time.Since(start) < 2*time.Second; {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
		for i := 0; i < 80; i++ {
			select {
			case <-stop:
				return
			case <-time.After(3 * time.Millisecond):
			}
			if i%2 == 0 {
				fb.tx[0].full.Store(true)
			} else {
				fb.tx[0].full.Store(false)
				fb.tx[0].partial.Store(3)
			}
		}
	}()
	echo(t, c, randomBytes(t, 2<<20))
	close(stop)
	<-stalls
	c.Close()
	l.Close()
	<-done
	st := b.Stats()
	if st.TxWaits == 0 || st.TxDropped == 0 {
		t.Errorf("a stalled queue caused no waits or drops: %+v", st)
	}
	if st.TxPartial == 0 {
		t.Errorf("no partial transmits counted: %+v", st)
	}
	select {
	case <-b.Done():
		t.Errorf("a full queue stopped the stack: %v", b.Err())
	default:
	}
	t.Logf("waits %d, dropped %d, partial %d, retransmits %d", st.TxWaits, st.TxDropped, st.TxPartial, st.TCPRetransmits)
}

func TestConfigRefusals(t *testing.T) {
	v4 := mustPrefix("192.0.2.10/24")
	mac := net.HardwareAddr{2, 0, 0, 0, 0, 1}
	for _, tc := range []struct {
		name, field string
		cfg         Config
	}{
		{"no address", "Addr", Config{}},
		{"unspecified", "Addr", Config{Addr: mustPrefix("0.0.0.0/0")}},
		{"unspecified v6", "Addr", Config{Addr: mustPrefix("::/0")}},
		{"loopback", "Addr", Config{Addr: mustPrefix("127.0.0.1/8")}},
		{"loopback v6", "Addr", Config{Addr: mustPrefix("::1/128")}},
		{"multicast", "Addr", Config{Addr: mustPrefix("224.0.0.1/4")}},
		{"multicast v6", "Addr", Config{Addr: mustPrefix("ff02::1/64")}},
		{"network address", "Addr", Config{Addr: mustPrefix("192.0.2.0/24")}},
		{"broadcast address", "Addr", Config{Addr: mustPrefix("192.0.2.255/24")}},
		{"limited broadcast", "Addr", Config{Addr: mustPrefix("255.255.255.255/32")}},
		{"v4-mapped", "Addr", Config{Addr: mustPrefix("::ffff:192.0.2.1/120")}},
		{"Addr6 with v6 Addr", "Addr6", Config{Addr: mustPrefix("fd00::1/64"), Addr6: mustPrefix("fd00::2/64")}},
		{"Addr6 not v6", "Addr6", Config{Addr: v4, Addr6: mustPrefix("192.0.2.11/24")}},
		{"Addr6 multicast", "Addr6", Config{Addr: v4, Addr6: mustPrefix("ff02::1/64")}},
		{"group MAC", "MAC", Config{Addr: v4, MAC: net.HardwareAddr{1, 0, 0, 0, 0, 1}}},
		{"broadcast MAC", "MAC", Config{Addr: v4, MAC: net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}},
		{"zero MAC", "MAC", Config{Addr: v4, MAC: net.HardwareAddr{0, 0, 0, 0, 0, 0}}},
		{"short MAC", "MAC", Config{Addr: v4, MAC: net.HardwareAddr{2, 0, 0}}},
		{"negative MTU", "MTU", Config{Addr: v4, MTU: -1}},
		{"tiny MTU", "MTU", Config{Addr: v4, MTU: 67}},
		{"MTU over the frame", "MTU", Config{Addr: v4, MTU: 2048}},
		{"v6 MTU below 1280", "MTU", Config{Addr: mustPrefix("fd00::1/64"), MTU: 1279}},
		{"dual MTU below 1280", "MTU", Config{Addr: v4, Addr6: mustPrefix("fd00::1/64"), MTU: 1000}},
		{"VLAN 4095", "VLAN", Config{Addr: v4, VLAN: 4095}},
		{"MTU over the frame with VLAN", "MTU", Config{Addr: v4, VLAN: 5, MTU: 2048 - 14}},
		{"gateway off prefix", "Gateway", Config{Addr: v4, Gateway: netip.MustParseAddr("198.51.100.1")}},
		{"gateway is self", "Gateway", Config{Addr: v4, Gateway: netip.MustParseAddr("192.0.2.10")}},
		{"gateway wrong family", "Gateway", Config{Addr: v4, Gateway: netip.MustParseAddr("fd00::1")}},
		{"Gateway6 without Addr6", "Gateway6", Config{Addr: v4, Gateway6: netip.MustParseAddr("fd00::1")}},
		{"Gateway6 off prefix", "Gateway6", Config{Addr: v4, Addr6: mustPrefix("fd00::1/64"), Gateway6: netip.MustParseAddr("fd01::1")}},
		{"neighbor v6 on v4 stack", "Neighbors", Config{Addr: v4, Neighbors: map[netip.Addr]net.HardwareAddr{netip.MustParseAddr("fd00::1"): mac}}},
		{"neighbor v4 on v6 stack", "Neighbors", Config{Addr: mustPrefix("fd00::1/64"), Neighbors: map[netip.Addr]net.HardwareAddr{netip.MustParseAddr("192.0.2.1"): mac}}},
		{"neighbor multicast", "Neighbors", Config{Addr: v4, Neighbors: map[netip.Addr]net.HardwareAddr{netip.MustParseAddr("224.0.0.1"): mac}}},
		{"neighbor group MAC", "Neighbors", Config{Addr: v4, Neighbors: map[netip.Addr]net.HardwareAddr{netip.MustParseAddr("192.0.2.1"): {1, 2, 3, 4, 5, 6}}}},
		{"neighbor zero address", "Neighbors", Config{Addr: v4, Neighbors: map[netip.Addr]net.HardwareAddr{{}: mac}}},
		{"negative send buffer", "SendBufferSize", Config{Addr: v4, SendBufferSize: -1}},
		{"tiny receive buffer", "ReceiveBufferSize", Config{Addr: v4, ReceiveBufferSize: 100}},
		{"huge send buffer", "SendBufferSize", Config{Addr: v4, SendBufferSize: 1 << 30}},
		{"negative TxWait", "TxWait", Config{Addr: v4, TxWait: -time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			da, _ := devices(t)
			s, err := New(da, tc.cfg)
			if err == nil {
				s.Close()
				t.Fatalf("New accepted %+v", tc.cfg)
			}
			if !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("error %v does not wrap ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Errorf("error %q does not name %s", err, tc.field)
			}
			// A refusal leaves the device free for a good config.
			s, err = New(da, Config{Addr: v4})
			if err != nil {
				t.Fatalf("New after a refusal: %v", err)
			}
			s.Close()
		})
	}
}

func TestDeviceRefusals(t *testing.T) {
	if _, err := New(nil, Config{Addr: mustPrefix("192.0.2.10/24")}); !errors.Is(err, packetio.ErrUnsupported) {
		t.Errorf("nil device: %v", err)
	}
	for _, tc := range []struct {
		name       string
		noRx, noTx bool
	}{{"no receive queue", true, false}, {"no transmit queue", false, true}} {
		da, _ := devices(t)
		f := newFaulty(da)
		f.noRx, f.noTx = tc.noRx, tc.noTx
		if _, err := New(f, Config{Addr: mustPrefix("192.0.2.10/24")}); !errors.Is(err, packetio.ErrUnsupported) {
			t.Errorf("%s: %v, want packetio.ErrUnsupported", tc.name, err)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	checkGoroutines(t)
	da, _ := devices(t, pipe.WithFrameSize(1024))
	s := newStack(t, da, Config{Addr: mustPrefix("192.0.2.10/24")})
	if got := s.MTU(); got != 1024-14 {
		t.Errorf("MTU on 1024-byte frames: %d, want %d", got, 1024-14)
	}
	mac := s.MAC()
	if len(mac) != 6 || mac[0]&1 != 0 || mac[0]&2 == 0 {
		t.Errorf("picked MAC %s is not unicast and locally administered", mac)
	}
	db, _ := devices(t)
	s2 := newStack(t, db, Config{Addr: mustPrefix("192.0.2.10/24"), VLAN: 9})
	if s2.MTU() != 1500 {
		t.Errorf("default MTU on 2048-byte frames: %d, want 1500", s2.MTU())
	}
}

func TestAddressErrors(t *testing.T) {
	a, _ := stackPair(t, Config{Addr: mustPrefix("10.0.0.1/24")}, Config{})
	for _, tc := range []struct {
		op, network, addr string
	}{
		{"listen", "udp6", ":7"},
		{"listen", "tcp6", ":7"},
		{"listen", "tcp4", "[fd00::1]:7"},
		{"listen", "tcp", "localhost:7"},
		{"listen", "tcp", "10.0.0.1:http"},
		{"listen", "tcp", "10.0.0.1"},
		{"dial", "tcp", ":7"},
		{"dial", "tcp", "10.0.0.2:0"},
		{"dial", "tcp", "0.0.0.0:7"},
		{"dial", "tcp6", "[fd00::2]:7"},
		{"dial", "udp6", "[fd00::2]:7"},
		{"dial", "ip", "10.0.0.2:7"},
	} {
		var err error
		switch {
		case tc.op == "listen" && strings.HasPrefix(tc.network, "udp"):
			_, err = a.ListenPacket(tc.network, tc.addr)
		case tc.op == "listen":
			_, err = a.Listen(tc.network, tc.addr)
		case strings.HasPrefix(tc.network, "udp"):
			_, err = a.DialUDP(tc.network, tc.addr)
		default:
			_, err = a.Dial(tc.network, tc.addr)
		}
		if err == nil {
			t.Errorf("%s %s %q succeeded", tc.op, tc.network, tc.addr)
			continue
		}
		var oe *net.OpError
		if !errors.As(err, &oe) {
			t.Errorf("%s %s %q: %v is not a *net.OpError", tc.op, tc.network, tc.addr, err)
		}
	}
	l, err := a.Listen("tcp4", ":7")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := a.Listen("tcp4", ":7"); !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("second listener on a port: %v, want EADDRINUSE", err)
	}
	if got := l.Addr().String(); !strings.HasSuffix(got, ":7") {
		t.Errorf("listener address %s", got)
	}
}

// Close while frames keep arriving: gVisor waits for link endpoints while
// holding a lock that delivering a packet needs, so the receive goroutines
// must not be waited for there (this deadlocked once).
func TestCloseUnderTraffic(t *testing.T) {
	checkGoroutines(t)
	da, db := devices(t)
	b := newStack(t, db, Config{Addr: mustPrefix("10.0.0.2/24"), MAC: macB})
	c, err := b.DialUDP("udp4", "10.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop := make(chan struct{})
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		msg := make([]byte, 100)
		for {
			select {
			case <-stop:
				return
			default:
			}
			c.Write(msg)
		}
	}()
	defer func() { close(stop); <-sent }()
	for i := range 100 {
		a, err := New(da, Config{Addr: mustPrefix("10.0.0.1/24"), MAC: macA})
		if err != nil {
			t.Fatal(err)
		}
		pc, err := a.ListenPacket("udp4", ":9")
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, "traffic", func() bool { return a.Stats().RxPackets > 10 })
		closed := make(chan struct{})
		go func() { a.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: Close under traffic did not return", i)
		}
		pc.Close()
	}
}

// Over four queues, a connection's replies leave on the queue its packets
// arrive on (pipe lanes join transmit queue i to the peer's receive queue
// i). Neighbours are pinned so no ARP frame muddies the counts.
func TestRepliesFollowArrivalQueue(t *testing.T) {
	pin := func(ip string, mac net.HardwareAddr) map[netip.Addr]net.HardwareAddr {
		return map[netip.Addr]net.HardwareAddr{netip.MustParseAddr(ip): mac}
	}
	checkGoroutines(t)
	da, db := devices(t, pipe.WithQueues(4))
	a := newStack(t, da, Config{Addr: mustPrefix("10.0.0.1/24"), MAC: macA, Neighbors: pin("10.0.0.2", macB)})
	b := newStack(t, db, Config{Addr: mustPrefix("10.0.0.2/24"), MAC: macB, Neighbors: pin("10.0.0.1", macA)})
	l, err := a.Listen("tcp4", ":7")
	if err != nil {
		t.Fatal(err)
	}
	done := echoServer(t, l)
	defer func() { l.Close(); <-done }()
	counts := func() (rx, tx [4]uint64) {
		for i := range 4 {
			r, _ := da.RxQueue(i).Stats()
			w, _ := da.TxQueue(i).Stats()
			rx[i], tx[i] = r.Packets, w.Packets
		}
		return
	}
	for conn := range 6 {
		rx0, tx0 := counts()
		c, err := b.Dial("tcp4", "10.0.0.1:7")
		if err != nil {
			t.Fatal(err)
		}
		echo(t, c, randomBytes(t, 64<<10))
		c.Close()
		time.Sleep(20 * time.Millisecond) // the last ACKs
		rx1, tx1 := counts()
		for i := range 4 {
			got, sent := rx1[i]-rx0[i] > 0, tx1[i]-tx0[i] > 0
			if got != sent {
				t.Errorf("connection %d: queue %d received %d and sent %d frames; replies left on another queue",
					conn, i, rx1[i]-rx0[i], tx1[i]-tx0[i])
			}
		}
	}
}
