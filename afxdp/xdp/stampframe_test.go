package xdp

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/netns"
)

// TestStampInFrame receives stamped frames, by each of the two stamped
// receive calls, out of frames whose bytes around the packet's start
// hold a stale pattern (a stamp, transmit metadata, a packet the frame
// carried before): every descriptor is the packet as sent, byte for byte,
// and every stamp is CLOCK_MONOTONIC between the send and the receive,
// never bytes left in the frame.
func TestStampInFrame(t *testing.T) {
	for _, receive := range []string{"ReceiveTimestamps", "ReceiveStamped"} {
		t.Run(receive, func(t *testing.T) {
			p := vethPair(t)
			f := openIn(t, p.B, WithFilter(filter.MatchEtherType(testEtherType)), WithRxTimestamps(), WithNumFrames(64))
			s := f.Socket(0)
			info, err := f.Info()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(info.Timestamps, "written into the frame ahead of the packet") {
				t.Errorf("Info().Timestamps %q: does not say where the stamp is written", info.Timestamps)
			}
			mem := s.UMEM()
			for base := 0; base+RxHeadroom+64 <= len(mem); base += s.FrameSize() {
				copy(mem[base+RxHeadroom-32:base+RxHeadroom+64], bytes.Repeat([]byte{0xa5}, 96))
			}
			tx := newRawSender(t, p.A)
			const n = 8
			var sent [n][]byte
			before := monotonicNS(t)
			for i := range n {
				sent[i] = testFrame(make([]byte, 128), uint32(i), 60+i)
				tx.send(t, sent[i])
			}
			got := 0
			for deadline := time.Now().Add(3 * time.Second); got < n && time.Now().Before(deadline); {
				if _, err := s.Poll(10 * time.Millisecond); err != nil {
					t.Fatal(err)
				}
				descs, stamps := receiveStamped(s, receive, 64)
				after := monotonicNS(t)
				for i, d := range descs {
					if got >= n {
						t.Fatalf("more than %d packets", n)
					}
					if b := s.UMEM()[d.Addr : d.Addr+uint64(d.Len)]; !bytes.Equal(b, sent[got]) {
						t.Errorf("packet %d: % x, want % x", got, b, sent[got])
					}
					if st, clock := s.Stamp(d); st != stamps[i] || clock != filter.ClockMonotonic || st < before || st > after {
						t.Errorf("packet %d: stamp %d (clock %d; %s %d), want CLOCK_MONOTONIC in [%d, %d]", got, st, clock, receive, stamps[i], before, after)
					}
					got++
				}
				s.Recycle(descs)
			}
			if got != n {
				t.Fatalf("received %d packets, want %d", got, n)
			}
			if st, err := s.Stats(); err != nil {
				t.Fatal(err)
			} else if st.Unstamped != 0 || st.StampsMonotonic != n {
				t.Errorf("Stats: %d unstamped, %d monotonic stamps, want 0 and %d", st.Unstamped, st.StampsMonotonic, n)
			}
		})
	}
}

// receiveStamped calls the stamped receive call named by call, for up to
// max descriptors.
func receiveStamped(s *Socket, call string, max int) ([]Desc, []uint64) {
	if call == "ReceiveStamped" {
		d, st, _ := s.ReceiveStamped(max)
		return d, st
	}
	return s.ReceiveTimestamps(max)
}

func monotonicNS(t *testing.T) uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

// TestStampInFrameMultiBuffer: 8000-byte frames arrive on a 9000-byte MTU
// pair as chains, stamped, by each of the two stamped receive calls: only
// a chain's first descriptor gives up the stamp's 16 bytes, every chain is
// the frame as sent, byte for byte, every descriptor of a chain has its
// stamp, one CLOCK_MONOTONIC time between the send and the receive, even
// where a chain spans two ReceiveTimestamps calls, ReceiveStamped returns
// whole chains only, and Stats counts one stamp a frame.
func TestStampInFrameMultiBuffer(t *testing.T) {
	for _, receive := range []string{"ReceiveTimestamps", "ReceiveStamped"} {
		t.Run(receive, func(t *testing.T) {
			p := vethPair(t, netns.WithMTU(9000))
			a := openIn(t, p.A, WithFilter(filter.MatchNone()), WithMultiBuffer()).Socket(0)
			b := openIn(t, p.B, WithFilter(filter.MatchEtherType(testEtherType)), WithMultiBuffer(), WithRxTimestamps()).Socket(0)
			var sent [][]byte
			for i := range 8 {
				sent = append(sent, testFrame(make([]byte, 8000), uint32(i), 7000+125*i))
			}
			b.Fill(b.NumFreeFillSlots())
			before := monotonicNS(t)
			for n, try := 0, 0; n < len(sent); try++ {
				if try == 100 {
					t.Fatalf("sent %d of %d frames", n, len(sent))
				}
				k, err := a.SendBatch(sent[n:])
				if err != nil {
					t.Fatalf("SendBatch: %v", err)
				}
				n += k
			}
			got := 0
			var chain []Desc // a frame's descriptors so far, across calls
			var chainStamps []uint64
			buf := make([]byte, 9000)
			for deadline := time.Now().Add(3 * time.Second); got < len(sent) && time.Now().Before(deadline); {
				if _, err := b.Poll(10 * time.Millisecond); err != nil {
					t.Fatal(err)
				}
				descs, stamps := receiveStamped(b, receive, 7)
				after := monotonicNS(t)
				for i, d := range descs {
					chain, chainStamps = append(chain, d), append(chainStamps, stamps[i])
					if d.Options&unix.XDP_PKT_CONTD != 0 {
						continue
					}
					if got >= len(sent) {
						t.Fatalf("more than %d frames", len(sent))
					}
					if len(chain) < 2 {
						t.Errorf("frame %d: %d bytes in one descriptor, want a chain", got, Packet(chain).Len())
					}
					for j, st := range chainStamps {
						if st != chainStamps[0] || st < before || st > after {
							t.Errorf("frame %d, descriptor %d: stamp %d (the first's %d), want the first's, in [%d, %d]", got, j, st, chainStamps[0], before, after)
						}
					}
					if n := b.CopyOut(Packet(chain), buf); !bytes.Equal(buf[:n], sent[got]) {
						t.Errorf("frame %d: %d bytes, not the %d sent", got, n, len(sent[got]))
					}
					if st, clock := b.Stamp(chain[0]); st != chainStamps[0] || clock != filter.ClockMonotonic {
						t.Errorf("frame %d: Stamp %d (clock %d), want %d, CLOCK_MONOTONIC", got, st, clock, chainStamps[0])
					}
					b.Recycle(chain)
					chain, chainStamps = chain[:0], chainStamps[:0]
					got++
				}
				if receive == "ReceiveStamped" && len(chain) > 0 {
					t.Fatalf("ReceiveStamped returned %d descriptors of a frame without its end", len(chain))
				}
				b.Fill(b.NumFreeFillSlots())
			}
			if got != len(sent) {
				st, _ := b.Stats()
				t.Fatalf("received %d of %d frames (%+v)", got, len(sent), st)
			}
			if st, err := b.Stats(); err != nil {
				t.Fatal(err)
			} else if st.Unstamped != 0 || st.StampsMonotonic != uint64(len(sent)) {
				t.Errorf("Stats: %d unstamped, %d monotonic stamps, want 0 and %d (one a frame)", st.Unstamped, st.StampsMonotonic, len(sent))
			}
		})
	}
}
