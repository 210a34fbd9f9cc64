//go:build linux

package afpacket

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/pool"
)

// fakeKernel plays tpacket_snd on a forged transmit ring: each kick walks
// the posted slots from its own head, takes them (recording the frame's
// first byte) and stops as the next step of its script says: after take
// frames, refusing the next one (TP_STATUS_WRONG_FORMAT, EINVAL, head left
// on it) or returning errno with the slot untouched.
type fakeKernel struct {
	r     *txRing
	head  uint32
	steps []kstep
	seen  []byte // first byte of every frame taken, in order
	kicks int
}

type kstep struct {
	take   int
	refuse bool
	errno  unix.Errno
}

func (k *fakeKernel) kick(int) unix.Errno {
	k.kicks++
	s := kstep{take: 1 << 30}
	if len(k.steps) > 0 {
		s, k.steps = k.steps[0], k.steps[1:]
	}
	for n := 0; ; n++ {
		off := k.head * k.r.frameSize
		slot := k.r.mem[off : off+k.r.frameSize]
		if loadSlotStatus(slot) != tpStatusSendRequest {
			return 0
		}
		if n == s.take {
			if s.refuse {
				storeSlotStatus(slot, tpStatusWrongFormat)
				return unix.EINVAL
			}
			return s.errno
		}
		k.seen = append(k.seen, slot[k.r.off])
		storeSlotStatus(slot, tpStatusAvailable)
		k.head = (k.head + 1) % k.r.slots
	}
}

// fakeRingTx is a TxQueue on a forged 16-slot ring driven by fakeKernel.
func fakeRingTx(t *testing.T, linear bool, steps ...kstep) (*TxQueue, *fakeKernel) {
	t.Helper()
	const fs, frames, slots = 2048, 64, 16
	p, err := pool.New(0, frames, fs)
	if err != nil {
		t.Fatal(err)
	}
	q := newTxQueue(&Device{name: "fake0"}, 0, -1, newRegion(make([]byte, frames*fs), fs), p, false, false)
	q.maxLen = 1514
	q.ring = newTxRing(make([]byte, slots*fs), fs, slots, linear)
	k := &fakeKernel{r: q.ring, steps: steps}
	old := kickFn
	kickFn = k.kick
	t.Cleanup(func() { kickFn = old })
	return q, k
}

// marked allocates n frames whose first byte is first, first+1, ...
func marked(q *TxQueue, n int, first byte) []packetio.Desc {
	ds := append([]packetio.Desc(nil), q.Alloc(n)...)
	for i := range ds {
		ds[i].Len = 60
		q.reg.Writable(ds[i])[0] = first + byte(i)
	}
	return ds
}

func seq(from, to byte, skip ...byte) []byte {
	var s []byte
	for b := from; b < to; b++ {
		if !slices.Contains(skip, b) {
			s = append(s, b)
		}
	}
	return s
}

