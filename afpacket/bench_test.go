//go:build linux

package afpacket

import (
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// The benchmarks run over a throwaway veth pair by default. With
// PACKETIO_BENCH_IFACE they open that interface in the current namespace
// instead (for comparisons with other tools on a veth made by a script):
// BenchmarkTransmit sends on it, and BenchmarkReceive and BenchmarkForward
// take what arrives there, from a sender the script runs at the other end.
const benchIfaceEnv = "PACKETIO_BENCH_IFACE"

// benchBlockEnv, when set, is the WithBlockSize of the receive benchmarks,
// for comparing ring geometries.
const benchBlockEnv = "PACKETIO_BENCH_BLOCK"

const benchFrameLen = 64 // bytes per frame, FCS excluded (what testpmd txonly sends)

var benchDst = net.HardwareAddr{0x02, 0, 0, 0, 0, 0x02}

// benchFrame is a 64-byte frame with our test EtherType.
func benchFrame() []byte {
	f := make([]byte, benchFrameLen)
	copy(f, benchDst)
	copy(f[6:], testSrcMAC)
	f[12], f[13] = 0x88, 0xb5
	return f
}

// benchOpen opens the device under test: on $PACKETIO_BENCH_IFACE, or on the
// B end of a new veth pair, whose A end it also returns for a feeder.
func benchOpen(b *testing.B, opts ...Option) (dut *Device, pair *netns.Pair) {
	b.Helper()
	if iface := os.Getenv(benchIfaceEnv); iface != "" {
		d, err := Open(iface, opts...)
		if err != nil {
			b.Fatalf("Open(%s): %v", iface, err)
		}
		b.Cleanup(func() { d.Close() })
		return d, nil
	}
	pair = netns.New(b)
	return openIn(b, pair.B, opts...), pair
}

// feed floods 64-byte frames from the A end of pair until stop is closed.
func feed(b *testing.B, pair *netns.Pair, stop chan struct{}) *sync.WaitGroup {
	b.Helper()
	src := openIn(b, pair.A, WithRxQueues(0))
	tx := src.TxQueue(0)
	frame := benchFrame()
	build := func(i int, f []byte) int { return copy(f, frame) }
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n, _ := tx.SendFunc(256, build); n == 0 {
				time.Sleep(20 * time.Microsecond)
			}
		}
	}()
	return &wg
}

// cpuTime is the user and system CPU time the process has used, in ns: a
// receiver that keeps up with its feeder is compared by what each packet
// costs it, not by the rate, which is the feeder's. (Meaningful with
// PACKETIO_BENCH_IFACE, where the feeder is another process.)
func cpuTime() int64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func reportPPS(b *testing.B, packets int) {
	b.ReportMetric(float64(packets)/b.Elapsed().Seconds(), "pkts/s")
}

// BenchmarkTransmit sends 64-byte frames as fast as SendFunc takes them,
// 256 a call; one op is one frame. syscalls/pkt is every system call the
// kernel counted on the sending thread (testenv.CountSyscalls) per frame.
func BenchmarkTransmit(b *testing.B) { benchTransmit(b, 256) }

// BenchmarkTransmit64 is BenchmarkTransmit with SendFunc(64).
func BenchmarkTransmit64(b *testing.B) { benchTransmit(b, 64) }

func benchTransmit(b *testing.B, batch int) {
	var tx packetio.TxQueue
	if os.Getenv(benchIfaceEnv) != "" {
		d, _ := benchOpen(b, WithRxQueues(0))
		tx = d.TxQueue(0)
	} else {
		pair := netns.New(b)
		tx = openIn(b, pair.A, WithRxQueues(0)).TxQueue(0)
	}
	frame := benchFrame()
	build := func(i int, f []byte) int { return copy(f, frame) }
	syscalls := testenv.CountSyscalls(b)
	b.ReportAllocs()
	b.ResetTimer()
	sent := 0
	for sent < b.N {
		n, err := tx.SendFunc(min(batch, b.N-sent), build)
		if err != nil {
			b.Fatal(err)
		}
		sent += n
	}
	b.StopTimer()
	syscalls(sent)
	reportPPS(b, sent)
	st, _ := tx.Stats()
	b.ReportMetric(float64(st.Packets)/float64(max(st.Batches, 1)), "pkts/call")
}

