//go:build linux

package afpacket

import (
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/netns"
)

// The benchmarks run over a throwaway veth pair by default. With
// PACKETIO_BENCH_IFACE they open that interface in the current namespace
// instead (for comparisons with other tools on a veth made by a script):
// BenchmarkTransmit sends on it, and BenchmarkReceive and BenchmarkForward
// take what arrives there, from a sender the script runs at the other end.
const benchIfaceEnv = "PACKETIO_BENCH_IFACE"

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

func reportPPS(b *testing.B, packets int) {
	b.ReportMetric(float64(packets)/b.Elapsed().Seconds(), "pkts/s")
}

// BenchmarkTransmit sends 64-byte frames as fast as SendFunc takes them; one
// op is one frame.
func BenchmarkTransmit(b *testing.B) {
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
	b.ReportAllocs()
	b.ResetTimer()
	sent := 0
	for sent < b.N {
		n, err := tx.SendFunc(min(256, b.N-sent), build)
		if err != nil {
			b.Fatal(err)
		}
		sent += n
	}
	b.StopTimer()
	reportPPS(b, sent)
	st, _ := tx.Stats()
	b.ReportMetric(float64(st.Packets)/float64(max(st.Batches, 1)), "pkts/call")
}

// BenchmarkReceive counts 64-byte frames arriving from a flooding sender;
// one op is one received frame.
func BenchmarkReceive(b *testing.B) {
	d, pair := benchOpen(b, WithTxQueues(0))
	rx := d.RxQueue(0)
	if pair != nil {
		stop := make(chan struct{})
		wg := feed(b, pair, stop)
		defer wg.Wait()
		defer close(stop)
	}
	b.ReportAllocs()
	b.ResetTimer()
	got := 0
	deadline := time.Now().Add(time.Minute)
	for got < b.N {
		if _, err := rx.Poll(100 * time.Millisecond); err != nil {
			b.Fatal(err)
		}
		descs := rx.Receive(1024)
		got += len(descs)
		rx.Recycle(descs)
		if time.Now().After(deadline) {
			b.Fatalf("received %d of %d frames in a minute", got, b.N)
		}
	}
	b.StopTimer()
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