// TestTxRingKernelOutcomes: every way tpacket_snd can end a send, for
// Transmit and SendFunc: what the caller gets back, what reached the wire in
// which order, what is counted, and that our head and the kernel's agree.
func TestTxRingKernelOutcomes(t *testing.T) {
	for _, c := range []struct {
		name        string
		steps       []kstep
		sendFunc    bool
		n           int    // frames offered
		accepted    int    // frames the call reports taken
		wire        []byte // first bytes the kernel sent, in order
		wrongFormat uint64
		errIs       error // Err afterwards; nil for a healthy queue
	}{
		{"all taken", nil, false, 8, 8, seq(0, 8), 0, nil},
		{"third refused", []kstep{{take: 2, refuse: true}}, false, 8, 8, seq(0, 8, 2), 1, packetio.ErrBadLength},
		{"last refused", []kstep{{take: 7, refuse: true}}, false, 8, 8, seq(0, 7), 1, packetio.ErrBadLength},
		{"two refused", []kstep{{take: 1, refuse: true}, {take: 3, refuse: true}}, false, 8, 8, seq(0, 8, 1, 5), 2, packetio.ErrBadLength},
		{"back-pressure", []kstep{{take: 5, errno: unix.EAGAIN}, {take: 0, errno: unix.EAGAIN}}, false, 8, 5, seq(0, 5), 0, nil},
		{"interface gone", []kstep{{take: 0, errno: unix.ENXIO}}, false, 8, 0, nil, 0, packetio.ErrDeviceGone},
		{"SendFunc all taken", nil, true, 8, 8, seq(0, 8), 0, nil},
		{"SendFunc third refused", []kstep{{take: 2, refuse: true}}, true, 8, 8, seq(0, 8, 2), 1, packetio.ErrBadLength},
		{"SendFunc back-pressure", []kstep{{take: 3, errno: unix.ENOBUFS}, {take: 0, errno: unix.ENOBUFS}}, true, 8, 3, seq(0, 3), 0, nil},
	} {
		for _, linear := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/linear=%v", c.name, linear), func(t *testing.T) {
				q, k := fakeRingTx(t, linear, append([]kstep(nil), c.steps...)...)
				var got int
				if c.sendFunc {
					got, _ = q.SendFunc(c.n, func(i int, f []byte) int { f[0] = byte(i); return 60 })
				} else {
					ds := marked(q, c.n, 0)
					got = q.Transmit(ds)
					q.Free(ds[got:])
				}
				if got != c.accepted {
					t.Errorf("accepted %d of %d, want %d", got, c.n, c.accepted)
				}
				if !slices.Equal(k.seen, c.wire) {
					t.Errorf("the kernel sent %v, want %v", k.seen, c.wire)
				}
				if q.ring.head != k.head {
					t.Errorf("our head %d, the kernel's %d", q.ring.head, k.head)
				}
				if free := q.ring.free(16); free != 16 {
					t.Errorf("%d of 16 slots free after the send: a slot was left posted or refused", free)
				}
				st, _ := q.Stats()
				if st.Backend["wrong_format"] != c.wrongFormat || st.Errors != c.wrongFormat {
					t.Errorf("wrong_format %d, Errors %d; want %d", st.Backend["wrong_format"], st.Errors, c.wrongFormat)
				}
				if st.Packets != uint64(got) || st.Backend["sends"] != uint64(k.kicks) {
					t.Errorf("Packets %d (want %d), sends %d (kernel saw %d)", st.Packets, got, st.Backend["sends"], k.kicks)
				}
				if err := q.Err(); (c.errIs == nil) != (err == nil) || (c.errIs != nil && !errors.Is(err, c.errIs)) {
					t.Errorf("Err = %v, want %v", err, c.errIs)
				}
				// Every frame is accounted for: in flight until Complete,
				// then back in the pool.
				if c.sendFunc {
					if q.NumInFlight() != 0 || st.Completed != st.Packets {
						t.Errorf("SendFunc left %d in flight, Completed %d of %d", q.NumInFlight(), st.Completed, st.Packets)
					}
				} else if q.NumInFlight() != got {
					t.Errorf("%d in flight, want %d", q.NumInFlight(), got)
				}
				q.Complete(1 << 20)
				if q.NumFreeFrames() != 64 {
					t.Errorf("%d of 64 frames back in the pool", q.NumFreeFrames())
				}
				// The ring still works, in step with the kernel.
				if q.failed.Load() {
					return
				}
				k.seen = k.seen[:0]
				ds := marked(q, 20, 100)
				n := q.Transmit(ds)
				q.Free(ds[n:])
				if n != 16 || !slices.Equal(k.seen, seq(100, 116)) || q.ring.head != k.head {
					t.Errorf("next Transmit of 20 took %d, kernel sent %v, heads %d/%d", n, k.seen, q.ring.head, k.head)
				}
			})
		}
	}
}

// TestTxRingRefusesWhatCannotFit: a frame longer than the link (or the
// slot) never reaches the ring; SendFunc abandons a batch with a bad length
// and posts nothing.
func TestTxRingRefusesWhatCannotFit(t *testing.T) {
	q, k := fakeRingTx(t, true)
	ds := marked(q, 3, 0)
	ds[1].Len = 1515
	if n := q.Transmit(ds); n != 1 {
		t.Fatalf("Transmit took %d, want the 1 frame before the long one", n)
	}
	q.Free(ds[1:])
	for _, bad := range []int{-1, 1515, 2048} {
		n, err := q.SendFunc(4, func(i int, f []byte) int {
			if i == 2 {
				return bad
			}
			return 60
		})
		if n != 0 || !errors.Is(err, packetio.ErrBadLength) {
			t.Errorf("SendFunc with %d: %d, %v", bad, n, err)
		}
	}
	st, _ := q.Stats()
	if st.Refused != 4 || k.kicks != 1 || q.ring.free(16) != 16 {
		t.Errorf("Refused %d (want 4), %d sends (want 1), %d slots free", st.Refused, k.kicks, q.ring.free(16))
	}
}

