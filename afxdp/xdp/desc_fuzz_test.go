package xdp

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/pool"
	"github.com/packetio/packetio/internal/testenv"
)

// FuzzDescSequence turns the input into a sequence of frame moves, legal
// and not, on one AF_XDP socket over a veth (opened once per fuzz run, not
// per input, so BPF loads at a sane pace) fed by a second socket on the far
// end: no panic, every misuse refused (the pool does not grow, nothing is
// sent), counted in Stats().Rejected and reported by Misuse, and every
// frame accounted for (pool, caller, kernel) at the end of each input. A
// zero Desc is refused in every build; frames given away only in a
// packetio_checked one.
func FuzzDescSequence(f *testing.F) {
	f.Add([]byte{0, 1, 0, 10, 1, 0, 20, 0, 0})
	f.Add([]byte{50, 3, 0, 60, 3, 0, 70, 3, 0, 80, 3, 0, 90, 0, 0, 100, 8, 0, 110, 0, 0})
	f.Add([]byte{0, 7, 0, 10, 7, 0, 100, 1, 0, 101, 2, 0, 40, 7, 0, 30, 0, 0, 105, 3, 0})
	f.Add([]byte{0, 4, 0, 40, 4, 0, 200, 0, 0, 201, 1, 0, 90, 0, 0, 200, 2, 0, 190, 0, 0, 191, 0, 0})
	// fill, send, receive, recycle, fill again, recycle the stale frames
	f.Add([]byte{100, 7, 0, 120, 3, 0, 150, 7, 0, 170, 7, 0, 100, 7, 0, 200, 0, 0, 200, 8, 0, 200, 16, 0})
	testenv.NeedBPF(f)
	p := netns.New(f)
	a := fuzzSocket(f, p.A, WithFilter(filter.MatchEtherType(testEtherType)))
	b := fuzzSocket(f, p.B, WithFilter(filter.MatchNone()))
	f.Fuzz(func(t *testing.T, ops []byte) {
		m := newDescModel(t, a, b)
		for len(ops) >= 3 {
			m.step(ops[0], int(ops[1])%8+1, int(binary.LittleEndian.Uint16(ops[1:])>>3))
			ops = ops[3:]
		}
		m.drain()
	})
}

// fuzzSocket opens a one-queue fleet on h's link for the whole fuzz run and
// returns its socket.
func fuzzSocket(f *testing.F, h *netns.Host, opts ...Option) *Socket {
	var fl *Fleet
	err := h.Do(func() error {
		var err error
		fl, err = Open(h.Link, append(opts, WithRingSize(64), WithNumFrames(256), WithTxFrames(128))...)
		return err
	})
	if err != nil {
		f.Fatalf("open %s: %v", h.Link, err)
	}
	f.Cleanup(func() { fl.Close() })
	return fl.Socket(0)
}

// descModel is what the caller holds and gave away, and the counters each
// move must leave.
type descModel struct {
	t          *testing.T
	s, peer    *Socket
	txHeld     []Desc
	rxHeld     []Desc
	held       map[uint64]bool // frame starts the caller holds
	stale      []staleDesc
	rejected   uint64
	txStart    int
	rxStart    int
	frame      uint64 // frame size
	sequenceNo uint32
}

type staleDesc struct {
	d  Desc
	rx bool
}

func newDescModel(t *testing.T, s, peer *Socket) *descModel {
	st, err := s.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return &descModel{t: t, s: s, peer: peer, held: map[uint64]bool{}, rejected: st.Rejected,
		txStart: s.FreeTxFrames() + s.NumTransmitted(), rxStart: s.FreeRxFrames() + s.NumFilled(),
		frame: uint64(s.FrameSize())}
}

func (m *descModel) base(d Desc) uint64 { return d.Addr &^ (m.frame - 1) }

// step runs one move: op picks it, n is the batch size, pick the stale
// descriptor a misuse uses.
func (m *descModel) step(op byte, n, pick int) {
	switch {
	case op < 30:
		for _, d := range m.s.Alloc(n) {
			m.take(d, false)
		}
	case op < 60:
		m.transmit(n)
	case op < 70:
		m.s.Complete(n)
	case op < 80:
		for _, a := range m.s.CompleteInto(n, nil) {
			m.take(Desc{Addr: a, Len: 60}, false)
		}
	case op < 95:
		n = min(n, len(m.txHeld))
		batch := m.txHeld[len(m.txHeld)-n:]
		m.s.Free(batch)
		m.give(batch, false)
		m.txHeld = m.txHeld[:len(m.txHeld)-n]
	case op < 115:
		m.s.Fill(n)
	case op < 135:
		m.peer.Complete(1 << 10)
		m.peer.SendFunc(n, func(i int, f []byte) int { m.sequenceNo++; return len(testFrame(f, m.sequenceNo, 60)) })
	case op < 160:
		for _, d := range m.s.Receive(n) {
			m.take(d, true)
		}
	case op < 185:
		n = min(n, len(m.rxHeld))
		batch := m.rxHeld[len(m.rxHeld)-n:]
		m.s.Recycle(batch)
		m.give(batch, true)
		m.rxHeld = m.rxHeld[:len(m.rxHeld)-n]
	case op < 195:
		m.zero(op&1 == 0)
	default:
		m.misuse(pick)
	}
}

