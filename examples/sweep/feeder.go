package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/cpus"
	"github.com/packetio/packetio/examples/internal/frame"
	"github.com/packetio/packetio/examples/internal/live"
	"github.com/packetio/packetio/examples/internal/testbed"
	"github.com/packetio/packetio/internal/csum"
	"github.com/packetio/packetio/internal/spinwait"
)

// target is where a feeder aims: the receiver's MAC, and an IPv4 address
// and UDP port. Flows differ in their UDP source port; with spread set
// (afpacket feeder only) they also differ in the last byte of the
// destination address (forward traffic spread over a /24 the router
// routes).
type target struct {
	dstMAC  net.HardwareAddr
	dstIP   netip.Addr
	dstPort uint16
	spread  bool
	size    int // frame length without FCS
}

// Feeders, by -feeder.
const (
	feederLive     = "live"
	feederAfpacket = "afpacket"
)

var feeders = []string{feederLive, feederAfpacket}

// A feeder offers traffic to the measured side from the peer, as fast as it
// can, so that the receiver, not the sender, is what is measured.
type feeder interface {
	// describe says what feeds, for the table header.
	describe() string
	// needsNAPI reports whether the measured end's veth must have its
	// NAPI on (a native XDP program, or GRO) to take what this feeder
	// sends: XDP frames do, a packet socket's skbs do not.
	needsNAPI() bool
	// start begins feeding t until the feed is stopped.
	start(ctx context.Context, t target) (*feeding, error)
	// close releases the feeder.
	close() error
}

// feeding is a feed in progress.
type feeding struct {
	// sent is the running total of frames offered.
	sent func() uint64
	// stop ends the feed, waits for it, and reports why it ended early,
	// if it did.
	stop func() error
}

// liveFeeder transmits from inside the kernel of the peer namespace: one
// trafficgen generator per queue of the row, generator i pinned to CPU i
// (of the CPUs this process may use), so a row of q queues is fed on q of
// the measured end's receive queues (a veth picks the queue an XDP frame
// lands on by the sending CPU). Each kind of frame gets its generators
// once, the first time it is asked for, and keeps them to the end: the
// programs are loaded a handful of times per sweep, never per cell.
//
// It runs in a process of its own, in the peer namespace (feederProc, the
// sweep's -run-feeder child), not in the sweep's.
//
// On a kernel that refuses live frames (trafficgen.Probe) live.Source runs
// a circuit instead (trafficgen.Circuit: frames going round a veth pair of
// the feeder's own, a copy out to the measured end each turn, in softirq
// on the generator's CPU). The sweep takes that only for rows of one
// queue: a circuit on every CPU leaves the processes measured too little
// (afpacket feeds those rows).
type liveFeeder struct {
	iface   string // the peer end, in this process's namespace
	srcMAC  net.HardwareAddr
	flows   int
	cpus    []int
	sources map[string]*live.Source // by target (MAC, address, port, size)
}

func newLiveFeeder(iface string, srcMAC net.HardwareAddr, flows int, cpus []int) *liveFeeder {
	return &liveFeeder{iface: iface, srcMAC: srcMAC, flows: flows, cpus: cpus, sources: map[string]*live.Source{}}
}

// describeLive says what the live feeder is, for the table header:
// circuits is the kernel's refusal of live frames where circuits feed,
// kept the CPUs its process keeps off.
func describeLive(circuits error, cpus, kept []int, flows int) string {
	proc := "in a process of its own (sweep -run-feeder), so that its Go runtime's sysmon, which wakes every 20 µs while a goroutine sits in a long system call, wakes in the feeder's process, not the one measured"
	if len(kept) > 0 {
		proc += fmt.Sprintf(", every thread of it kept off the loops' CPUs %v", kept)
	}
	if circuits != nil {
		return fmt.Sprintf("fed from the peer from inside its kernel by a circuit (internal/trafficgen.Circuit), since this kernel refuses the generator's live frames (%v): frames go round a veth pair of the feeder's own (XDP_TX at one end, at the other a broadcast redirect that sends each frame round again and a copy to the measured end), in softirq on CPU %v, %d flows (UDP source ports), %s; it offers less than the generator does (1-2.6 Mpps into a dropping XDP program here), so a cell at the offered rate measures the feeder; the measured end's veth takes those frames only while its NAPI is on, so every receiver but afxdp (native XDP) gets GRO turned on for its cell and back off after", circuits, cpus, flows, proc)
	}
	return fmt.Sprintf("fed from the peer from inside its kernel: one internal/trafficgen generator per queue of the row (BPF_PROG_RUN with live frames, XDP_TX), generator i pinned to CPU i, each with two threads on that CPU whose calls overlap, so the kernel's XDP dispatcher keeps its program between calls instead of stopping the feed for two RCU grace periods after each, "+
		"%d flows (UDP source ports), %s; the measured end's veth takes those frames only while its NAPI is on, so every receiver but afxdp (native XDP) gets GRO turned on for its cell and back off after", flows, proc)
}

// source returns the generators for t, loading them the first time.
func (f *liveFeeder) source(t target) (*live.Source, error) {
	key := fmt.Sprintf("%s %s %d %d", t.dstMAC, t.dstIP, t.dstPort, t.size)
	if s, ok := f.sources[key]; ok {
		return s, nil
	}
	spec := frame.Spec{SrcMAC: f.srcMAC, DstMAC: t.dstMAC, SrcIP: testbed.AddrB.Addr(), DstIP: t.dstIP, SrcPort: 1024, DstPort: t.dstPort, Size: t.size}
	if err := spec.Check(); err != nil {
		return nil, fmt.Errorf("feeder: %w", err)
	}
	buf := make([]byte, spec.Len())
	frame.Build(buf, spec)
	s, err := live.New(f.iface, buf, live.Flows{Offset: spec.HeaderLen() - 8, N: f.flows}, f.cpus)
	if err != nil {
		return nil, fmt.Errorf("feeder: %w (the live-frames feeder needs BPF; -feeder afpacket feeds without it)", err)
	}
	f.sources[key] = s
	return s, nil
}