// BenchmarkTransmitCopy is BenchmarkTransmit through Alloc, a copy into
// each pool frame, Transmit and Complete (256 a batch): on the ring every
// frame is copied once more, from the pool frame into a slot, where SendFunc
// builds in the slot itself.
func BenchmarkTransmitCopy(b *testing.B) {
	var tx packetio.TxQueue
	if os.Getenv(benchIfaceEnv) != "" {
		d, _ := benchOpen(b, WithRxQueues(0))
		tx = d.TxQueue(0)
	} else {
		pair := netns.New(b)
		tx = openIn(b, pair.A, WithRxQueues(0)).TxQueue(0)
	}
	frame := benchFrame()
	reg := tx.Region()
	syscalls := testenv.CountSyscalls(b)
	b.ReportAllocs()
	b.ResetTimer()
	sent := 0
	for sent < b.N {
		tx.Complete(1 << 20)
		descs := tx.Alloc(min(256, b.N-sent))
		for i := range descs {
			descs[i].Len = uint32(copy(reg.Writable(descs[i]), frame))
		}
		n := tx.Transmit(descs)
		tx.Free(descs[n:])
		if err := tx.Err(); err != nil {
			b.Fatal(err)
		}
		sent += n
	}
	b.StopTimer()
	syscalls(sent)
	reportPPS(b, sent)
}

// BenchmarkReceive counts 64-byte frames arriving from a flooding sender,
// up to 1024 a Receive; one op is one received frame. syscalls/pkt is every
// system call the kernel counted on the receiving thread per frame (the
// queue's poll(2) when the ring is empty, and Go's runtime parking the
// thread).
func BenchmarkReceive(b *testing.B) { benchReceive(b, 1024) }

// BenchmarkReceive64 is BenchmarkReceive with Receive(64).
func BenchmarkReceive64(b *testing.B) { benchReceive(b, 64) }

// BenchmarkReceiveLowLatency is BenchmarkReceive on a TPACKET_V2 ring
// (WithLowLatency): what the per-packet hand-over costs under load.
func BenchmarkReceiveLowLatency(b *testing.B) { benchReceive(b, 1024, WithLowLatency()) }

func benchReceive(b *testing.B, batch int, opts ...Option) {
	if v := os.Getenv(benchBlockEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("%s=%q: %v", benchBlockEnv, v, err)
		}
		opts = append(opts, WithBlockSize(n))
	}
	d, pair := benchOpen(b, append(opts, WithTxQueues(0))...)
	rx := d.RxQueue(0)
	if pair != nil {
		stop := make(chan struct{})
		wg := feed(b, pair, stop)
		defer wg.Wait()
		defer close(stop)
	}
	syscalls := testenv.CountSyscalls(b)
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	got := 0
	deadline := time.Now().Add(time.Minute)
	for got < b.N {
		if _, err := rx.Poll(100 * time.Millisecond); err != nil {
			b.Fatal(err)
		}
		descs := rx.Receive(batch)
		got += len(descs)
		rx.Recycle(descs)
		if time.Now().After(deadline) {
			b.Fatalf("received %d of %d frames in a minute", got, b.N)
		}
	}
	b.StopTimer()
	syscalls(got)
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(max(got, 1)), "cpu-ns/pkt")
	reportPPS(b, got)
	st, _ := rx.Stats()
	b.ReportMetric(float64(st.Packets)/float64(max(st.Batches, 1)), "pkts/batch")
	b.ReportMetric(float64(st.Dropped), "kernel-drops")
}