func TestTxRingGeometry(t *testing.T) {
	for _, c := range []struct{ maxLen, frame, slots, block int }{
		{1514, 2048, 1024, 65536},
		{2016, 2048, 1024, 65536},
		{2017, 4096, 1024, 65536},
		{9014, 16384, 256, 65536},
		{65549, 131072, 64, 131072},
	} {
		t.Run(fmt.Sprint(c.maxLen), func(t *testing.T) {
			f, s, b := txRingGeometry(c.maxLen)
			if f != c.frame || s != c.slots || b != c.block {
				t.Errorf("txRingGeometry(%d) = %d, %d, %d; want %d, %d, %d", c.maxLen, f, s, b, c.frame, c.slots, c.block)
			}
			if b%f != 0 || s*f%b != 0 || f-txDataOff < c.maxLen {
				t.Errorf("a ring the kernel refuses or too small a slot: %d slots of %d in %d blocks", s, f, b)
			}
		})
	}
}

// TestIntegrationTxRingWrongFormat: a frame shorter than an Ethernet header
// is refused by the kernel itself (dev_validate_header), which marks its
// ring slot TP_STATUS_WRONG_FORMAT and stops there. The queue reports it
// (wrong_format, Errors, Err matching ErrBadLength), drops only that frame
// and sends the ones behind it, for Transmit and for SendFunc.
func TestIntegrationTxRingWrongFormat(t *testing.T) {
	pair := netns.New(t)
	a := openIn(t, pair.A, WithRxQueues(0))
	b := openIn(t, pair.B, WithTxQueues(0))
	tx := a.TxQueue(0).(*TxQueue)
	if tx.ring == nil {
		t.Fatal("no transmit ring on a default device")
	}
	frames := [][]byte{testFrame(t, pair.B.MAC, 1, 60), testFrame(t, pair.B.MAC, 2, 60), testFrame(t, pair.B.MAC, 3, 60), testFrame(t, pair.B.MAC, 4, 60)}

	ds := append([]packetio.Desc(nil), tx.Alloc(3)...)
	for i, f := range [][]byte{frames[0], frames[0][:10], frames[1]} {
		ds[i].Len = uint32(copy(tx.reg.Writable(ds[i]), f))
	}
	if n := tx.Transmit(ds); n != 3 {
		t.Fatalf("Transmit([good, 10 bytes, good]) took %d, want 3 (the short one dropped and counted)", n)
	}
	n, err := tx.SendFunc(3, func(i int, f []byte) int {
		if i == 1 {
			return 10
		}
		return copy(f, frames[2+i/2])
	})
	if n != 3 || err != nil {
		t.Fatalf("SendFunc([good, 10 bytes, good]) = %d, %v; want 3, nil", n, err)
	}
	got := receiveOurs(t, b.RxQueue(0), 4, 3*time.Second)
	if len(got) != 4 {
		t.Fatalf("the peer got %d of the 4 good frames", len(got))
	}
	for i := range got {
		if !bytes.Equal(got[i], frames[i]) {
			t.Errorf("frame %d arrived as % x, want % x", i, got[i][:16], frames[i][:16])
		}
	}
	st, _ := tx.Stats()
	if st.Backend["wrong_format"] != 2 || st.Errors != 2 || st.Packets != 6 {
		t.Errorf("wrong_format %d, Errors %d, Packets %d; want 2, 2, 6", st.Backend["wrong_format"], st.Errors, st.Packets)
	}
	if err := tx.Err(); !errors.Is(err, packetio.ErrBadLength) {
		t.Errorf("Err = %v, want the refusal (ErrBadLength)", err)
	}
	tx.Complete(1 << 20)
	if tx.NumInFlight() != 0 || tx.ring.free(1<<20) != int(tx.ring.slots) {
		t.Errorf("%d frames in flight, %d of %d slots free", tx.NumInFlight(), tx.ring.free(1<<20), tx.ring.slots)
	}
	t.Logf("%v", tx.Err())
}

