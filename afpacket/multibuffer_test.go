//go:build linux

package afpacket

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/pool"
)

// fakeRx is a receive queue over a forged ring, with no socket.
func fakeRx(t *testing.T, f *forged, frameSize, frames int, vnet, multi bool) *RxQueue {
	t.Helper()
	p, err := pool.New(0, frames, frameSize)
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegion(make([]byte, frames*frameSize), frameSize)
	return newRxQueue(&Device{name: "fake0"}, 0, &sock{fd: -1, ring: f.ring(vnet)}, -1, reg, p, vnet, multi)
}

// chains splits received descriptors into packets, joined.
func chains(t *testing.T, q *RxQueue, descs []packetio.Desc) [][]byte {
	t.Helper()
	var out [][]byte
	var cur []byte
	for _, d := range descs {
		cur = append(cur, q.reg.Frame(d)...)
		if d.Options&packetio.OptContinued == 0 {
			out = append(out, cur)
			cur = nil
		}
	}
	if cur != nil {
		t.Fatal("the last descriptor carries OptContinued")
	}
	return out
}

func TestReceiveChains(t *testing.T) {
	const fs = 256 // 192 bytes per frame
	f := newForged(2, 8192)
	big := seqFrame(1, 1000)    // 6 frames (1004 with the tag)
	small := seqFrame(2, 100)   // 1 frame
	exact := seqFrame(3, 4*192) // 4 frames exactly
	f.arm(0, fpkt{data: small}, fpkt{data: big, status: tpStatusVLANValid, tci: 7}, fpkt{data: exact})
	q := fakeRx(t, f, fs, 32, false, true)

	ds, ts := q.ReceiveTimestamps(64)
	if len(ds) != 1+6+4 || len(ts) != len(ds) {
		t.Fatalf("%d descs, %d stamps", len(ds), len(ts))
	}
	for i, s := range ts {
		if s == 0 {
			t.Fatalf("stamp %d is zero", i)
		}
	}
	got := chains(t, q, ds)
	wantBig := make([]byte, len(big)+4)
	insertVLAN(wantBig, big, 0, 7)
	if len(got) != 3 || !bytes.Equal(got[0], small) || !bytes.Equal(got[1], wantBig) || !bytes.Equal(got[2], exact) {
		t.Fatalf("chains wrong: %d packets", len(got))
	}
	if st, _ := q.Stats(); st.Packets != 11 || st.Batches != 1 || st.Bytes != uint64(100+1004+768) {
		t.Fatalf("stats %+v", st)
	}
	q.Recycle(ds)
	if q.NumFreeFrames() != 32 || q.pool.Rejected() != 0 {
		t.Fatal("frames did not all come home")
	}
}

func TestReceiveChainLimits(t *testing.T) {
	const fs = 256
	t.Run("a chain waits for room in the batch", func(t *testing.T) {
		f := newForged(1, 8192)
		f.arm(0, fpkt{data: seqFrame(1, 60)}, fpkt{data: seqFrame(2, 500)})
		q := fakeRx(t, f, fs, 32, false, true)
		if ds := q.Receive(3); len(ds) != 1 {
			t.Fatalf("took %d, want 1: the 3-frame chain waits", len(ds))
		}
		if ds := q.Receive(3); len(ds) != 3 || ds[2].Options&packetio.OptContinued != 0 {
			t.Fatalf("next call took %d", len(ds))
		}
	})
	t.Run("a chain longer than max is dropped and counted", func(t *testing.T) {
		f := newForged(1, 8192)
		f.arm(0, fpkt{data: seqFrame(1, 1000)}, fpkt{data: seqFrame(2, 60)})
		q := fakeRx(t, f, fs, 32, false, true)
		ds := q.Receive(3)
		if len(ds) != 1 || ds[0].Len != 60 {
			t.Fatalf("took %d", len(ds))
		}
		st, _ := q.Stats()
		if st.Backend["batch_too_small"] != 1 || st.Backend["oversize"] != 1 {
			t.Fatalf("stats %+v", st.Backend)
		}
	})
	t.Run("a chain waits for frames", func(t *testing.T) {
		f := newForged(1, 8192)
		f.arm(0, fpkt{data: seqFrame(1, 1000)})
		q := fakeRx(t, f, fs, 8, false, true)
		held := q.pool.Pop(4, nil)
		if ds := q.Receive(64); len(ds) != 0 {
			t.Fatalf("took %d with 4 frames free", len(ds))
		}
		for _, a := range held {
			q.pool.Push(a)
		}
		if ds := q.Receive(64); len(ds) != 6 {
			t.Fatalf("took %d", len(ds))
		}
	})
	t.Run("without multi-buffer a big packet is dropped", func(t *testing.T) {
		f := newForged(1, 8192)
		f.arm(0, fpkt{data: seqFrame(1, 1000)}, fpkt{data: seqFrame(2, 60)})
		q := fakeRx(t, f, fs, 32, false, false)
		if ds := q.Receive(64); len(ds) != 1 {
			t.Fatalf("took %d", len(ds))
		}
		if st, _ := q.Stats(); st.Backend["oversize"] != 1 {
			t.Fatal("not counted")
		}
	})
	t.Run("a clipped packet is never delivered", func(t *testing.T) {
		f := newForged(1, 8192)
		f.arm(0, fpkt{data: seqFrame(1, 100), wireLen: 200}, fpkt{data: seqFrame(2, 60)})
		q := fakeRx(t, f, fs, 32, false, true)
		if ds := q.Receive(64); len(ds) != 1 || ds[0].Len != 60 {
			t.Fatalf("took %v", ds)
		}
	})
}

