package xdp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/host"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// testEtherType marks the frames the tests send, so nothing the kernel
// sends on its own (ND, MLD) is counted.
const testEtherType = 0x88b5

// vethPair makes two namespaces joined by a veth pair, for a test.
func vethPair(t *testing.T, opts ...netns.Option) *netns.Pair {
	t.Helper()
	testenv.NeedBPF(t)
	return netns.New(t, opts...)
}

// openIn opens a fleet on h's interface from inside h's namespace.
func openIn(t *testing.T, h *netns.Host, opts ...Option) *Fleet {
	t.Helper()
	var f *Fleet
	err := h.Do(func() error {
		var err error
		f, err = Open(h.Link, opts...)
		return err
	})
	if err != nil {
		t.Fatalf("open %s: %v", h.Link, err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return f
}

// testFrame writes frame seq of n bytes: broadcast, the test EtherType, the
// sequence number, then a pattern of it.
func testFrame(b []byte, seq uint32, n int) []byte {
	b = b[:n]
	copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(b[12:], testEtherType)
	binary.BigEndian.PutUint32(b[14:], seq)
	for i := 18; i < n; i++ {
		b[i] = byte(seq) + byte(i)
	}
	return b
}

// rawSender is an AF_PACKET socket on h's interface.
type rawSender struct {
	fd int
	sa unix.SockaddrLinklayer
}

func newRawSender(t *testing.T, h *netns.Host) *rawSender {
	t.Helper()
	s := &rawSender{fd: -1, sa: unix.SockaddrLinklayer{Ifindex: h.Index, Halen: 6}}
	var err error
	if s.fd, err = h.PacketSocket(); err != nil {
		t.Fatalf("AF_PACKET socket: %v", err)
	}
	t.Cleanup(func() { unix.Close(s.fd) })
	return s
}

func (s *rawSender) send(t *testing.T, frame []byte) {
	t.Helper()
	for range 100 {
		err := unix.Sendto(s.fd, frame, 0, &s.sa)
		if err == nil {
			return
		}
		if err != unix.ENOBUFS && err != unix.EAGAIN {
			t.Fatalf("send: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("send: the interface stayed busy")
}

// receiveTest collects test frames from every socket of f until want have
// arrived or timeout passes, and returns them by sequence number.
func receiveTest(t *testing.T, f *Fleet, want int, timeout time.Duration) map[uint32][]byte {
	t.Helper()
	got := map[uint32][]byte{}
	deadline := time.Now().Add(timeout)
	for len(got) < want && time.Now().Before(deadline) {
		for _, s := range f.Sockets() {
			s.Fill(s.NumFreeFillSlots())
			if _, err := s.Poll(10 * time.Millisecond); err != nil {
				t.Fatalf("poll: %v", err)
			}
			descs := s.Receive(256)
			for _, d := range descs {
				b := s.GetFrame(d)
				if len(b) >= 18 && binary.BigEndian.Uint16(b[12:]) == testEtherType {
					got[binary.BigEndian.Uint32(b[14:])] = bytes.Clone(b)
				}
			}
			s.Recycle(descs)
		}
	}
	return got
}

// TestLongPacketsNamed: where the link carries packets longer than a
// receive frame holds and packets may not span frames, Open says what
// becomes of them in Info().Decisions, and the kernel's drop of one is
// counted; where they fit, or WithMultiBuffer takes them, it says nothing.
func TestLongPacketsNamed(t *testing.T) {
	const said = "the kernel drops longer ones"
	for _, tc := range []struct {
		name string
		mtu  int
		opts []Option
		want string // "" for no such decision
	}{
		{"MTU 1500", 1500, nil, ""},
		{"MTU 1900", 1900, nil, "up to 1918 bytes (its MTU, the Ethernet header and a VLAN tag) and a frame holds 1792 (2048-byte frames less the kernel's 256-byte headroom): the kernel drops longer ones, counted in Stats (rx_dropped); WithMultiBuffer, or WithFrameSize(4096), takes them"},
		{"MTU 1900, stamps", 1900, []Option{WithRxTimestamps()}, "a frame holds 1776 (2048-byte frames less the kernel's 256-byte headroom and the 16-byte stamp)"},
		{"MTU 1900, multi-buffer", 1900, []Option{WithMultiBuffer()}, ""},
		{"MTU 1900, 4096-byte frames", 1900, []Option{WithFrameSize(4096)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := vethPair(t, netns.WithMTU(tc.mtu))
			f := openIn(t, p.B, append([]Option{WithFilter(filter.MatchEtherType(testEtherType))}, tc.opts...)...)
			in, err := f.Info()
			if err != nil {
				t.Fatal(err)
			}
			var got string
			for _, d := range in.Decisions {
				if strings.Contains(d, said) {
					got = d
				}
			}
			switch {
			case tc.want == "" && got != "":
				t.Errorf("Info().Decisions says %q, where every packet fits", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("Info().Decisions %q: want one saying %q", in.Decisions, tc.want)
			}
			if tc.want == "" {
				return
			}
			// What it says happens: a 1900-byte packet is dropped, and counted.
			newRawSender(t, p.A).send(t, testFrame(make([]byte, 1900), 1, 1900))
			deadline := time.Now().Add(2 * time.Second)
			for {
				st, err := f.Stats()
				if err != nil {
					t.Fatal(err)
				}
				if st.RxDropped == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("a 1900-byte packet: kernel rx_dropped %d, want 1", st.RxDropped)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestTxBudgetSummary: Info reports the least budget of the sockets that
// transmit in copy mode, and the kernel's answer where one kept its 32.
func TestTxBudgetSummary(t *testing.T) {
	sock := func(budget int, zeroCopy, transmits bool, kept error) *Socket {
		s := &Socket{zeroCopy: zeroCopy}
		s.t.budget, s.t.budgetKept = budget, kept
		if transmits {
			s.t.ring.ents = make([]unix.XDPDesc, 1)
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		socks []*Socket
		want  int
		kept  error
	}{
		{"none", nil, 0, nil},
		{"raised", []*Socket{sock(2048, false, true, nil), sock(2048, false, true, nil)}, 2048, nil},
		{"one kept", []*Socket{sock(2048, false, true, nil), sock(32, false, true, unix.ENOPROTOOPT)}, 32, unix.ENOPROTOOPT},
		{"zero-copy and receive-only sockets have none", []*Socket{sock(32, true, true, nil), sock(32, false, false, nil), sock(512, false, true, nil)}, 512, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, kept := txBudget(tc.socks); got != tc.want || kept != tc.kept {
				t.Errorf("txBudget = %d, %v; want %d, %v", got, kept, tc.want, tc.kept)
			}
		})
	}
}

// TestTxBudgetInInfo: Open raises each copy-mode socket's transmit
// budget to its transmit ring, and Info says what the sockets have: the
// ring at the defaults (2048 transmit frames) and with rings of 256, none
// for sockets that do not transmit.
func TestTxBudgetInInfo(t *testing.T) {
	p := vethPair(t)
	for _, tc := range []struct {
		name string
		opt  Option
		want int
	}{
		{"defaults", nil, DefaultNumFrames / 2},
		{"rings of 256", WithRingSize(256), 256},
		{"receive only", WithRingSizes(256, 0, 256, 0), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := openIn(t, p.B, WithFilter(filter.MatchEtherType(testEtherType)), tc.opt)
			in, err := f.Info()
			if err != nil {
				t.Fatal(err)
			}
			if in.TxBudget != tc.want {
				t.Errorf("Info().TxBudget %d, want %d (%s)", in.TxBudget, tc.want, in)
			}
			for _, d := range in.Decisions {
				if strings.Contains(d, "budget") {
					t.Errorf("Info().Decisions says the budget was kept: %q", d)
				}
			}
			f.Close()
		})
	}
}

// TestVethReceive: frames sent from the other namespace arrive through the
// filter, byte for byte, in every mode the veth offers.
func TestVethReceive(t *testing.T) {
	for _, mode := range []struct {
		name string
		opt  Option
		want string
	}{
		{"auto", nil, "native"},
		{"generic", WithGenericMode(), "generic"},
		{"native", WithDriverMode(), "native"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			p := vethPair(t)
			f := openIn(t, p.B, WithFilter(filter.MatchEtherType(testEtherType)), WithNeedWakeup(), mode.opt)
			info, _ := f.Info()
			t.Logf("%s", info)
			if info.Mode != mode.want {
				t.Errorf("mode %q, want %q", info.Mode, mode.want)
			}
			if info.ZeroCopy {
				t.Errorf("veth granted zero-copy?")
			}
			sent := sendTestFrames(t, p.A, 200, 1400)
			sameFrames(t, f, receiveTest(t, f, len(sent), 3*time.Second), sent)
		})
	}
}

// sendTestFrames sends n test frames from h, seq of 60+seq×7%span bytes,
// and returns them by sequence number.
func sendTestFrames(t *testing.T, h *netns.Host, n uint32, span int) map[uint32][]byte {
	t.Helper()
	tx := newRawSender(t, h)
	sent := map[uint32][]byte{}
	buf := make([]byte, 2048)
	for seq := range n {
		fr := testFrame(buf, seq, 60+int(seq)*7%span)
		sent[seq] = bytes.Clone(fr)
		tx.send(t, fr)
	}
	return sent
}

// sameFrames fails t unless got holds every frame of sent, byte for byte.
func sameFrames(t *testing.T, f *Fleet, got, sent map[uint32][]byte) {
	t.Helper()
	if len(got) != len(sent) {
		st, _ := f.Stats()
		t.Fatalf("received %d of %d frames (%v)", len(got), len(sent), st)
	}
	for seq, b := range sent {
		if !bytes.Equal(got[seq], b) {
			t.Fatalf("frame %d changed on the way", seq)
		}
	}
}

// xdpAttached reports the id of the XDP program on h's interface, 0 for
// none.
func xdpAttached(t *testing.T, h *netns.Host) uint32 {
	t.Helper()
	var id uint32
	err := h.Do(func() error {
		lk, err := netlink.LinkByName(h.Link)
		if err != nil {
			return err
		}
		if x := lk.Attrs().Xdp; x != nil && x.Attached {
			id = x.ProgId
		}
		return nil
	})
	if err != nil {
		t.Fatalf("look up %s: %v", h.Link, err)
	}
	return id
}

// sendAll transmits frames first..first+n-1 through SendFunc, waiting out
// back-pressure, and returns the frames sent by sequence.
func sendAll(t *testing.T, s *Socket, first uint32, n int, size func(seq uint32) int) map[uint32][]byte {
	t.Helper()
	sent := map[uint32][]byte{}
	seq := first
	deadline := time.Now().Add(5 * time.Second)
	for len(sent) < n && time.Now().Before(deadline) {
		k, err := s.SendFunc(min(64, n-len(sent)), func(i int, frame []byte) int {
			fr := testFrame(frame, seq+uint32(i), size(seq+uint32(i)))
			return len(fr)
		})
		if err != nil {
			t.Fatalf("SendFunc: %v", err)
		}
		for i := range k {
			b := make([]byte, 2048)
			sent[seq+uint32(i)] = testFrame(b, seq+uint32(i), size(seq+uint32(i)))
		}
		seq += uint32(k)
		if k == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	return sent
}

// settle completes until the kernel holds no frame or a second passes.
func settle(s *Socket) {
	for i := 0; i < 1000 && s.NumTransmitted() > 0; i++ {
		s.Complete(1 << 20)
		if s.NumTransmitted() > 0 {
			_ = s.Kick()
			time.Sleep(time.Millisecond)
		}
	}
}

// TestVethTransmit: frames built with SendFunc cross the veth byte for
// byte, in generic and native copy mode, with and without need-wakeup, and
// every frame comes home to the pool.
func TestVethTransmit(t *testing.T) {
	for _, mode := range []struct {
		name string
		opt  Option
	}{{"generic", WithGenericMode()}, {"native", WithDriverMode()}} {
		for _, nw := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/needwakeup=%v", mode.name, nw), func(t *testing.T) {
				p := vethPair(t)
				// Enough receive frames for all 3000 (receiveTest does not recycle).
				rx := openIn(t, p.B, WithFilter(filter.MatchEtherType(testEtherType)), WithNeedWakeup(), WithNumFrames(8192))
				opts := []Option{WithFilter(filter.MatchNone()), mode.opt, WithRingSize(256), WithNumFrames(1024)}
				if nw {
					opts = append(opts, WithNeedWakeup())
				}
				tx := openIn(t, p.A, opts...).Socket(0)
				free := tx.FreeTxFrames()
				sent := sendAll(t, tx, 0, 3000, func(seq uint32) int { return 60 + int(seq*13)%1440 })
				got := receiveTest(t, rx, len(sent), 5*time.Second)
				settle(tx)
				st, _ := tx.Stats()
				t.Logf("%v", st)
				if len(got) != len(sent) {
					t.Fatalf("received %d of %d", len(got), len(sent))
				}
				for seq, b := range sent {
					if !bytes.Equal(got[seq], b) {
						t.Fatalf("frame %d changed on the way", seq)
					}
				}
				if st.Kicks == 0 {
					t.Error("copy mode transmitted without a kick")
				}
				if st.Transmitted != uint64(len(sent)) || st.Completed != st.Transmitted {
					t.Errorf("transmitted %d completed %d, sent %d", st.Transmitted, st.Completed, len(sent))
				}
				if tx.FreeTxFrames() != free || st.Rejected != 0 {
					t.Errorf("transmit pool %d -> %d, %d rejected", free, tx.FreeTxFrames(), st.Rejected)
				}
			})
		}
	}
}

// TestFullRingDoesNotDeadlock: in copy mode the kernel drains the
// transmit ring only inside a system call. Fill the ring with no kick,
// then keep sending: SendFunc must kick on the full ring and everything
// must arrive.
func TestFullRingDoesNotDeadlock(t *testing.T) {
	p := vethPair(t)
	rx := openIn(t, p.B, WithFilter(filter.MatchEtherType(testEtherType)))
	tx := openIn(t, p.A, WithFilter(filter.MatchNone()), WithNeedWakeup(), WithRingSize(64), WithNumFrames(512), WithTxFrames(256)).Socket(0)
	descs := tx.Alloc(64)
	for i := range descs {
		descs[i].Len = uint32(len(testFrame(tx.UMEM()[descs[i].Addr:], uint32(i), 64)))
	}
	if n := tx.TransmitNoKick(descs); n != 64 {
		t.Fatalf("queued %d of 64 without a kick", n)
	}
	if tx.NumFreeTxSlots() != 0 {
		t.Fatalf("ring not full: %d free", tx.NumFreeTxSlots())
	}
	time.Sleep(50 * time.Millisecond)
	if tx.NumCompleted() != 0 {
		t.Logf("the kernel completed %d frames without a kick", tx.NumCompleted())
	}
	sent := sendAll(t, tx, 64, 1000, func(uint32) int { return 64 })
	got := receiveTest(t, rx, 64+len(sent), 5*time.Second)
	if len(got) != 64+len(sent) {
		st, _ := tx.Stats()
		t.Fatalf("received %d of %d (%v)", len(got), 64+len(sent), st)
	}
}

// TestForwardCompleteInto: received frames are transmitted as they are and
// come back by address through CompleteInto, to be recycled: 5,000 frames
// forwarded, every receive frame home, the transmit pool untouched.
func TestForwardCompleteInto(t *testing.T) {
	t.Run("defaults", func(t *testing.T) { forwardCompleteInto(t) })
	t.Run("colours", func(t *testing.T) { forwardCompleteInto(t, WithCacheColours()) })
}

func forwardCompleteInto(t *testing.T, opts ...Option) {
	p := vethPair(t)
	fwd := openIn(t, p.B, append([]Option{WithFilter(filter.MatchEtherType(testEtherType)), WithNeedWakeup()}, opts...)...).Socket(0)
	peer := openIn(t, p.A, WithFilter(filter.MatchEtherType(testEtherType)), WithNeedWakeup())
	src := peer.Socket(0)
	rxFree, txFree := fwd.FreeRxFrames()+fwd.NumFilled(), fwd.FreeTxFrames()
	const total = 5000
	forwarded, back := 0, 0
	var addrs []uint64
	seq := uint32(0)
	deadline := time.Now().Add(20 * time.Second)
	for forwarded < total && time.Now().Before(deadline) {
		if int(seq) < total && int(seq)-back < 200 {
			k, err := src.SendFunc(32, func(i int, frame []byte) int { return len(testFrame(frame, seq+uint32(i), 128)) })
			if err != nil {
				t.Fatal(err)
			}
			seq += uint32(k)
		}
		fwd.Fill(fwd.NumFreeFillSlots())
		if _, err := fwd.Poll(time.Millisecond); err != nil {
			t.Fatal(err)
		}
		descs := fwd.Receive(64)
		for i := range descs {
			copy(fwd.UMEM()[descs[i].Addr+6:], []byte{2, 0, 0, 0, 0, 2}) // rewrite in place
		}
		n := fwd.Transmit(descs)
		fwd.Recycle(descs[n:])
		forwarded += n
		addrs = fwd.CompleteInto(1<<20, addrs[:0])
		for _, a := range addrs {
			fwd.Recycle([]Desc{{Addr: a}})
		}
		for _, d := range peer.Socket(0).Receive(256) {
			if b := src.GetFrame(d); len(b) > 11 && b[11] == 2 {
				back++
			}
			src.Recycle([]Desc{d})
		}
		src.Fill(src.NumFreeFillSlots())
		src.Complete(1 << 20)
	}
	for i := 0; i < 1000 && fwd.NumTransmitted() > 0; i++ {
		addrs = fwd.CompleteInto(1<<20, addrs[:0])
		for _, a := range addrs {
			fwd.Recycle([]Desc{{Addr: a}})
		}
		_ = fwd.Kick()
		time.Sleep(time.Millisecond)
	}
	st, _ := fwd.Stats()
	if forwarded < total {
		t.Fatalf("forwarded %d of %d (%v)", forwarded, total, st)
	}
	if fwd.NumTransmitted() != 0 {
		t.Fatalf("%d frames never completed", fwd.NumTransmitted())
	}
	if got := fwd.FreeRxFrames() + fwd.NumFilled(); got != rxFree {
		t.Errorf("receive frames %d -> %d", rxFree, got)
	}
	if fwd.FreeTxFrames() != txFree || st.Rejected != 0 {
		t.Errorf("transmit pool %d -> %d, %d rejected", txFree, fwd.FreeTxFrames(), st.Rejected)
	}
	if back == 0 {
		t.Error("no forwarded frame reached the peer")
	}
	t.Logf("forwarded %d, %d seen back at the peer; %v", forwarded, back, st)
}

// TestCloseWakesPoll: Close on one goroutine wakes a Poll blocked for ever
// on another, which returns ErrClosed, however the polling goroutine runs:
// unpinned (parked on Go's poller), on a thread its caller pinned, or on
// one the socket's Tuning pinned (both asleep in ppoll). While a pinned
// Poll sleeps the socket is in no epoll instance (the kernel's view):
// otherwise the kernel would wake that instance for every frame it frees
// after transmit; an unpinned one's is in one, the waiter's.
func TestCloseWakesPoll(t *testing.T) {
	if runtime.NumCPU() < 2 {
		testenv.CannotRun(t, "a pinned thread needs a machine of 2 CPUs or more (this one has %d)", runtime.NumCPU())
	}
	last := runtime.NumCPU() - 1
	for _, tc := range []struct {
		name     string
		opts     []Option
		pin      bool // the test pins the polling goroutine itself
		watchers int  // epoll instances watching the socket while Poll sleeps
	}{
		{"unpinned", nil, false, 1},
		{"caller pinned", nil, true, 0},
		{"Tuning pinned", []Option{WithHostTuning(Tuning{CPUs: []int{last}})}, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := vethPair(t)
			f := openIn(t, p.B, append([]Option{WithFilter(filter.MatchEtherType(testEtherType)), WithNeedWakeup()}, tc.opts...)...)
			s := f.Socket(0)
			done := make(chan error, 1)
			go func() {
				if tc.pin {
					if err := host.PinThread(last); err != nil {
						done <- err
						return
					}
				}
				_, err := s.Poll(-1)
				done <- err
			}()
			time.Sleep(50 * time.Millisecond)
			if got := testenv.EpollWatchers(t, s.fd); got != tc.watchers {
				t.Errorf("while Poll sleeps the socket is in %d epoll instances; want %d", got, tc.watchers)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if !errors.Is(err, ErrClosed) {
					t.Fatalf("Poll returned %v, want ErrClosed", err)
				}
			case <-time.After(2 * time.Second):
				t.Fatal("Close did not wake Poll")
			}
			if _, err := s.Poll(0); !errors.Is(err, ErrClosed) {
				t.Fatalf("Poll after Close: %v", err)
			}
			if s.Fill(1) != 0 || s.Receive(1) != nil || s.Alloc(1) != nil || s.Transmit([]Desc{{Addr: 0, Len: 1}}) != 0 || s.Complete(1) != 0 {
				t.Fatal("a method worked after Close")
			}
			if _, err := s.SendFunc(1, func(int, []byte) int { return 1 }); !errors.Is(err, ErrClosed) {
				t.Fatalf("SendFunc after Close: %v", err)
			}
			if xdpAttached(t, p.B) != 0 {
				t.Fatal("the program is still attached after Close")
			}
		})
	}
}

// TestCloseDuringCalls: Close on one goroutine while the socket's driving
// goroutine calls its non-blocking methods in a loop (what a waitset does
// between sleeps) and a monitor reads Stats, Err and the descriptors never
// faults on the rings Close unmaps or races its teardown (-race), and every
// method afterwards returns zero, nil, -1 or ErrClosed. A call that reads
// ring memory outside its call count is a SIGSEGV here, which kills the
// test binary.
func TestCloseDuringCalls(t *testing.T) {
	p := vethPair(t)
	driver := []func(s *Socket){
		func(s *Socket) { _ = s.NeedsWakeupRx() },
		func(s *Socket) { _ = s.NumReceived() },
		func(s *Socket) { _ = s.NumFreeFillSlots() },
		func(s *Socket) { _ = s.NumCompleted() },
		func(s *Socket) { _ = s.NumFreeTxSlots() },
		func(s *Socket) { _ = s.GetFrame(Desc{Addr: 0, Len: 64}) },
		func(s *Socket) { _ = s.Writable(Desc{Addr: 0}) },
		func(s *Socket) { _ = s.TxMeta(Desc{Addr: 4096}) },
		func(s *Socket) { _ = s.UMEM() },
		func(s *Socket) { _ = s.Receive(8) },
		func(s *Socket) { _ = s.Complete(8) },
	}
	monitor := []func(s *Socket){
		func(s *Socket) { _, _ = s.Stats() },
		func(s *Socket) { _ = s.Err() },
		func(s *Socket) { _ = s.FD() },
		func(s *Socket) { _ = s.WakeFD() },
	}
	for round := range 20 {
		var f *Fleet
		if err := p.B.Do(func() (err error) {
			f, err = Open(p.B.Link, WithFilter(filter.MatchEtherType(testEtherType)), WithNeedWakeup())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		s := f.Socket(0)
		var loops testenv.Loops
		for _, calls := range [][]func(*Socket){driver, monitor} {
			loops.Go(func() {
				for _, call := range calls {
					call(s)
				}
			})
		}
		time.Sleep(time.Duration(round%5) * time.Millisecond)
		err := f.Close()
		loops.Stop()
		if err != nil {
			t.Fatal(err)
		}
		if s.NeedsWakeupRx() || s.NumReceived() != 0 || s.NumFreeFillSlots() != 0 || s.NumCompleted() != 0 || s.NumFreeTxSlots() != 0 {
			t.Fatalf("round %d: a ring count is not zero after Close", round)
		}
		if s.GetFrame(Desc{Addr: 0, Len: 64}) != nil || s.Writable(Desc{Addr: 0}) != nil || s.TxMeta(Desc{Addr: 4096}) != nil || s.UMEM() != nil {
			t.Fatalf("round %d: the socket hands out frame memory after Close", round)
		}
		if _, err := s.Stats(); !errors.Is(err, ErrClosed) {
			t.Fatalf("round %d: Stats after Close: %v, want ErrClosed", round, err)
		}
		if s.FD() != -1 || s.WakeFD() != -1 {
			t.Fatalf("round %d: descriptors %d and %d after Close, want -1", round, s.FD(), s.WakeFD())
		}
	}
}

// TestOpenRefusesAndRollsBack: a bare Open is refused with the reason; a
// failing Open (more queues than the veth has, zero-copy on veth) leaves no
// program on the interface and no file descriptor open.
func TestOpenRefusesAndRollsBack(t *testing.T) {
	p := vethPair(t)
	fds := openFDs(t)
	for _, tc := range []struct {
		name string
		opts []Option
		want string
		is   error
	}{
		{"no filter", nil, "filter.MatchAll", ErrUnsupported},
		{"too many queues", []Option{WithFilter(filter.MatchAll()), WithQueues(2)}, "receive queues", packetio.ErrInvalid},
		{"zero-copy on veth", []Option{WithFilter(filter.MatchAll()), WithZeroCopy()}, "zero-copy", ErrUnsupported},
		{"bad frame size", []Option{WithFilter(filter.MatchAll()), WithFrameSize(3000)}, "power of two", packetio.ErrInvalid},
		{"reuse with multi-buffer", []Option{WithFilter(filter.MatchAll()), WithTxReuseRxFrames(), WithMultiBuffer()}, "WithMultiBuffer", ErrUnsupported},
		{"bad match", []Option{WithFilter(filter.MatchSrcIP("10.0.0.0/40"))}, "CIDR", ErrUnsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := p.B.Do(func() error {
				f, err := Open(p.B.Link, tc.opts...)
				if err == nil {
					f.Close()
				}
				return err
			})
			var oe *packetio.OpError
			if !errors.As(err, &oe) || oe.Op != "open" || oe.Backend != "afxdp" || oe.Iface != p.B.Link || !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Open: %v, want an open OpError on %s matching %v saying %q", err, p.B.Link, tc.is, tc.want)
			}
			if id := xdpAttached(t, p.B); id != 0 {
				t.Fatalf("program %d left attached", id)
			}
		})
	}
	if after := openFDs(t); after != fds {
		t.Errorf("%d file descriptors open before, %d after", fds, after)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestFastPathAllocations: the per-batch calls allocate nothing.
func TestFastPathAllocations(t *testing.T) {
	p := vethPair(t)
	s := openIn(t, p.B, WithFilter(filter.MatchEtherType(testEtherType)), WithNeedWakeup(), WithRxTimestamps()).Socket(0)
	for _, c := range []struct {
		name string
		fn   func()
	}{
		{"Fill+Receive+Recycle", func() { s.Recycle(s.Receive(64)); s.Fill(64) }},
		{"ReceiveTimestamps", func() { d, _ := s.ReceiveTimestamps(64); s.Recycle(d) }},
		{"ReceivePackets", func() { s.RecyclePackets(s.ReceivePackets(64)) }},
		{"Alloc+Free", func() { s.Free(s.Alloc(64)) }},
		{"Alloc+Transmit+Complete", func() {
			d := s.Alloc(16)
			for i := range d {
				d[i].Len = 60
			}
			s.Free(d[s.Transmit(d):])
			s.Complete(64)
		}},
		{"SendFunc", func() { _, _ = s.SendFunc(16, func(i int, f []byte) int { return 60 }) }},
		{"CompleteInto", func() { s.CompleteInto(64, nil) }},
		{"NumReceived", func() { _ = s.NumReceived() + s.NumFreeFillSlots() + s.NumFreeTxSlots() + s.NumCompleted() }},
	} {
		if n := testing.AllocsPerRun(200, c.fn); n != 0 {
			t.Errorf("%s: %.1f allocations per call", c.name, n)
		}
	}
	settle(s)
}

// TestKernelKeepsTheRest: the filter takes UDP port 9000 and nothing else;
// datagrams to port 9001 on the same interface still reach a kernel socket.
func TestKernelKeepsTheRest(t *testing.T) {
	p := vethPair(t, netns.WithAddrs(splitA, splitB))
	f := openIn(t, p.B, WithFilter(filter.MatchUDPPort(9000)), WithNeedWakeup())
	checkSplit(t, p, f)
}

// The addresses checkSplit's pair needs.
var (
	splitA = netip.MustParsePrefix("10.77.0.1/24")
	splitB = netip.MustParsePrefix("10.77.0.2/24")
)

// checkSplit sends 50 datagrams to UDP port 9000 and 50 to 9001 from A to
// B (addressed splitA, splitB), and fails unless every port-9000 datagram,
// and nothing else, reaches f's queue 0 and every port-9001 datagram
// reaches a kernel socket in B: what a program steering port 9000 does.
func checkSplit(t *testing.T, p *netns.Pair, f *Fleet) {
	t.Helper()
	kconn, err := p.B.ListenUDP(net.IPv4(10, 77, 0, 2), 9001)
	if err != nil {
		t.Fatal(err)
	}
	defer kconn.Close()
	sender, err := p.A.ListenUDP(net.IPv4(10, 77, 0, 1), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	const n = 50
	kernelGot := make(chan int, 1)
	go func() {
		buf := make([]byte, 2048)
		got := 0
		_ = kconn.SetReadDeadline(time.Now().Add(5 * time.Second))
		for got < n {
			if _, err := kconn.Read(buf); err != nil {
				break
			}
			got++
		}
		kernelGot <- got
	}()
	for i := range n {
		for _, port := range []int{9000, 9001} {
			if _, err := sender.WriteToUDP([]byte(fmt.Sprintf("datagram %d", i)), &net.UDPAddr{IP: net.IPv4(10, 77, 0, 2), Port: port}); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Millisecond)
	}
	s := f.Socket(0)
	fleetGot, wrong := 0, 0
	deadline := time.Now().Add(3 * time.Second)
	for fleetGot < n && time.Now().Before(deadline) {
		s.Fill(s.NumFreeFillSlots())
		if _, err := s.Poll(10 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		descs := s.Receive(64)
		for _, d := range descs {
			b := s.GetFrame(d)
			if len(b) < 38 || binary.BigEndian.Uint16(b[12:]) != filter.EtherTypeIPv4 || b[23] != 17 {
				wrong++
				continue
			}
			if binary.BigEndian.Uint16(b[36:]) == 9000 {
				fleetGot++
			} else {
				wrong++
			}
		}
		s.Recycle(descs)
	}
	if fleetGot != n || wrong != 0 {
		t.Errorf("the fleet got %d of %d port-9000 datagrams and %d other frames", fleetGot, n, wrong)
	}
	if k := <-kernelGot; k != n {
		t.Errorf("the kernel socket got %d of %d port-9001 datagrams", k, n)
	}
}

// TestKilledProcessLeavesNoProgram: a process that opened a fleet and is
// killed with SIGKILL leaves no XDP program on the interface, because the
// program hangs on a BPF link the kernel closes with the process.
func TestKilledProcessLeavesNoProgram(t *testing.T) {
	if os.Getenv("XDP_TEST_CHILD") != "" {
		childHoldsFleet()
		return
	}
	p := vethPair(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledProcessLeavesNoProgram$")
	cmd.Env = append(os.Environ(), "XDP_TEST_CHILD="+p.B.Link)
	// A duplicate, owned by the *os.File (whose finalizer closes it): the
	// Pair keeps and closes its own descriptor.
	nsfd, err := unix.Dup(p.B.NamespaceFD())
	if err != nil {
		t.Fatal(err)
	}
	nsFile := os.NewFile(uintptr(nsfd), "netns")
	defer nsFile.Close()
	cmd.ExtraFiles = []*os.File{nsFile}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line := make([]byte, 64)
	n, _ := out.Read(line)
	if !strings.HasPrefix(string(line[:n]), "ready") {
		t.Fatalf("child said %q", line[:n])
	}
	if xdpAttached(t, p.B) == 0 {
		t.Fatal("the child's program is not attached")
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for i := 0; i < 200 && xdpAttached(t, p.B) != 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if id := xdpAttached(t, p.B); id != 0 {
		t.Fatalf("program %d survived its killed owner", id)
	}
}

// childHoldsFleet runs in the child: enter the namespace handed over as fd
// 3, open a fleet, say so, and wait to be killed.
func childHoldsFleet() {
	runtime.LockOSThread()
	if err := unix.Setns(3, unix.CLONE_NEWNET); err != nil {
		fmt.Println("setns:", err)
		os.Exit(1)
	}
	f, err := Open(os.Getenv("XDP_TEST_CHILD"), WithFilter(filter.MatchAll()))
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	time.Sleep(time.Minute)
	f.Close()
	os.Exit(0)
}
