package main

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/frame"
	"github.com/packetio/packetio/examples/internal/testbed"
)

// target is where a feeder aims: the receiver's MAC, and an IPv4 address
// and UDP port. Flows differ in their UDP source port; with spread set
// they also differ in the last byte of the destination address (forward
// traffic spread over a /24 the router routes).
type target struct {
	dstMAC  net.HardwareAddr
	dstIP   netip.Addr
	dstPort uint16
	spread  bool
}

// A feeder offers traffic to the measured side from the peer, as fast as it
// can, so that the receiver, not the sender, is what is measured. The
// spec'd source is the kernel's live-frames generator, which needs BPF; on
// a machine without it, the afpacket feeder stands in. Another source
// plugs in by implementing this.
type feeder interface {
	// describe says what feeds, for the table header.
	describe() string
	// start begins feeding t until the feed is stopped.
	start(ctx context.Context, t target) (*feeding, error)
	// close releases the feeder.
	close() error
}

// feeding is a feed in progress.
type feeding struct {
	// sent is the running total of frames offered.
	sent func() uint64
	// stop ends the feed and waits for it.
	stop func()
}

// afpacketFeeder transmits from the peer end of the pair through one
// afpacket transmit queue, building frames in place.
type afpacketFeeder struct {
	dev     packetio.Device
	srcMAC  net.HardwareAddr
	srcIP   netip.Addr
	size    int // frame length without FCS
	flows   int
	batch   int
	running sync.Mutex // one feed at a time
}

func newAfpacketFeeder(bed *testbed.Bed, srcMAC net.HardwareAddr, size, flows int) (*afpacketFeeder, error) {
	d, err := bed.OpenPeer(func(name string) (packetio.Device, error) {
		return backend.Open("afpacket", name, backend.Config{TxQueues: 1})
	})
	if err != nil {
		return nil, fmt.Errorf("feeder: open afpacket on %s: %w", bed.Peer, err)
	}
	return &afpacketFeeder{dev: d, srcMAC: srcMAC, srcIP: testbed.AddrB.Addr(), size: size, flows: flows, batch: 256}, nil
}

func (f *afpacketFeeder) describe() string {
	return fmt.Sprintf("fed by afpacket on the peer (one transmit queue, as fast as it goes, %d flows); the live-frames source the spec asks for needs BPF, which this machine cannot load", f.flows)
}

func (f *afpacketFeeder) start(ctx context.Context, t target) (*feeding, error) {
	spec := frame.Spec{SrcMAC: f.srcMAC, DstMAC: t.dstMAC, SrcIP: f.srcIP, DstIP: t.dstIP, SrcPort: 1024, DstPort: t.dstPort, Size: f.size}
	if err := spec.Check(); err != nil {
		return nil, fmt.Errorf("feeder: %w", err)
	}
	f.running.Lock()
	ctx, cancel := context.WithCancel(ctx)
	var sent atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		feed(ctx, f.dev.TxQueue(0), spec, f.flows, f.batch, t.spread, &sent)
	}()
	var once sync.Once
	return &feeding{sent: sent.Load, stop: func() {
		once.Do(func() {
			cancel()
			<-done
			f.running.Unlock()
		})
	}}, nil
}

func (f *afpacketFeeder) close() error { return f.dev.Close() }

// feed sends spec on flows flows until ctx ends. Errors from the queue end
// the feed: the measured side then sees no traffic, which its cell shows.
func feed(ctx context.Context, tx packetio.TxQueue, spec frame.Spec, flows, batch int, spread bool, sent *atomic.Uint64) {
	l4 := spec.HeaderLen() - 8
	tmpl := make([]byte, spec.Len())
	frame.Build(tmpl, spec)
	flow := 0
	build := func(i int, b []byte) int {
		n := copy(b, tmpl)
		if n < len(tmpl) {
			return 0
		}
		setFlow(b, l4, (flow+i)%flows, spread)
		return n
	}
	for ctx.Err() == nil {
		n, err := tx.SendFunc(batch, build)
		if err != nil {
			return
		}
		flow += n
		sent.Add(uint64(n))
		if n == 0 {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// setFlow makes an untagged IPv4/UDP frame, whose UDP header starts at l4,
// flow number flow: source port 1024+flow and, with spread, the last byte
// of the destination address too (the header checksum follows).
func setFlow(b []byte, l4, flow int, spread bool) {
	port := 1024 + flow
	b[l4], b[l4+1] = byte(port>>8), byte(port)
	if spread {
		b[33] = byte(flow + 1)
		b[24], b[25] = 0, 0
		c := frame.Checksum(b[14:34], 0)
		b[24], b[25] = byte(c>>8), byte(c)
	}
}