// start begins feeding t; the feeder process (feedChild) runs one feed at
// a time.
func (f *liveFeeder) start(ctx context.Context, t target) (*feeding, error) {
	s, err := f.source(t)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var runErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, runErr = s.Run(ctx, 0)
	}()
	// The interface's counter moves as frames go; Sent only once a batch
	// (a quarter of a second or more), too coarse for a window.
	sent := func() uint64 {
		if n, err := s.Transmitted(); err == nil {
			return n
		}
		return s.Sent()
	}
	var once sync.Once
	return &feeding{sent: sent, stop: func() error {
		once.Do(func() {
			cancel()
			<-done
		})
		if runErr != nil {
			return fmt.Errorf("feeder: %w", runErr)
		}
		return nil
	}}, nil
}

func (f *liveFeeder) close() error {
	var errs []error
	for _, s := range f.sources {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	f.sources = map[string]*live.Source{}
	return errors.Join(errs...)
}

// afpacketFeeder transmits from the peer end of the pair through afpacket
// transmit queues, one per queue of the row, sender i pinned to CPU i,
// building frames in place in the queue's PACKET_TX_RING (whose slots are
// sized from the MTU at Open: 16 KiB on the jumbo pair, where its region
// frames are 16 KiB too, since SendFunc builds no longer a frame than a
// region frame holds, even on the ring). It needs no BPF,
// and offers what a user-space sender on a veth can: about a million
// frames a second, less than most receivers here take. It is the jumbo
// pair's feeder whatever -feeder says: the live generator's frames are at
// most a page.
type afpacketFeeder struct {
	dev     packetio.Device
	srcMAC  net.HardwareAddr
	srcIP   netip.Addr
	flows   int
	batch   int
	cpus    []int      // sender i's CPU
	running sync.Mutex // one feed at a time
	instead error      // why it feeds instead of the live feeder asked for, if it does
}

func newAfpacketFeeder(bed *testbed.Bed, srcMAC net.HardwareAddr, flows int, cpus []int, jumbo bool) (*afpacketFeeder, error) {
	c := backend.Config{TxQueues: len(cpus)}
	if jumbo {
		// SendFunc builds in a ring slot but no longer than a region
		// frame holds: 16 KiB frames, as big as the slots.
		c.FrameSize, c.Frames = jumboRingFrameSize, 1024*len(cpus)
	}
	d, err := bed.OpenPeer(func(name string) (packetio.Device, error) {
		return backend.Open("afpacket", name, c)
	})
	if err != nil {
		return nil, fmt.Errorf("feeder: open afpacket on %s: %w", bed.Peer, err)
	}
	return &afpacketFeeder{dev: d, srcMAC: srcMAC, srcIP: testbed.AddrB.Addr(), flows: flows, batch: 256, cpus: cpus}, nil
}

func (f *afpacketFeeder) describe() string {
	var why string
	if f.instead != nil {
		why = fmt.Sprintf("-feeder live was asked for, but this kernel refuses it (%v); instead, ", f.instead)
	}
	return why + fmt.Sprintf("fed by afpacket on the peer (one transmit queue per queue of the row, its TX ring, sender i pinned to CPU i, as fast as it goes, %d flows): a user-space sender, slower than most receivers here at small frames, so those cells measure the feeder", f.flows)
}

func (f *afpacketFeeder) needsNAPI() bool { return false }

func (f *afpacketFeeder) start(ctx context.Context, t target) (*feeding, error) {
	spec := frame.Spec{SrcMAC: f.srcMAC, DstMAC: t.dstMAC, SrcIP: f.srcIP, DstIP: t.dstIP, SrcPort: 1024, DstPort: t.dstPort, Size: t.size}
	if err := spec.Check(); err != nil {
		return nil, fmt.Errorf("feeder: %w", err)
	}
	f.running.Lock()
	ctx, cancel := context.WithCancel(ctx)
	var sent atomic.Uint64
	var wg sync.WaitGroup
	for q := 0; q < f.dev.NumTxQueues(); q++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if cpus.Pin(f.cpus[q%len(f.cpus)]) != nil {
				return // the cell sees no traffic, and says so
			}
			feed(ctx, f.dev.TxQueue(q), spec, f.flows, f.batch, q*7, t.spread, &sent)
		}()
	}
	var once sync.Once
	return &feeding{sent: sent.Load, stop: func() error {
		once.Do(func() {
			cancel()
			wg.Wait()
			f.running.Unlock()
		})
		return nil
	}}, nil
}

func (f *afpacketFeeder) close() error { return f.dev.Close() }

// feed sends spec on flows flows, starting at flow first, until ctx ends.
// Errors from the queue end the feed: the measured side then sees no
// traffic, which its cell shows.
func feed(ctx context.Context, tx packetio.TxQueue, spec frame.Spec, flows, batch, first int, spread bool, sent *atomic.Uint64) {
	l4 := spec.HeaderLen() - 8
	tmpl := make([]byte, spec.Len())
	frame.Build(tmpl, spec)
	flow := first
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
			spinwait.Sleep(20 * time.Microsecond)
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
		c := csum.Checksum(b[14:34], 0)
		b[24], b[25] = byte(c>>8), byte(c)
	}
}