func (m *descModel) take(d Desc, rx bool) {
	b := m.base(d)
	if m.held[b] {
		m.t.Fatalf("frame %#x handed to the caller twice", b)
	}
	m.held[b] = true
	if rx {
		m.rxHeld = append(m.rxHeld, d)
	} else {
		m.txHeld = append(m.txHeld, d)
	}
}

func (m *descModel) give(ds []Desc, rx bool) {
	for _, d := range ds {
		delete(m.held, m.base(d))
		if len(m.stale) == 64 {
			m.stale = append(m.stale[:0], m.stale[32:]...)
		}
		m.stale = append(m.stale, staleDesc{d, rx})
	}
}

func (m *descModel) transmit(n int) {
	n = min(n, len(m.txHeld))
	batch := m.txHeld[len(m.txHeld)-n:]
	for i := range batch {
		m.sequenceNo++
		batch[i].Len = uint32(len(testFrame(m.s.Writable(batch[i]), m.sequenceNo, 60)))
	}
	got := m.s.Transmit(batch)
	if got < 0 || got > n {
		m.t.Fatalf("Transmit of %d took %d", n, got)
	}
	m.give(batch[:got], false)
	m.txHeld = append(m.txHeld[:len(m.txHeld)-n], batch[got:]...)
}

// zero hands a zero Desc to Transmit or (rx) Recycle.
func (m *descModel) zero(rx bool) {
	if rx {
		free := m.s.FreeRxFrames()
		m.s.Recycle([]Desc{{}})
		if m.s.FreeRxFrames() != free {
			m.t.Fatal("Recycle took a zero Desc")
		}
	} else {
		if m.s.NumFreeTxSlots() == 0 {
			return
		}
		if m.s.Transmit([]Desc{{}}) != 0 {
			m.t.Fatal("Transmit took a zero Desc")
		}
	}
	m.refused("a zero Desc")
}

// misuse hands on a frame the caller gave away: only a checked build can
// tell.
func (m *descModel) misuse(pick int) {
	if !pool.Checked() || len(m.stale) == 0 {
		return
	}
	sd := m.stale[pick%len(m.stale)]
	if m.held[m.base(sd.d)] {
		return // the caller holds it again
	}
	one := []Desc{sd.d}
	switch {
	case sd.rx:
		free := m.s.FreeRxFrames()
		m.s.Recycle(one)
		if m.s.FreeRxFrames() != free {
			m.t.Fatalf("Recycle of frame %#x given away was taken", sd.d.Addr)
		}
	case pick&1 == 0:
		free := m.s.FreeTxFrames()
		m.s.Free(one)
		if m.s.FreeTxFrames() != free {
			m.t.Fatalf("Free of frame %#x given away was taken", sd.d.Addr)
		}
	default:
		if m.s.NumFreeTxSlots() == 0 {
			return
		}
		if one[0].Len == 0 {
			one[0].Len = 60
		}
		if m.s.Transmit(one) != 0 {
			m.t.Fatalf("Transmit of frame %#x given away was taken", sd.d.Addr)
		}
	}
	m.refused("a frame given away")
}

// refused checks one more refusal was counted and a misuse reported.
func (m *descModel) refused(what string) {
	m.rejected++
	st, _ := m.s.Stats()
	if st.Rejected != m.rejected {
		m.t.Fatalf("%s: Rejected %d, want %d", what, st.Rejected, m.rejected)
	}
	if err := m.s.Misuse(); !errors.Is(err, packetio.ErrNotOwned) {
		m.t.Fatalf("%s: Misuse() = %v, want ErrNotOwned", what, err)
	}
}

// drain gives back what the caller holds, waits for the kernel to complete
// what is in flight, and checks that every frame is accounted for.
func (m *descModel) drain() {
	m.s.Free(m.txHeld)
	m.give(m.txHeld, false)
	m.txHeld = m.txHeld[:0]
	m.s.Recycle(m.rxHeld)
	m.give(m.rxHeld, true)
	m.rxHeld = m.rxHeld[:0]
	for i := 0; i < 500 && m.s.NumTransmitted() > 0; i++ {
		m.s.Kick()
		if m.s.Complete(1<<10) == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	m.peer.Complete(1 << 10)
	if got := m.s.FreeTxFrames() + m.s.NumTransmitted(); got != m.txStart || m.s.NumTransmitted() != 0 {
		m.t.Fatalf("transmit frames: pool %d + kernel %d, want %d and nothing in flight", m.s.FreeTxFrames(), m.s.NumTransmitted(), m.txStart)
	}
	if got := m.s.FreeRxFrames() + m.s.NumFilled(); got != m.rxStart {
		m.t.Fatalf("receive frames: pool %d + posted %d = %d, want %d", m.s.FreeRxFrames(), m.s.NumFilled(), got, m.rxStart)
	}
	if st, _ := m.s.Stats(); st.Rejected != m.rejected {
		m.t.Fatalf("Rejected %d, want %d: a legal move was refused", st.Rejected, m.rejected)
	}
}