func TestReceiveChainOffload(t *testing.T) {
	const fs = 256
	f := newForged(1, 8192)
	hdr := make([]byte, vnetLen)
	o := packetio.Offload{Flags: 1, GSOType: packetio.OffloadGSOTCPv4, HdrLen: 54, GSOSize: 100, CsumStart: 34, CsumOff: 16}
	o.Marshal(hdr)
	f.arm(0, fpkt{data: seqFrame(1, 500), vnet: hdr})
	q := fakeRx(t, f, fs, 32, true, true)
	ds, offs := q.ReceiveOffload(64)
	if len(ds) != 3 || len(offs) != 3 {
		t.Fatalf("%d descs, %d offloads", len(ds), len(offs))
	}
	if offs[0] != o || offs[1] != (packetio.Offload{}) || offs[2] != (packetio.Offload{}) {
		t.Fatalf("offloads %+v", offs)
	}
}

func TestCopyAt(t *testing.T) {
	data := seqFrame(0, 40)
	p := packet{data: data, status: tpStatusVLANValid, vlanTCI: 0x1234}
	want := make([]byte, 44)
	insertVLAN(want, data, 0, 0x1234)
	for _, step := range []int{1, 3, 5, 12, 13, 16, 44, 100} {
		var got []byte
		for off := 0; off < 44; off += step {
			buf := make([]byte, step)
			n := p.copyAt(buf, off)
			got = append(got, buf[:n]...)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("step %d: %x", step, got)
		}
	}
	if p.copyAt(make([]byte, 4), 44) != 0 || p.copyAt(make([]byte, 4), -1) != 0 {
		t.Fatal("copied past the packet")
	}
}

func TestTransmitChains(t *testing.T) {
	var iovlens []int
	q, _ := fakeTxMode(t, 64, true)
	old := sendmmsgFn
	sendmmsgFn = func(fd int, msgs []unix.Mmsghdr) (int, unix.Errno) {
		for _, m := range msgs {
			iovlens = append(iovlens, int(m.Hdr.Iovlen))
		}
		return len(msgs), 0
	}
	defer func() { sendmmsgFn = old }()
	ds := allocLen(q, 7)
	ds[0].Options = packetio.OptContinued // packet 1: frames 0-1
	ds[2].Options = packetio.OptContinued // packet 2: frames 2-4
	ds[3].Options = packetio.OptContinued
	ds[5].Options = packetio.OptChecksumOK // packet 3: frame 5 (other bits ignored)
	ds[6].Options = packetio.OptContinued  // packet 4: runs off the end
	n, err := q.transmit(ds, nil)
	if n != 6 || !errors.Is(err, packetio.ErrBadLength) {
		t.Fatalf("transmit: %d, %v; want the 3 whole packets (6 frames) and ErrBadLength", n, err)
	}
	if len(iovlens) != 3 || iovlens[0] != 2 || iovlens[1] != 3 || iovlens[2] != 1 {
		t.Fatalf("messages with %v iovecs, want [2 3 1]", iovlens)
	}
	if q.NumInFlight() != 6 {
		t.Fatalf("in flight %d", q.NumInFlight())
	}
	// A bad frame inside a chain refuses the whole packet.
	iovlens = nil
	more := allocLen(q, 3)
	more[0].Options = packetio.OptContinued
	more[1].Len = 0
	if n, _ := q.transmit(more, nil); n != 0 || len(iovlens) != 0 {
		t.Fatalf("took %d of a packet with an empty frame", n)
	}
	q.Free(more)
	q.Free(ds[6:])
	q.Complete(1 << 20)
	if q.NumFreeFrames() != 64 {
		t.Fatal("frames lost")
	}
}