// TestIntegrationQdiscBypass: transmit sockets bypass the qdisc unless
// WithQdisc, and every default transmit queue has its ring; WithGSO and
// WithMultiBuffer take the sendmmsg path, without one.
func TestIntegrationQdiscBypass(t *testing.T) {
	pair := netns.New(t)
	for _, c := range []struct {
		name   string
		opts   []Option
		bypass int
		ring   bool
	}{
		{"default", nil, 1, true},
		{"WithQdisc", []Option{WithQdisc()}, 0, true},
		{"WithGSO", []Option{WithGSO()}, 1, false},
		{"WithMultiBuffer", []Option{WithMultiBuffer()}, 1, false},
		{"WithQdisc WithGSO", []Option{WithQdisc(), WithGSO()}, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := openIn(t, pair.A, append(c.opts, WithQueues(2))...)
			for i := range d.NumTxQueues() {
				q := d.TxQueue(i).(*TxQueue)
				v, err := unix.GetsockoptInt(q.fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS)
				if err != nil || v != c.bypass {
					t.Errorf("tx %d: PACKET_QDISC_BYPASS = %d, %v; want %d", i, v, err, c.bypass)
				}
				if (q.ring != nil) != c.ring {
					t.Errorf("tx %d: transmit ring %v, want %v", i, q.ring != nil, c.ring)
				}
				if c.ring {
					ver, err := unix.GetsockoptInt(q.fd, unix.SOL_PACKET, unix.PACKET_VERSION)
					if err != nil || ver != unix.TPACKET_V2 {
						t.Errorf("tx %d: PACKET_VERSION %d, %v; want TPACKET_V2", i, ver, err)
					}
				}
			}
			d.Close()
		})
	}
}

// TestIntegrationSyscallsPerPacket: at batch 64 the data path makes at most
// one system call per 32 packets each way, counted by the queues themselves
// (TxStats.Backend["sends"], RxStats.Backend["syscalls"]), for SendFunc and
// Transmit on the ring and for Receive from a ring that already holds the
// packets.
func TestIntegrationSyscallsPerPacket(t *testing.T) {
	const batch, total = 64, 64 * 64
	pair := netns.New(t)
	a := openIn(t, pair.A, WithRxQueues(0), WithFrames(1024))
	b := openIn(t, pair.B, WithTxQueues(0), WithFrames(8192))
	tx, rx := a.TxQueue(0), b.RxQueue(0)
	frame := testFrame(t, pair.B.MAC, 1, 64)
	sent := 0
	for sent < total/2 {
		n, err := tx.SendFunc(batch, func(_ int, f []byte) int { return copy(f, frame) })
		if err != nil || n == 0 {
			t.Fatalf("SendFunc: %d, %v", n, err)
		}
		sent += n
	}
	for sent < total {
		tx.Complete(1 << 20)
		ds := tx.Alloc(batch)
		for i := range ds {
			ds[i].Len = uint32(copy(tx.Region().Writable(ds[i]), frame))
		}
		n := tx.Transmit(ds)
		tx.Free(ds[n:])
		if n == 0 {
			t.Fatalf("Transmit took nothing: %v", tx.Err())
		}
		sent += n
	}
	st, _ := tx.Stats()
	if s := st.Backend["sends"]; s == 0 || s*32 > st.Packets {
		t.Errorf("transmit: %d system calls for %d packets at batch %d, want at most 1 per 32", s, st.Packets, batch)
	}
	time.Sleep(20 * time.Millisecond) // every ring block retired
	got := 0
	for deadline := time.Now().Add(5 * time.Second); got < total && time.Now().Before(deadline); {
		if _, err := rx.Poll(100 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		ds := rx.Receive(batch)
		for _, d := range ds {
			if ours(rx.Region().Frame(d)) {
				got++
			}
		}
		rx.Recycle(ds)
	}
	rst, _ := rx.Stats()
	if got != total {
		t.Fatalf("received %d of %d (kernel drops %d)", got, total, rst.Dropped)
	}
	if s := rst.Backend["syscalls"]; s*32 > rst.Packets {
		t.Errorf("receive: %d system calls for %d packets at batch %d, want at most 1 per 32", s, rst.Packets, batch)
	}
	t.Logf("transmit %d sends for %d packets, receive %d syscalls for %d packets", st.Backend["sends"], st.Packets, rst.Backend["syscalls"], rst.Packets)
}
