package xdp_test

import (
	"encoding/binary"
	"os"
	"testing"
	"time"

	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/host"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/trafficgen"
)

// The benchmarks measure one queue of 64-byte frames on a veth pair: the
// receiver fed from inside the kernel by trafficgen (faster than any
// user-space sender here), the transmitter into a peer that drops what it
// gets. The measured worker runs on CPU 1 and the feeder, with the kernel's
// half of receiving, on CPU 0, as dpdk-testpmd places its lcores; left to
// the scheduler the two cores' work lands anywhere and the spread doubles.
// b.N is in packets; the Mpps metric is what to compare.

var benchModes = []struct {
	name string
	opt  xdp.Option
}{{"native", xdp.WithDriverMode()}, {"generic", xdp.WithGenericMode()}}

// BenchmarkReceiveStamped is BenchmarkReceive/native with arrival stamps
// (WithRxTimestamps), what the afxdp backend does by default.
func BenchmarkReceiveStamped(b *testing.B) {
	testenv.NeedBPF(b)
	p := netns.New(b)
	f := openFleet(b, p.B, xdp.WithFilter(filter.MatchEtherType(0x88b5)), xdp.WithNeedWakeup(), xdp.WithHostTuning(xdp.Tuning{CPUs: []int{1}}), xdp.WithDriverMode(), xdp.WithRxTimestamps())
	fd := startFeed(b, p)
	receiveLoop(b, f.Socket(0), false)
	if err := fd.Stop(); err != nil {
		b.Fatal(err)
	}
}

// startFeed floods p.B from p.A, from inside the kernel, on CPU 0 (a
// circuit where the kernel refuses live frames), until Stop.
func startFeed(b *testing.B, p *netns.Pair) *trafficgen.Feed {
	b.Helper()
	var fd *trafficgen.Feed
	if err := p.A.Do(func() (err error) {
		fd, err = trafficgen.StartFeed(p.A.Link, benchFrame(), trafficgen.WithCPU(0))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { fd.Stop() })
	return fd
}

func benchFrame() []byte {
	b := make([]byte, 60)
	copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x88, 0xb5})
	return b
}

