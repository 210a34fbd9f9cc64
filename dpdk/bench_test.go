//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"sync"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afpacket"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// The benchmarks send and receive 64-byte frames (FCS excluded) over a
// throwaway veth pair, benchBatch a call, or over net_null to measure the
// backend's own cost, nullBatch a call. One op is one frame; pkts/s is the
// rate, syscalls/pkt the system calls the kernel counted on the loop's
// thread over the frames moved: the driver's kicks and wake-ups (packetio's
// queue makes none of its own while packets flow) and Go's runtime's.

// benchBatch is the batch the packet-rate goals are stated for (at most
// one system call per 32 packets at batch 64).
const benchBatch = 64

// nullBatch is net_null's batch, the one README.md's figures for
// BenchmarkTransmitNull and BenchmarkReceiveNull were taken with.
const nullBatch = 256

var benchFrame = func() []byte {
	f := make([]byte, 64)
	copy(f, []byte{0x02, 0, 0, 0, 0, 0x02, 0x02, 0, 0, 0, 0, 0x01, 0x88, 0xb5})
	return f
}()

func benchBuild(i int, f []byte) int { return copy(f, benchFrame) }

func benchOpenIn(b *testing.B, h *netns.Host, spec string, opts ...Option) *Device {
	b.Helper()
	var d *Device
	open := func() error {
		var err error
		d, err = Open(spec, append(append([]Option(nil), ealOpts...), opts...)...)
		return err
	}
	var err error
	if h == nil {
		err = open()
	} else {
		err = h.Do(open)
	}
	if err != nil {
		b.Fatalf("Open(%s): %v", spec, err)
	}
	b.Cleanup(func() { d.Close() })
	return d
}

func transmit(b *testing.B, tx packetio.TxQueue, batch int) {
	syscalls := testenv.CountSyscalls(b)
	b.ReportAllocs()
	b.ResetTimer()
	sent := 0
	for sent < b.N {
		n, err := tx.SendFunc(min(batch, b.N-sent), benchBuild)
		if err != nil {
			b.Fatal(err)
		}
		sent += n
	}
	b.StopTimer()
	syscalls(sent)
	b.ReportMetric(float64(sent)/b.Elapsed().Seconds(), "pkts/s")
}

// BenchmarkTransmitAFPacket sends on net_af_packet over a veth.
func BenchmarkTransmitAFPacket(b *testing.B) {
	p := netns.New(b)
	d := benchOpenIn(b, p.A, "net_af_packet0,iface="+p.A.Link, WithRxQueues(0))
	transmit(b, d.TxQueue(0), benchBatch)
}

// BenchmarkTransmitAFXDP sends on net_af_xdp over a veth. The driver needs
// the receive queue its transmit ring belongs to, so the port has one,
// never touched: the buffers it copies packets into come from there.
func BenchmarkTransmitAFXDP(b *testing.B) {
	testenv.NeedBPF(b)
	p := netns.New(b)
	d := benchOpenIn(b, p.A, "net_af_xdp0,iface="+p.A.Link)
	transmit(b, d.TxQueue(0), benchBatch)
}

// BenchmarkTransmitNull sends on net_null, which frees every mbuf in the
// burst: the backend's own transmit cost.
func BenchmarkTransmitNull(b *testing.B) {
	d := benchOpenIn(b, nil, "net_null0", WithRxQueues(0))
	transmit(b, d.TxQueue(0), nullBatch)
}

func receive(b *testing.B, rx packetio.RxQueue, batch int) {
	rx.Fill(rx.NumFreeFillSlots())
	syscalls := testenv.CountSyscalls(b)
	b.ReportAllocs()
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
		rx.Fill(rx.NumFreeFillSlots())
		if time.Now().After(deadline) {
			b.Fatalf("received %d of %d frames in a minute", got, b.N)
		}
	}
	b.StopTimer()
	syscalls(got)
	b.ReportMetric(float64(got)/b.Elapsed().Seconds(), "pkts/s")
}

// BenchmarkReceiveAFPacket receives on net_af_packet at the B end of a veth
// while the afpacket backend floods it from the A end, the same feeder the
// afpacket backend's own BenchmarkReceive uses.
func BenchmarkReceiveAFPacket(b *testing.B) {
	p := netns.New(b)
	d := benchOpenIn(b, p.B, "net_af_packet1,iface="+p.B.Link, WithTxQueues(1))
	defer flood(b, p.A)()
	receive(b, d.RxQueue(0), benchBatch)
}

// BenchmarkReceiveAFXDP receives on net_af_xdp at the B end of a veth,
// flooded from the A end by the same feeder as BenchmarkReceiveAFPacket.
func BenchmarkReceiveAFXDP(b *testing.B) {
	testenv.NeedBPF(b)
	p := netns.New(b)
	d := benchOpenIn(b, p.B, "net_af_xdp1,iface="+p.B.Link)
	defer flood(b, p.A)()
	receive(b, d.RxQueue(0), benchBatch)
}

// flood sends benchFrame from h's end of the veth with the afpacket backend
// as fast as it goes, until the returned function is called.
func flood(b *testing.B, h *netns.Host) (stop func()) {
	b.Helper()
	var src *afpacket.Device
	if err := h.Do(func() error {
		var err error
		src, err = afpacket.Open(h.Link, afpacket.WithRxQueues(0))
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { src.Close() })
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tx := src.TxQueue(0)
		for {
			select {
			case <-done:
				return
			default:
			}
			if n, _ := tx.SendFunc(256, benchBuild); n == 0 {
				time.Sleep(20 * time.Microsecond)
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// BenchmarkReceiveNull receives net_null's invented packets: the backend's
// own receive cost.
func BenchmarkReceiveNull(b *testing.B) {
	d := benchOpenIn(b, nil, "net_null0")
	receive(b, d.RxQueue(0), nullBatch)
}
