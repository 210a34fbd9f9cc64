package netstack

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/pipe"
)

// chainDevice is a pipe end that says it takes chains (MultiBuffer) of up
// to maxTx bytes and, with csum, finishes TCP checksums. Its transmit
// queues record every packet as the chain of descriptors it was handed, and
// then send the frames on as they are (the pipe has no chains).
type chainDevice struct {
	packetio.Device
	maxTx int
	csum  bool
	tx    []*chainTx
}

func (d *chainDevice) Capabilities() packetio.Capabilities {
	c := d.Device.Capabilities()
	c.MultiBuffer, c.MaxTxLen, c.TxChecksumOffload = true, d.maxTx, d.csum
	return c
}

func (d *chainDevice) TxQueue(i int) packetio.TxQueue { return d.tx[i] }

// chainTx records what it transmits: each packet's bytes, the length of
// each of its frames, and the Offload of each descriptor.
type chainTx struct {
	packetio.TxQueue
	packets [][]byte
	frames  [][]int
	offs    [][]packetio.Offload
	err     error // a chain rule broken
	open    bool  // the last packet's chain is not finished
	quiet   bool  // check the chain rules, record nothing
}

func (q *chainTx) Transmit(descs []packetio.Desc) int {
	return q.record(descs, nil)
}

func (q *chainTx) TransmitOffload(descs []packetio.Desc, offs []packetio.Offload) (int, error) {
	return q.record(descs, offs), nil
}

func (q *chainTx) record(descs []packetio.Desc, offs []packetio.Offload) int {
	for i, d := range descs {
		var o packetio.Offload
		if offs != nil {
			o = offs[i]
		}
		if o != (packetio.Offload{}) && q.open && q.err == nil {
			q.err = errors.New("an Offload inside a chain")
		}
		if !q.quiet {
			if !q.open {
				q.packets, q.frames, q.offs = append(q.packets, nil), append(q.frames, nil), append(q.offs, nil)
			}
			p := len(q.packets) - 1
			q.packets[p] = append(q.packets[p], q.Region().Frame(d)...)
			q.frames[p] = append(q.frames[p], int(d.Len))
			q.offs[p] = append(q.offs[p], o)
		}
		q.open = d.Options&packetio.OptContinued != 0
	}
	if q.open && q.err == nil {
		q.err = errors.New("a call ended inside a chain")
	}
	for i := range descs {
		descs[i].Options &^= packetio.OptContinued
	}
	return q.TxQueue.Transmit(descs)
}

// chainHarness is an endpoint with an MTU of 9000 on a chain device of
// 2,048-byte frames: a full packet takes five frames.
func chainHarness(t *testing.T, csum bool) (*endpoint, *chainTx, packetio.RxQueue) {
	t.Helper()
	da, db := devices(t, pipe.WithFrameSize(2048), pipe.WithFrames(4096))
	d := &chainDevice{Device: da, maxTx: 9014, csum: csum}
	for i := range da.NumTxQueues() {
		d.tx = append(d.tx, &chainTx{TxQueue: da.TxQueue(i)})
	}
	r, err := Config{Addr: mustPrefix("192.0.2.1/24"), Addr6: mustPrefix("fd00::1/64"), MAC: macA, MTU: 9000}.resolve(d.Capabilities())
	if err != nil {
		t.Fatal(err)
	}
	e := newEndpoint(d, &r, func(err error) { t.Errorf("endpoint failed: %v", err) })
	rx := db.RxQueue(0)
	rx.Fill(rx.NumFreeFillSlots())
	t.Cleanup(func() { rx.Recycle(rx.Receive(1 << 12)) })
	return e, d.tx[0], rx
}

