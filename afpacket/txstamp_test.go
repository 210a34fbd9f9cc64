//go:build linux

package afpacket

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
)

// collectStamps reads departure stamps from tx until want arrived or 3 s
// passed.
func collectStamps(t *testing.T, tx packetio.TimestampTransmitter, want int) []packetio.TxStamp {
	t.Helper()
	out := make([]packetio.TxStamp, 0, want)
	deadline := time.Now().Add(3 * time.Second)
	for len(out) < want && time.Now().Before(deadline) {
		n := len(out)
		out = tx.TxTimestamps(out)
		if len(out) == n {
			time.Sleep(time.Millisecond)
		}
	}
	return out
}

// TestIntegrationTxTimestamps sends N frames on each transmit path and
// checks that N departure stamps come back, one per frame by Seq, non-zero,
// in the send window and in send order, and that the frames arrived.
func TestIntegrationTxTimestamps(t *testing.T) {
	const n = 200
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"tx ring", nil},
		{"tx ring with qdisc", []Option{WithQdisc()}},
		{"sendmmsg", []Option{WithMultiBuffer()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pair := netns.New(t)
			a := openIn(t, pair.A, append([]Option{WithRxQueues(0), WithTxTimestamps()}, tc.opts...)...)
			b := openIn(t, pair.B, WithTxQueues(0))
			if !a.Capabilities().TxTimestamps {
				t.Fatal("Capabilities().TxTimestamps is false with WithTxTimestamps")
			}
			tx, ok := a.TxQueue(0).(packetio.TimestampTransmitter)
			if !ok {
				t.Fatal("the transmit queue is not a TimestampTransmitter")
			}
			frames := make([][]byte, n)
			for i := range frames {
				frames[i] = testFrame(t, pair.B.MAC, uint32(i), 64+i%64)
			}
			before := uint64(time.Now().UnixNano())
			sendFrames(t, tx, frames[:n/2])
			mid := uint64(time.Now().UnixNano())
			sendFrames(t, tx, frames[n/2:])
			after := uint64(time.Now().UnixNano())
			stamps := collectStamps(t, tx, n)
			if len(stamps) != n {
				// Say what became of the frames, for a run that
				// cannot be repeated.
				got := receiveOurs(t, b.RxQueue(0), n, time.Second)
				st, _ := tx.Stats()
				t.Fatalf("%d stamps for %d frames (%d of them arrived); transmit stats %+v", len(stamps), n, len(got), st)
			}
			slices.SortFunc(stamps, func(x, y packetio.TxStamp) int { return int(x.Seq) - int(y.Seq) })
			for i, s := range stamps {
				if s.Seq != uint64(i) {
					t.Fatalf("stamp %d has Seq %d: want every frame stamped once, by its number", i, s.Seq)
				}
				if s.Time == 0 || s.Time < before || s.Time > after+uint64(time.Second) {
					t.Fatalf("frame %d stamped %d, outside the send window [%d, %d]", i, s.Time, before, after)
				}
				if i > 0 && s.Time < stamps[i-1].Time {
					t.Errorf("frame %d stamped %d, before frame %d (%d)", i, s.Time, i-1, stamps[i-1].Time)
				}
				// The first half was sent before mid: its stamps say so.
				if i < n/2 && s.Time > mid {
					t.Errorf("frame %d stamped %d, after its batch returned (%d)", i, s.Time, mid)
				}
			}
			if more := tx.TxTimestamps(nil); len(more) != 0 {
				t.Errorf("%d stamps beyond the %d frames sent", len(more), n)
			}
			got := receiveOurs(t, b.RxQueue(0), n, 3*time.Second)
			if len(got) != n {
				t.Fatalf("received %d of %d frames", len(got), n)
			}
			st, _ := tx.Stats()
			if st.Backend["tx_stamps"] != n || st.Backend["tx_stamp_gaps"] != 0 {
				t.Errorf("stamp counters %v", st.Backend)
			}
		})
	}
}

// TestIntegrationTxTimestampsAllocs checks that sending and reading stamps
// allocates nothing per packet.
func TestIntegrationTxTimestampsAllocs(t *testing.T) {
	pair := netns.New(t)
	a := openIn(t, pair.A, WithRxQueues(0), WithTxTimestamps())
	tx := a.TxQueue(0).(packetio.TimestampTransmitter)
	frame := testFrame(t, pair.B.MAC, 1, 64)
	build := func(i int, f []byte) int { return copy(f, frame) }
	out := make([]packetio.TxStamp, 0, 256)
	total := 0
	allocs := testing.AllocsPerRun(100, func() {
		n, _ := tx.SendFunc(32, build)
		tx.Complete(n)
		out = tx.TxTimestamps(out[:0])
		total += len(out)
	})
	if allocs != 0 {
		t.Errorf("SendFunc + TxTimestamps allocate %.1f times a call", allocs)
	}
	if total == 0 {
		t.Error("no stamps read")
	}
}