func openFleet(b *testing.B, h *netns.Host, opts ...xdp.Option) *xdp.Fleet {
	b.Helper()
	var f *xdp.Fleet
	if err := h.Do(func() (err error) {
		f, err = xdp.Open(h.Link, opts...)
		return err
	}); err != nil {
		b.Fatalf("open %s: %v", h.Link, err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

// setGRO turns GRO on for h's interface (ETHTOOL_SGRO): a veth with a
// generic-mode program takes XDP frames from its peer only with NAPI on.
func setGRO(b *testing.B, h *netns.Host) {
	b.Helper()
	err := h.Do(func() error { return host.SetGRO(h.Link, true) })
	if err != nil {
		b.Fatalf("turn GRO on: %v", err)
	}
}

// With PACKETIO_BENCH_IFACE the benchmarks open that interface in the
// current namespace instead of a veth pair of their own, for comparisons
// with other tools on a veth a script made: BenchmarkTransmit sends on it,
// BenchmarkReceive takes what arrives there from a feeder the script runs
// at the other end, and BenchmarkFeed is that feeder (b.N frames from
// inside the kernel).
const benchIfaceEnv = "PACKETIO_BENCH_IFACE"

// receiveLoop receives b.N packets on s, blocking in Poll or, busy, spinning
// on the ring (waking a parked driver when it asks), and reports Mpps.
func receiveLoop(b *testing.B, s *xdp.Socket, busy bool) {
	s.Fill(s.NumFreeFillSlots())
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	got := 0
	idle, last := 0, start
	for got < b.N {
		if busy {
			if s.NumReceived() == 0 {
				if s.NeedsWakeupRx() {
					_ = s.WakeupRx()
				}
				if idle++; idle&(1<<20-1) == 0 && time.Since(last) > 5*time.Second {
					b.Fatalf("nothing for 5 s after %d packets", got)
				}
				continue
			}
			last = time.Now()
		} else if _, err := s.Poll(5 * time.Second); err != nil {
			b.Fatal(err)
		} else if s.NumReceived() == 0 {
			b.Fatalf("nothing for 5 s after %d packets", got)
		}
		descs := s.Receive(256)
		got += len(descs)
		s.Recycle(descs)
		s.Fill(s.NumFreeFillSlots())
	}
	elapsed := time.Since(start)
	b.StopTimer()
	st, _ := s.Stats()
	b.ReportMetric(float64(got)/elapsed.Seconds()/1e6, "Mpps")
	b.ReportMetric(st.PacketsPerPoll(), "pkt/poll")
	b.Logf("%v", st)
}

// BenchmarkReceive: one queue fed by trafficgen from the other namespace,
// blocking in Poll or busy-polling the ring, in native and generic mode.
func BenchmarkReceive(b *testing.B) {
	if iface := os.Getenv(benchIfaceEnv); iface != "" {
		f, err := xdp.Open(iface, xdp.WithFilter(filter.MatchEtherType(0x88b5)), xdp.WithNeedWakeup(), xdp.WithQueues(1), xdp.WithHostTuning(xdp.Tuning{CPUs: []int{1}}))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		receiveLoop(b, f.Socket(0), os.Getenv("PACKETIO_BENCH_BUSY") != "")
		return
	}
	for _, m := range benchModes {
		for _, busy := range []bool{false, true} {
			name := m.name
			if busy {
				name += "-busy"
			}
			b.Run(name, func(b *testing.B) {
				testenv.NeedBPF(b)
				p := netns.New(b)
				if m.name == "generic" {
					setGRO(b, p.B)
				}
				f := openFleet(b, p.B, xdp.WithFilter(filter.MatchEtherType(0x88b5)), xdp.WithNeedWakeup(), xdp.WithHostTuning(xdp.Tuning{CPUs: []int{1}}), m.opt)
				fd := startFeed(b, p)
				receiveLoop(b, f.Socket(0), busy)
				if err := fd.Stop(); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}

// BenchmarkFeed sends b.N 64-byte frames from inside the kernel out of
// $PACKETIO_BENCH_IFACE: the feeder of a comparison script.
func BenchmarkFeed(b *testing.B) {
	iface := os.Getenv(benchIfaceEnv)
	if iface == "" {
		b.Skip("the feeder of a comparison script: set " + benchIfaceEnv)
	}
	g, err := trafficgen.New(iface, benchFrame(), trafficgen.WithCPU(0))
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	b.ResetTimer()
	start := time.Now()
	for left := b.N; left > 0; {
		n := min(left, trafficgen.DefaultBatch)
		if _, err := g.Send(uint32(n)); err != nil {
			b.Fatal(err)
		}
		left -= n
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds()/1e6, "Mpps")
}

// transmitLoop sends b.N frames through SendFunc and reports Mpps.
func transmitLoop(b *testing.B, s *xdp.Socket) {
	frame := benchFrame()
	seq := uint32(0)
	build := func(i int, f []byte) int {
		n := copy(f, frame)
		binary.BigEndian.PutUint32(f[14:], seq)
		seq++
		return n
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	sent := 0
	for sent < b.N {
		n, err := s.SendFunc(min(256, b.N-sent), build)
		if err != nil {
			b.Fatal(err)
		}
		sent += n
	}
	for i := 0; i < 1000 && s.NumTransmitted() > 0; i++ {
		s.Complete(1 << 20)
		_ = s.Kick()
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(sent)/elapsed.Seconds()/1e6, "Mpps")
}

// BenchmarkTransmit: one queue sending 64-byte frames into a peer that
// drops them, in native and generic mode.
func BenchmarkTransmit(b *testing.B) {
	if iface := os.Getenv(benchIfaceEnv); iface != "" {
		f, err := xdp.Open(iface, xdp.WithFilter(filter.MatchNone()), xdp.WithNeedWakeup(), xdp.WithQueues(1), xdp.WithHostTuning(xdp.Tuning{CPUs: []int{1}}))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		transmitLoop(b, f.Socket(0))
		return
	}
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) {
			testenv.NeedBPF(b)
			p := netns.New(b)
			transmitLoop(b, openFleet(b, p.A, xdp.WithFilter(filter.MatchNone()), xdp.WithNeedWakeup(), xdp.WithHostTuning(xdp.Tuning{CPUs: []int{1}}), m.opt).Socket(0))
		})
	}
}

// BenchmarkForward receives, rewrites in place, transmits back out of the
// same interface and recycles what CompleteInto hands back: the forwarding
// cycle on the datapath itself, fed by trafficgen, native mode.
func BenchmarkForward(b *testing.B) {
	testenv.NeedBPF(b)
	p := netns.New(b)
	s := openFleet(b, p.B, xdp.WithFilter(filter.MatchEtherType(0x88b5)), xdp.WithNeedWakeup(), xdp.WithHostTuning(xdp.Tuning{CPUs: []int{1}}), xdp.WithDriverMode()).Socket(0)
	fd := startFeed(b, p)
	s.Fill(s.NumFreeFillSlots())
	mem := s.UMEM()
	addrs := make([]uint64, 0, 4096)
	back := make([]xdp.Desc, 0, 4096)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	fwd := 0
	for fwd < b.N {
		if _, err := s.Poll(5 * time.Second); err != nil {
			b.Fatal(err)
		}
		descs := s.Receive(256)
		for _, d := range descs {
			mem[d.Addr+11] = 2
		}
		n := s.Transmit(descs)
		s.Recycle(descs[n:])
		fwd += n
		addrs = s.CompleteInto(1<<20, addrs[:0])
		back = back[:0]
		for _, a := range addrs {
			back = append(back, xdp.Desc{Addr: a})
		}
		s.Recycle(back)
		s.Fill(s.NumFreeFillSlots())
	}
	b.StopTimer()
	b.ReportMetric(float64(fwd)/time.Since(start).Seconds()/1e6, "Mpps")
	if err := fd.Stop(); err != nil {
		b.Fatal(err)
	}
}