// TestChainedTransmit: with an MTU above a frame on a multi-buffer device,
// a packet longer than a frame leaves as a chain of frames, OptContinued on
// all but the last, 2,048 bytes a frame; a GSO packet is cut into MSS-sized
// segments that are chains themselves. Every packet reassembled from its
// chain is a whole, correct TCP segment: lengths, IPv4 ID, sequence number,
// flags, and a valid checksum (finished here, or the pseudo-header sum and
// one checksum request on the chain's first descriptor for a device that
// finishes it).
func TestChainedTransmit(t *testing.T) {
	const mss = 8960 // 9000 less 20 of IPv4 and 20 of TCP
	for _, tc := range []struct {
		name  string
		data  int
		csum  bool
		v6    bool
		segs  int
		chain []int // frames per segment
	}{
		{"one packet", 8000, false, false, 1, []int{4}},
		{"one packet, device checksums", 8000, true, false, 1, []int{4}},
		{"segments", 30000, false, false, 4, []int{5, 5, 5, 2}},
		{"segments, device checksums", 30000, true, false, 4, []int{5, 5, 5, 2}},
		{"segments v6", 20000, false, true, 3, []int{5, 5, 2}},
		{"short segment in one frame", 8961, false, false, 2, []int{5, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, q, rx := chainHarness(t, tc.csum)
			data := randomBytes(t, tc.data)
			m := uint16(mss)
			if tc.v6 {
				m = mss - 20
			}
			pkt := gsoPacket(t, data, m, header.TCPFlagAck|header.TCPFlagPsh, tc.v6)
			defer pkt.DecRef()
			writeOne(t, e, pkt)
			if q.err != nil {
				t.Fatal(q.err)
			}
			if len(q.packets) != tc.segs {
				t.Fatalf("%d packets, want %d", len(q.packets), tc.segs)
			}
			var got []byte
			frames := 0
			for i, p := range q.packets {
				if len(q.frames[i]) != tc.chain[i] {
					t.Errorf("packet %d: %d frames %v, want %d", i, len(q.frames[i]), q.frames[i], tc.chain[i])
				}
				for j, n := range q.frames[i][:len(q.frames[i])-1] {
					if n != 2048 {
						t.Errorf("packet %d frame %d: %d bytes, want a full 2,048", i, j, n)
					}
				}
				frames += len(q.frames[i])
				fl := header.TCPFlags(header.TCPFlagAck)
				if i == tc.segs-1 {
					fl |= header.TCPFlagPsh
				}
				got = append(got, checkSegment(t, i, p, q.offs[i], tc.v6, tc.csum, uint32(1000+i*int(m)), fl)...)
			}
			if !bytes.Equal(got, data) {
				t.Error("the packets do not add up to the data")
			}
			st := e.stats.load()
			chained := 0
			for _, n := range tc.chain {
				chained += min(n-1, 1)
			}
			if st.TxChained != uint64(chained) || st.TxFrames != uint64(frames) || st.TxPackets != 1 || st.TxTooBig != 0 {
				t.Errorf("stats: chained %d, frames %d (want %d), packets %d, too big %d", st.TxChained, st.TxFrames, frames, st.TxPackets, st.TxTooBig)
			}
			if tc.segs > 1 && (st.GSOPackets != 1 || st.GSOFrames != uint64(tc.segs)) {
				t.Errorf("stats: GSO packets %d, segments %d; want 1, %d", st.GSOPackets, st.GSOFrames, tc.segs)
			}
			if d := rx.Receive(1 << 12); len(d) != frames {
				t.Errorf("the pipe carried %d frames, want %d", len(d), frames)
			} else {
				rx.Recycle(d)
			}
		})
	}
}

// TestChainedMTU: an MTU above a frame is taken on a device with
// MultiBuffer, up to what its link carries, and refused elsewhere with a
// message that says why.
func TestChainedMTU(t *testing.T) {
	da, _ := devices(t, pipe.WithFrameSize(2048))
	plain := da.Capabilities()
	multi := plain
	multi.MultiBuffer, multi.MaxTxLen = true, 9014
	for _, tc := range []struct {
		caps packetio.Capabilities
		mtu  int
		err  string
	}{
		{multi, 9000, ""},
		{multi, 9001, "MTU 9001 is above what the link carries (9014 bytes with a 14-byte link header: at most 9000)"},
		{plain, 2034, ""},
		{plain, 2035, "MTU 2035 does not fit a 2048-byte frame with a 14-byte link header (at most 2034; a device with multi-buffer takes more)"},
	} {
		_, err := Config{Addr: mustPrefix("192.0.2.1/24"), MTU: tc.mtu}.resolve(tc.caps)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("MTU %d, multi-buffer %v: %v; want %q", tc.mtu, tc.caps.MultiBuffer, err, tc.err)
		}
	}
}

// Chained transmit allocates nothing per packet either.
func TestChainedTransmitAllocations(t *testing.T) {
	for _, csum := range []bool{false, true} {
		e, q, rx := chainHarness(t, csum)
		q.quiet = true
		pkt := gsoPacket(t, randomBytes(t, 30000), 8960, header.TCPFlagAck, false)
		defer pkt.DecRef()
		e.AddHeader(pkt)
		tq := e.tx[0]
		allocs := writeAllocs(t, tq, rx, pkt)
		if q.err != nil {
			t.Fatal(q.err)
		}
		if allocs > 0 && !raceEnabled { // the race detector's sync.Pool drops items at random
			t.Errorf("device checksums %v: %.1f allocations per 4-segment chained packet", csum, allocs)
		}
	}
}

// TestChainedTooLong: a packet longer than the link carries, even as a
// chain, is refused with ErrMessageTooLong and counted in TxTooBig; no
// frame is taken from the queue and nothing is sent.
func TestChainedTooLong(t *testing.T) {
	e, q, _ := chainHarness(t, false)
	free := q.NumFreeFrames()
	pkt := gsoPacket(t, randomBytes(t, 9500), 9500, header.TCPFlagAck, false)
	defer pkt.DecRef()
	e.AddHeader(pkt)
	var list stack.PacketBufferList
	list.PushBack(pkt)
	n, err := e.WritePackets(list)
	if _, tooLong := err.(*tcpip.ErrMessageTooLong); n != 0 || !tooLong {
		t.Fatalf("WritePackets of a %d-byte packet on a 9,014-byte link: %d, %v; want 0, ErrMessageTooLong", pkt.Size(), n, err)
	}
	if st := e.stats.load(); st.TxTooBig != 1 || st.TxPackets != 0 || st.TxFrames != 0 || len(q.packets) != 0 || q.NumFreeFrames() != free {
		t.Errorf("too big %d, packets %d, frames %d, recorded %d, free frames %d (were %d)", st.TxTooBig, st.TxPackets, st.TxFrames, len(q.packets), q.NumFreeFrames(), free)
	}
}