// Chains across a real veth: 1400-byte frames sent as chains of 256-byte
// frames arrive as chains that join into the same bytes.
func TestIntegrationMultiBuffer(t *testing.T) {
	pair := netns.New(t)
	opts := []Option{WithMultiBuffer(), WithFrameSize(256), WithFrames(512)}
	a := openIn(t, pair.A, append(opts, WithRxQueues(0))...)
	b := openIn(t, pair.B, append(opts, WithTxQueues(0))...)
	if !a.Capabilities().MultiBuffer || a.Capabilities().MaxFrameSize != 192 {
		t.Fatalf("capabilities %+v", a.Capabilities())
	}
	tx, rx := a.TxQueue(0), b.RxQueue(0).(*RxQueue)
	var frames [][]byte
	for i := range 16 {
		frames = append(frames, testFrame(t, pair.B.MAC, uint32(i), 100+i*80))
	}
	for _, f := range frames {
		k := (len(f) + 191) / 192
		ds := append([]packetio.Desc(nil), tx.Alloc(k)...)
		if len(ds) != k {
			t.Fatal("Alloc short")
		}
		for j := range ds {
			ds[j].Len = uint32(copy(tx.Region().Writable(ds[j]), f[j*192:]))
			if j < k-1 {
				ds[j].Options = packetio.OptContinued
			}
		}
		if n := tx.Transmit(ds); n != k {
			t.Fatalf("Transmit took %d of a %d-frame chain", n, k)
		}
		tx.Complete(1 << 20)
	}
	var got [][]byte
	deadline := time.Now().Add(3 * time.Second)
	for len(got) < len(frames) && time.Now().Before(deadline) {
		rx.Poll(50 * time.Millisecond)
		ds := rx.Receive(256)
		for _, p := range chains(t, rx, ds) {
			if ours(p) {
				got = append(got, p)
			}
		}
		rx.Recycle(ds)
	}
	if len(got) != len(frames) {
		t.Fatalf("%d of %d chained frames arrived", len(got), len(frames))
	}
	for i := range frames {
		if !bytes.Equal(got[i], frames[i]) {
			t.Fatalf("frame %d differs", i)
		}
	}
}

// WithGSO and WithMultiBuffer: a TCP super-frame arrives as a chain with its
// metadata on the first descriptor and its partial checksum left as sent.
func TestIntegrationGSOChain(t *testing.T) {
	pair := netns.New(t)
	a := openIn(t, pair.A, WithGSO(), WithRxQueues(0))
	b := openIn(t, pair.B, WithGSO(), WithMultiBuffer(), WithTxQueues(0))
	tx := a.TxQueue(0).(*TxQueue)
	rx := b.RxQueue(0).(*RxQueue)
	super, cs, co := l4Frame(t, false, true, false, 4000)
	copy(super[6:12], testSrcMAC)
	off := packetio.Offload{Flags: packetio.OffloadNeedsCsum, GSOType: packetio.OffloadGSOTCPv4,
		HdrLen: uint16(cs + 20), GSOSize: 1400, CsumStart: uint16(cs), CsumOff: uint16(co)}
	ds := tx.Alloc(1)
	ds[0].Len = uint32(copy(tx.Region().Writable(ds[0]), super))
	if n, err := tx.TransmitOffload(ds, []packetio.Offload{off}); n != 1 || err != nil {
		t.Fatalf("TransmitOffload: %d, %v", n, err)
	}
	tx.Complete(1 << 20)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		rx.Poll(50 * time.Millisecond)
		ds, offs := rx.ReceiveOffload(64)
		for i := 0; i < len(ds); {
			j := i
			for j < len(ds) && ds[j].Options&packetio.OptContinued != 0 {
				j++
			}
			var p []byte
			for _, d := range ds[i : j+1] {
				p = append(p, rx.Region().Frame(d)...)
			}
			if ours := bytes.Equal(p[6:12], testSrcMAC); ours {
				if j-i+1 != (len(super)+rx.room-1)/rx.room {
					t.Fatalf("%d-byte super-frame in %d descriptors", len(p), j-i+1)
				}
				// The kernel reports hdr_len as the skb's linear length,
				// a hint that may exceed the real headers.
				got := offs[i]
				if int(got.HdrLen) > len(p) {
					t.Fatalf("hdr_len %d past the %d-byte packet", got.HdrLen, len(p))
				}
				got.HdrLen = off.HdrLen
				if got != off {
					t.Fatalf("offload %+v, want %+v", offs[i], off)
				}
				for _, o := range offs[i+1 : j+1] {
					if o != (packetio.Offload{}) {
						t.Fatalf("continuation carries %+v", o)
					}
				}
				if !bytes.Equal(p, super) {
					t.Fatal("super-frame bytes differ")
				}
				rx.Recycle(ds)
				return
			}
			i = j + 1
		}
		rx.Recycle(ds)
	}
	t.Fatal("the super-frame never arrived")
}