// TestTxTimestampsOff checks that a queue without WithTxTimestamps says so
// and returns no stamps.
func TestIntegrationTxTimestampsOff(t *testing.T) {
	pair := netns.New(t)
	a := openIn(t, pair.A, WithRxQueues(0))
	if a.Capabilities().TxTimestamps {
		t.Fatal("Capabilities().TxTimestamps is true without WithTxTimestamps")
	}
	sendFrames(t, a.TxQueue(0), [][]byte{testFrame(t, pair.B.MAC, 1, 64)})
	if got := a.TxQueue(0).(packetio.TimestampTransmitter).TxTimestamps(nil); got != nil {
		t.Fatalf("TxTimestamps returned %d stamps without WithTxTimestamps", len(got))
	}
}

// cmsg appends one control message to b, padded as the kernel pads it.
func cmsg(b []byte, level, typ uint32, data []byte) []byte {
	ne := binary.NativeEndian
	b = ne.AppendUint64(b, uint64(cmsgHdrLen+len(data)))
	b = ne.AppendUint32(b, level)
	b = ne.AppendUint32(b, typ)
	b = append(b, data...)
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return b
}

func stampCtl(sec, nsec int64, errno uint32, origin byte, info, key uint32) []byte {
	ne := binary.NativeEndian
	ts := make([]byte, scmTimestampingLen)
	ne.PutUint64(ts, uint64(sec))
	ne.PutUint64(ts[8:], uint64(nsec))
	ee := make([]byte, sockExtErrLen)
	ne.PutUint32(ee, errno)
	ee[4] = origin
	ne.PutUint32(ee[8:], info)
	ne.PutUint32(ee[12:], key)
	return cmsg(cmsg(nil, solSocket, soTimestamping, ts), solPacket, packetTxTimestamp, ee)
}

func TestParseTxStamp(t *testing.T) {
	good := stampCtl(1700000000, 5, enomsg, eeOriginTimestamping, scmTstampSnd, 7)
	for _, tc := range []struct {
		name string
		ctl  []byte
		key  uint32
		ns   uint64
		ok   bool
	}{
		{"departure", good, 7, 1700000000*1e9 + 5, true},
		{"empty", nil, 0, 0, false},
		{"truncated", good[:40], 0, 0, false},
		{"zero time", stampCtl(0, 0, enomsg, eeOriginTimestamping, scmTstampSnd, 7), 0, 0, false},
		{"bad nsec", stampCtl(1, 1e9, enomsg, eeOriginTimestamping, scmTstampSnd, 7), 0, 0, false},
		{"scheduler stamp", stampCtl(1, 1, enomsg, eeOriginTimestamping, 1, 7), 0, 0, false},
		{"other origin", stampCtl(1, 1, enomsg, 2, scmTstampSnd, 7), 0, 0, false},
		{"other errno", stampCtl(1, 1, 5, eeOriginTimestamping, scmTstampSnd, 7), 0, 0, false},
		{"length zero", append(make([]byte, 16), good...), 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, ns, ok := parseTxStamp(tc.ctl)
			if key != tc.key || ns != tc.ns || ok != tc.ok {
				t.Errorf("parseTxStamp = %d, %d, %v; want %d, %d, %v", key, ns, ok, tc.key, tc.ns, tc.ok)
			}
		})
	}
}

func TestWiden(t *testing.T) {
	for _, tc := range []struct {
		key        uint32
		last, want uint64
	}{
		{0, 0, 0},
		{5, 3, 5},
		{2, 5, 2},
		{0xffffffff, 0x1_0000_0001, 0xffffffff},
		{1, 0xffff_fff0, 0x1_0000_0001},
		{0xffff_fff0, 2, 0xffff_fff0},
	} {
		if got := widen(tc.key, tc.last); got != tc.want {
			t.Errorf("widen(%#x, %#x) = %#x, want %#x", tc.key, tc.last, got, tc.want)
		}
	}
}

// FuzzParseTxStamp checks that no control data makes the parser panic or
// report a zero stamp.
func FuzzParseTxStamp(f *testing.F) {
	f.Add(stampCtl(1700000000, 5, enomsg, eeOriginTimestamping, scmTstampSnd, 7))
	f.Add([]byte{})
	f.Add(make([]byte, 16))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, ns, ok := parseTxStamp(b); ok && ns == 0 {
			t.Fatal("a zero stamp reported ok")
		}
	})
}
