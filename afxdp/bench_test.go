package afxdp_test

import (
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/trafficgen"
)

// The benchmarks are those of afxdp/xdp (same veth, same frames, same
// feeder), driven through the packetio API, so the two sets side by side
// are what this layer costs. One queue, 64-byte frames, native copy mode
// (veth has no zero-copy); b.N is in packets.

func benchFrame() []byte {
	b := make([]byte, 60)
	copy(b, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x88, 0xb5})
	return b
}

var benchSteer = afxdp.WithSteering(testFilter)

// benchPlace keeps the measured worker on CPU 1, the feeder (and the
// kernel's half of receiving) on CPU 0.
var benchPlace = afxdp.WithHostTuning(xdp.Tuning{CPUs: []int{1}})

// feeder floods the device's end from the other namespace, from inside
// the kernel, until the benchmark ends.
func feeder(b *testing.B, h *netns.Host) {
	b.Helper()
	var f *trafficgen.Feed
	if err := h.Do(func() (err error) {
		f, err = trafficgen.StartFeed(h.Link, benchFrame(), trafficgen.WithCPU(0))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := f.Stop(); err != nil {
			b.Error(err)
		}
	})
}

func mpps(b *testing.B, n int, start time.Time) {
	b.ReportMetric(float64(n)/time.Since(start).Seconds()/1e6, "Mpps")
}

func BenchmarkTransmit(b *testing.B) {
	testenv.NeedBPF(b)
	p := netns.New(b)
	tx := openOn(b, p.A, afxdp.WithTransmitOnly(), benchPlace, afxdp.WithXDP(xdp.WithDriverMode())).TxQueue(0)
	frame := benchFrame()
	build := func(i int, f []byte) int { return copy(f, frame) }
	syscalls := testenv.CountSyscalls(b)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	sent := 0
	for sent < b.N {
		n, err := tx.SendFunc(min(benchBatch, b.N-sent), build)
		if err != nil {
			b.Fatal(err)
		}
		sent += n
	}
	for i := 0; i < 1000 && tx.NumInFlight() > 0; i++ {
		tx.Complete(1 << 20)
	}
	b.StopTimer()
	syscalls(sent)
	mpps(b, sent, start)
}

// benchBatch is the batch of every benchmark loop: what the packet-rate
// goals (at most one system call per 32 packets) are stated for.
const benchBatch = 64

func BenchmarkReceive(b *testing.B) { benchReceive(b) }

// BenchmarkReceiveStamped is BenchmarkReceive with WithTimestamps: the
// program stamps every frame, and the loop reads the stamps.
func BenchmarkReceiveStamped(b *testing.B) { benchReceive(b, afxdp.WithTimestamps()) }

// BenchmarkReceiveBusyPoll is BenchmarkReceive with WithBusyPoll(50, 64)
// and a loop that never sleeps in Poll: Poll(0) busy-polls the queue.
func BenchmarkReceiveBusyPoll(b *testing.B) { benchReceive(b, afxdp.WithBusyPoll(50, 64)) }

// BenchmarkReceiveNoSpin is BenchmarkReceive with WithPollSpin(-1): Poll
// sleeps in poll(2) whenever the ring is empty, as before the spin.
func BenchmarkReceiveNoSpin(b *testing.B) { benchReceive(b, afxdp.WithPollSpin(-1)) }

// BenchmarkReceiveUserProgram is BenchmarkReceive with the steering
// program loaded by the caller from SteeringSpec and handed over with
// WithProgram: the same program, the caller's to own.
func BenchmarkReceiveUserProgram(b *testing.B) {
	testenv.NeedBPF(b)
	open := hookOpener("user", benchPlace, afxdp.WithFrames(afxdp.DefaultFrames), afxdp.WithXDP(xdp.WithDriverMode()))
	benchReceiveOn(b, func(h *netns.Host, opts ...afxdp.Option) *afxdp.Device {
		var d packetio.Device
		if err := h.Do(func() (err error) { d, err = open(h.Link); return err }); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { d.Close() })
		return d.(userDevice).Device
	})
}

func benchReceive(b *testing.B, opts ...afxdp.Option) {
	benchReceiveOn(b, func(h *netns.Host, more ...afxdp.Option) *afxdp.Device {
		return openOn(b, h, append(append([]afxdp.Option{benchSteer, benchPlace, afxdp.WithXDP(xdp.WithDriverMode())}, opts...), more...)...)
	})
}

// benchReceiveOn measures the receive loop of the device open makes on
// the far end of a veth pair fed by the in-kernel generator.
func benchReceiveOn(b *testing.B, open func(h *netns.Host, opts ...afxdp.Option) *afxdp.Device) {
	testenv.NeedBPF(b)
	p := netns.New(b)
	dev := open(p.B)
	rx := dev.RxQueue(0)
	feeder(b, p.A)
	rx.Fill(rx.NumFreeFillSlots())
	wait := 5 * time.Second
	if dev.Info().BusyPoll != "off" {
		wait = 0 // busy-polling: never sleep
	}
	stamper, stamped := rx.(packetio.TimestampReceiver)
	stamped = stamped && dev.Capabilities().RxTimestamps
	syscalls := testenv.CountSyscalls(b)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	got := 0
	var idle time.Time // since when nothing has arrived
	for got < b.N {
		if _, err := rx.Poll(wait); err != nil {
			b.Fatal(err)
		}
		var descs []packetio.Desc
		if stamped {
			descs, _ = stamper.ReceiveTimestamps(benchBatch)
		} else {
			descs = rx.Receive(benchBatch)
		}
		got += len(descs)
		if len(descs) > 0 {
			idle = time.Time{}
		} else if idle.IsZero() {
			idle = time.Now()
		} else if time.Since(idle) > 5*time.Second {
			b.Fatalf("nothing for 5 s after %d packets", got) // a feeder that died: fail, never hang
		}
		rx.Recycle(descs)
		rx.Fill(rx.NumFreeFillSlots())
	}
	b.StopTimer()
	syscalls(got)
	mpps(b, got, start)
}

// BenchmarkForward receives, rewrites the source MAC in place, transmits
// back out of the same interface, and hands frames home with Reclaim.
func BenchmarkForward(b *testing.B) {
	testenv.NeedBPF(b)
	p := netns.New(b)
	d := openOn(b, p.B, benchSteer, benchPlace, afxdp.WithXDP(xdp.WithDriverMode()))
	rx, tx := d.RxQueue(0), d.TxQueue(0)
	feeder(b, p.A)
	rx.Fill(rx.NumFreeFillSlots())
	back := make([]packetio.Desc, 0, 4096)
	reg := rx.Region()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	fwd := 0
	for fwd < b.N {
		if n, err := rx.Poll(5 * time.Second); err != nil {
			b.Fatal(err)
		} else if n == 0 {
			b.Fatalf("nothing for 5 s after %d packets", fwd) // a feeder that died: fail, never hang
		}
		descs := rx.Receive(256)
		for _, desc := range descs {
			reg.Frame(desc)[11] = 2
		}
		n := tx.Transmit(descs)
		rx.Recycle(descs[n:]) // back-pressure: dropped, as a full NIC ring would
		fwd += n
		back = tx.Reclaim(1<<20, back[:0])
		rx.Recycle(back)
		rx.Fill(rx.NumFreeFillSlots())
	}
	b.StopTimer()
	mpps(b, fwd, start)
}