// BenchmarkForward receives frames, rewrites their MACs in place and sends
// them back out of the same interface, handing the frames home with Reclaim
// and Recycle; one op is one forwarded frame.
func BenchmarkForward(b *testing.B) {
	d, pair := benchOpen(b)
	rx, tx := d.RxQueue(0), d.TxQueue(0).(*TxQueue)
	if pair != nil {
		stop := make(chan struct{})
		wg := feed(b, pair, stop)
		defer wg.Wait()
		defer close(stop)
	}
	back := make([]packetio.Desc, 0, maxPending)
	reg := rx.Region()
	b.ReportAllocs()
	b.ResetTimer()
	fwd := 0
	deadline := time.Now().Add(time.Minute)
	for fwd < b.N {
		if _, err := rx.Poll(100 * time.Millisecond); err != nil {
			b.Fatal(err)
		}
		descs := rx.Receive(256)
		for _, desc := range descs {
			f := reg.Frame(desc)
			copy(f[0:6], f[6:12])
			copy(f[6:12], benchDst)
		}
		n := tx.Transmit(descs)
		rx.Recycle(descs[n:]) // back-pressure: dropped, like a full NIC ring
		fwd += n
		back = tx.Reclaim(1<<20, back[:0])
		rx.Recycle(back)
		if time.Now().After(deadline) {
			b.Fatalf("forwarded %d of %d frames in a minute", fwd, b.N)
		}
	}
	b.StopTimer()
	reportPPS(b, fwd)
}

// BenchmarkRoundTrip bounces one 64-byte frame at a time across the veth
// pair: A sends, an echo goroutine on B receives it and sends it back, A
// receives it; one op is one round trip, both receivers sleeping in Poll.
// It runs with the default TPACKET_V3 rings and with WithLowLatency
// (TPACKET_V2) on both ends, and reports the mean (ns/op) and the median
// (p50-ns) round trip. It measures, it asserts nothing about time.
func BenchmarkRoundTrip(b *testing.B) {
	for _, c := range []struct {
		name string
		opts []Option
	}{{"V3", nil}, {"V2-LowLatency", []Option{WithLowLatency()}}} {
		b.Run(c.name, func(b *testing.B) { benchRoundTrip(b, c.opts...) })
	}
}

func benchRoundTrip(b *testing.B, opts ...Option) {
	pair := netns.New(b)
	opts = append(opts, WithFrames(256))
	a := openIn(b, pair.A, opts...)
	e := openIn(b, pair.B, opts...)
	frame := benchFrame()
	copy(frame, pair.B.MAC)
	build := func(i int, f []byte) int { return copy(f, frame) }

	// The echo: every frame of ours goes straight back to A.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		rx, tx := e.RxQueue(0), e.TxQueue(0)
		back := make([]packetio.Desc, 0, 64)
		drop := make([]packetio.Desc, 0, 64)
		done := make([]packetio.Desc, 0, maxPending)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := rx.Poll(50 * time.Millisecond); err != nil {
				return
			}
			ds := rx.Receive(64)
			back, drop = back[:0], drop[:0]
			for _, d := range ds {
				if f := rx.Region().Frame(d); len(f) >= 14 && f[12] == 0x88 && f[13] == 0xb5 {
					copy(f[0:6], f[6:12])
					copy(f[6:12], pair.B.MAC)
					back = append(back, d)
				} else {
					drop = append(drop, d)
				}
			}
			rx.Recycle(drop)
			n := tx.Transmit(back)
			rx.Recycle(back[n:])
			done = tx.Reclaim(1<<20, done[:0])
			rx.Recycle(done)
		}
	}()
	defer wg.Wait()
	defer close(stop)

	rx, tx := a.RxQueue(0), a.TxQueue(0)
	once := func() time.Duration {
		start := time.Now()
		for {
			if n, err := tx.SendFunc(1, build); err != nil {
				b.Fatal(err)
			} else if n == 1 {
				break
			}
			tx.Complete(1 << 20)
		}
		tx.Complete(1 << 20)
		for {
			if _, err := rx.Poll(time.Second); err != nil {
				b.Fatal(err)
			}
			ds := rx.Receive(64)
			got := false
			for _, d := range ds {
				if f := rx.Region().Frame(d); len(f) >= 14 && f[12] == 0x88 && f[13] == 0xb5 {
					got = true
				}
			}
			rx.Recycle(ds)
			if got {
				return time.Since(start)
			}
			if time.Since(start) > 5*time.Second {
				b.Fatal("the frame did not come back within 5 s")
			}
		}
	}
	for range 10 {
		once() // warm up: ARP-free, but the first packets fault the rings in
	}
	rtts := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		rtts = append(rtts, once())
	}
	b.StopTimer()
	slices.Sort(rtts)
	b.ReportMetric(float64(rtts[len(rtts)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(rtts[len(rtts)*99/100].Nanoseconds()), "p99-ns")
}
