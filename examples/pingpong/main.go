// Command pingpong times round trips of single frames, and uses the device's
// receive timestamps to say how much of each trip was this host's own
// receive path: from the moment the reply was stamped on arrival to the
// moment the program saw it. One end measures; the other reflects frames
// back in place (Receive, swap addresses, Transmit, Reclaim, Recycle). With
// no -i it makes its own veth pair and runs the reflector on the far end,
// on -reflector (by default the measuring end's backend).
//
// The receive path is measured where the stamp is on a clock the program
// reads: afpacket stamps with CLOCK_REALTIME as the kernel queues the
// frame, afxdp on veth with CLOCK_MONOTONIC at the XDP hook (read back
// with clock_gettime(CLOCK_MONOTONIC), the clock of Go's monotonic time).
// On a backend that steers (afxdp) both ends take only UDP to port 7777.
//
// Where both stamps exist it also reports one-way latency: the departure
// stamp of each ping at the measuring end (afpacket, opened
// WithTxTimestamps: CLOCK_REALTIME as the driver takes the frame) to the
// reflector's arrival stamp, which the reflector writes into the frame it
// turns around (8 bytes and a clock tag behind the sequence number) when
// its stamps are on CLOCK_REALTIME. The first line ends with which stamps
// the one-way figure uses, or why there is none. Across two hosts it is as
// good as their clock synchronisation.
//
// Its first line says what runs: backend, interface, queues, the mode the
// kernel granted, need-wakeup, busy-poll, stamps (always asked for: they
// time the receive path), one frame per trip, the measuring worker's CPU,
// and what reflects. -busy-poll (afxdp) busy-polls both ends' queues and
// never sleeps in Poll; -cpu pins the measuring worker. A flag the backend
// has not got is refused (exit status 2).
//
//	sudo go run ./examples/pingpong -n 2000
//	sudo go run ./examples/pingpong -backend afxdp -n 2000
//	sudo go run ./examples/pingpong -i veth0 -mode reflect      # on one host
//	sudo go run ./examples/pingpong -i veth1 -mode measure      # on the other
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/cpus"
	"github.com/packetio/packetio/examples/internal/frame"
	"github.com/packetio/packetio/examples/internal/stamp"
	"github.com/packetio/packetio/examples/internal/testbed"
)

func main() {
	b := flag.String("backend", "afpacket", "backend: "+fmt.Sprint(backend.Names()))
	iface := flag.String("i", "", "interface (default: a veth pair in throwaway namespaces with the reflector on its far end; needs root)")
	mode := flag.String("mode", "measure", "measure or reflect")
	n := flag.Int("n", 10000, "round trips to time")
	lowLatency := flag.Bool("low-latency", false, "use the backend's low-latency receive mode (afpacket: TPACKET_V2 rings woken per packet)")
	reflector := flag.String("reflector", "", "backend of the reflector on the program's own veth pair (default: -backend; afpacket when that is dpdk, one EAL per process)")
	cpu := flag.String("cpu", "", "CPU to pin the measuring worker to, e.g. 1 (default: the scheduler's choice)")
	busyPoll := flag.Bool("busy-poll", false, fmt.Sprintf("busy-poll the queues (afxdp: SO_BUSY_POLL %dus, budget %d) and never sleep in Poll", backend.BusyPollUsecs, backend.BusyPollBudget))
	var c config
	testbed.Main("pingpong", "usage: pingpong [flags]\n\nTimes round trips of one frame at a time. Exit status: 0 on success, 1 on\nfailure (also if a reply never came), 2 for bad flags.\n\n", func() error {
		if (*mode != "measure" && *mode != "reflect") || *n < 1 || (*mode == "reflect" && *iface == "") {
			return errors.New("-mode measure|reflect (reflect needs -i), -n at least 1")
		}
		c = config{backend: *b, reflector: *reflector, iface: *iface, n: *n, lowLatency: *lowLatency, cpu: *cpu, busyPoll: *busyPoll}
		return c.check()
	}, func(ctx context.Context) error {
		var err error
		if *mode == "reflect" {
			err = reflectOn(ctx, c, os.Stdout)
		} else {
			_, err = measure(ctx, c, os.Stdout)
		}
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	})
}

// config is what measure needs.
type config struct {
	backend, reflector, iface string
	n                         int
	lowLatency, busyPoll      bool
	cpu                       string
}

// check refuses flags the backend has not got, and CPUs the machine has
// not got.
func (c config) check() error {
	if err := backend.CheckFlags(c.backend, backend.Flags{BusyPoll: c.busyPoll}); err != nil {
		return err
	}
	_, err := cpus.Parse(c.cpu)
	return err
}

// deviceConfig is what one end on backend b is opened with: on a backend
// that steers it takes only pingpong's frames (UDP to port 7777) from the
// kernel; busy-polling where b has it and it was asked for.
func (c config) deviceConfig(b string) backend.Config {
	steer := backend.Steering(b, packetio.SteeringFilter{Match: packetio.MatchDstPort(packetio.IPProtoUDP, port)})
	busy := c.busyPoll && backend.CheckFlags(b, backend.Flags{BusyPoll: true}) == nil
	return backend.Config{TxQueues: 1, RxQueues: 1, LowLatency: c.lowLatency, Steering: steer, Stamps: true, BusyPoll: busy}
}

// open opens one end on backend b.
func (c config) open(b string) func(string) (packetio.Device, error) {
	cfg := c.deviceConfig(b)
	return func(name string) (packetio.Device, error) { return backend.Open(b, name, cfg) }
}

// pollWait is how long a loop waits in Poll: not at all when busy-polling.
func pollWait(busy bool, d time.Duration) time.Duration {
	if busy {
		return 0
	}
	return d
}

func reflectOn(ctx context.Context, c config, w io.Writer) error {
	var setup bytes.Buffer
	bed, err := testbed.Setup(c.iface, &setup)
	if err != nil {
		return err
	}
	defer bed.Close()
	d, err := bed.Open(c.open(c.backend))
	if err != nil {
		return err
	}
	cfg := c.deviceConfig(c.backend)
	fmt.Fprintln(w, backend.Line{Program: "pingpong reflect", Backend: c.backend, Iface: bed.Name, Dev: d, Config: cfg, Rx: true, Tx: true, Batch: 64, Feed: "reflecting in place; ^C to stop"})
	w.Write(setup.Bytes())
	n, err := reflect(ctx, d, cfg.BusyPoll)
	fmt.Fprintf(w, "reflected %d frames\n", n)
	return err
}

// reflect sends every pingpong frame back where it came from, rewritten in
// the frame it arrived in, until ctx ends.
func reflect(ctx context.Context, d packetio.Device, busy bool) (int, error) {
	rx, tx := d.RxQueue(0), d.TxQueue(0)
	// Arrival stamps on a clock the measuring end can compare go into
	// each reflected frame (writeStamp), for its one-way figure.
	stamper, stamps := rx.(packetio.TimestampReceiver)
	tag := stampTag(stamp.Of(d))
	stamps = stamps && d.Capabilities().RxTimestamps && tag != tagNone
	rx.Fill(rx.NumFreeFillSlots())
	back := make([]packetio.Desc, 0, 256)
	keep := make([]packetio.Desc, 0, 64)
	drop := make([]packetio.Desc, 0, 64)
	total := 0
	for ctx.Err() == nil {
		if _, err := rx.Poll(pollWait(busy, 50*time.Millisecond)); err != nil {
			return total, err
		}
		keep, drop = keep[:0], drop[:0]
		var descs []packetio.Desc
		var ts []uint64
		if stamps {
			descs, ts = stamper.ReceiveTimestamps(64)
		} else {
			descs = rx.Receive(64)
		}
		for i, desc := range descs {
			f := rx.Region().Frame(desc)
			if payload, ok := swapAt(f); ok {
				if stamps {
					writeStamp(f, payload, ts[i], tag)
				}
				keep = append(keep, desc)
			} else {
				drop = append(drop, desc)
			}
		}
		rx.Recycle(drop)
		sent := tx.Transmit(keep)
		rx.Recycle(keep[sent:])
		total += sent
		back = tx.Reclaim(1<<20, back[:0])
		rx.Recycle(back)
		rx.Fill(rx.NumFreeFillSlots())
	}
	return total, nil
}

// swap turns a pingpong frame around: MACs, IPs and ports exchanged. It
// reports false for any other frame.
func swap(f []byte) bool {
	_, ok := swapAt(f)
	return ok
}

// swapAt is swap that also returns where the UDP payload starts.
func swapAt(f []byte) (int, bool) {
	in, ok := frame.Parse(f)
	if !ok || in.DstPort != port || in.SrcPort != port || !in.SrcIP.Is4() {
		return 0, false
	}
	var mac [6]byte
	copy(mac[:], f[0:6])
	copy(f[0:6], f[6:12])
	copy(f[6:12], mac[:])
	ip := f[in.L3:]
	var a [4]byte
	copy(a[:], ip[12:16])
	copy(ip[12:16], ip[16:20])
	copy(ip[16:20], a[:]) // the header checksum does not change
	return in.L4 + 8, true
}

const port = 7777

// trips is the result of a measurement.
type trips struct {
	rtt, rxPath []time.Duration
	// oneWay is departure stamp at this end to arrival stamp at the
	// reflector, where both are on CLOCK_REALTIME.
	oneWay []time.Duration
	clock  stamp.Clock
	first  string // the first line
}

func measure(ctx context.Context, c config, w io.Writer) (trips, error) {
	if err := c.check(); err != nil {
		return trips{}, err
	}
	// What Setup did is said after the first line.
	var setup bytes.Buffer
	bed, err := testbed.Setup(c.iface, &setup)
	if err != nil {
		return trips{}, err
	}
	defer bed.Close()
	openA, txc := c.openMeasuring(c.backend)
	d, err := bed.Open(openA)
	if err != nil {
		return trips{}, err
	}
	workers, _ := cpus.Parse(c.cpu)
	oneWay := oneWayLine(txc, tagNone, false)
	line := backend.Line{Program: "pingpong", Backend: c.backend, Iface: bed.Name, Dev: d, Config: c.deviceConfig(c.backend), Rx: true, Tx: true, Batch: 1, CPUs: workers,
		Feed: "sending one frame per trip, broadcast, to whatever reflects on " + bed.Name}
	if bed.Own() {
		rb := c.reflector
		if rb == "" {
			rb = c.backend
			if rb == "dpdk" {
				rb = "afpacket"
			}
		}
		peer, err := bed.OpenPeer(c.open(rb))
		if err != nil {
			return trips{}, fmt.Errorf("reflector: %w", err)
		}
		rcfg := c.deviceConfig(rb)
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); reflect(rctx, peer, rcfg.BusyPoll) }()
		defer func() { cancel(); <-done }()
		rt := backend.TraitsOf(rb, peer, rcfg)
		oneWay = oneWayLine(txc, stampTag(stamp.Of(peer)), true)
		line.Feed = fmt.Sprintf("sending one frame per trip to a reflector on %s: %s (%s, busy-poll %s), unpinned, turning each frame around in place", bed.Peer, rb, rt.Mode, rt.BusyPoll)
	}
	res := trips{first: line.String() + "; " + oneWay}
	fmt.Fprintln(w, res.first)
	w.Write(setup.Bytes())
	// The trips run on a worker of their own, pinned where -cpu says.
	var err2 error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err2 = cpus.Pin(cpus.For(workers, 0)); err2 == nil {
			res, err2 = timeTrips(ctx, c, bed, d, res, w)
		}
	}()
	<-done
	return res, err2
}

// timeTrips times c.n round trips on d.
func timeTrips(ctx context.Context, c config, bed *testbed.Bed, d packetio.Device, res trips, w io.Writer) (trips, error) {
	wait := pollWait(c.deviceConfig(c.backend).BusyPoll, time.Second)
	rx, tx := d.RxQueue(0), d.TxQueue(0)
	stamper, stamps := rx.(packetio.TimestampReceiver)
	stamps = stamps && d.Capabilities().RxTimestamps
	clock := stamp.Of(d)
	stamps = stamps && clock.Comparable()
	txs, departures := tx.(packetio.TimestampTransmitter)
	departures = departures && d.Capabilities().TxTimestamps
	txbuf := make([]packetio.TxStamp, 0, txStampCap)
	n := c.n
	spec := frame.Spec{SrcMAC: net.HardwareAddr{2, 0x70, 0x69, 0x6f, 0, 1}, DstMAC: net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		SrcIP: netip.MustParseAddr("10.99.0.1"), DstIP: netip.MustParseAddr("10.99.0.2"), SrcPort: port, DstPort: port, Size: 60}
	seqOff := spec.HeaderLen()
	rx.Fill(rx.NumFreeFillSlots())
	if stamps {
		fmt.Fprintf(w, "timing %d round trips of %d bytes on %s; arrival stamps: %s\n", n, spec.Len(), bed.Name, clock.Name)
	} else {
		fmt.Fprintf(w, "timing %d round trips of %d bytes on %s; no arrival stamps on a clock this program reads (%s)\n", n, spec.Len(), bed.Name, clock.Name)
	}
	res.rtt, res.clock = make([]time.Duration, 0, n), clock
	if stamps {
		res.rxPath = make([]time.Duration, 0, n)
	}
	if departures {
		res.oneWay = make([]time.Duration, 0, n)
	}
	// One build function for every trip (a closure made per trip would be
	// an allocation per packet): it writes the current sequence number.
	var cur uint32
	build := func(i int, f []byte) int {
		l := frame.Build(f, spec)
		binary.BigEndian.PutUint32(f[seqOff:], cur)
		return l
	}
	for seq := uint32(0); int(seq) < n && ctx.Err() == nil; seq++ {
		start := time.Now()
		cur = seq
		if sent, err := tx.SendFunc(1, build); err != nil || sent != 1 {
			return res, fmt.Errorf("send %d: %d sent, %v", seq, sent, err)
		}
		tx.Complete(1 << 20)
		got := false
		for deadline := start.Add(time.Second); !got && time.Now().Before(deadline); {
			if _, err := rx.Poll(min(wait, time.Until(deadline))); err != nil {
				return res, err
			}
			var descs []packetio.Desc
			var ts []uint64
			if stamps {
				descs, ts = stamper.ReceiveTimestamps(64)
			} else {
				descs = rx.Receive(64)
			}
			// The stamps' clock first, then the trip's: a receive
			// path then ends no later than its trip does, also when
			// the goroutine is preempted between the two reads (the
			// other order let a race build's 2 ms pause land in the
			// receive path and not in the trip).
			now := clock.Now()
			seen := time.Now()
			for i, desc := range descs {
				f := rx.Region().Frame(desc)
				in, ok := frame.Parse(f)
				if !ok || in.SrcIP != spec.DstIP || len(f) < seqOff+4 || binary.BigEndian.Uint32(f[seqOff:]) != seq {
					continue
				}
				got = true
				res.rtt = append(res.rtt, seen.Sub(start))
				if stamps {
					res.rxPath = append(res.rxPath, stamp.Since(now, ts[i]))
				}
				if departures {
					var left uint64
					left, txbuf = departure(txs, txbuf, uint64(seq))
					if arrived := readStamp(f, seqOff); left != 0 && arrived != 0 {
						res.oneWay = append(res.oneWay, time.Duration(int64(arrived-left)))
					}
				}
			}
			rx.Recycle(descs)
			rx.Fill(rx.NumFreeFillSlots())
		}
		if !got {
			return res, fmt.Errorf("no reply to frame %d within a second", seq)
		}
	}
	report(w, res)
	return res, ctx.Err()
}

func report(w io.Writer, r trips) {
	if len(r.rtt) == 0 {
		return
	}
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	q := func(s []time.Duration, p float64) time.Duration { return s[min(len(s)-1, int(float64(len(s))*p))] }
	slices.Sort(r.rtt)
	fmt.Fprintf(w, "%d round trips, microseconds: median %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
		len(r.rtt), us(q(r.rtt, 0.5)), us(q(r.rtt, 0.99)), us(q(r.rtt, 0.999)), us(r.rtt[len(r.rtt)-1]))
	if len(r.rxPath) > 0 {
		slices.Sort(r.rxPath)
		fmt.Fprintf(w, "this host's receive path (arrival stamp, %s, to the program seeing it): median %.1f us, %.0f%% of the median round trip\n",
			r.clock.Name, us(q(r.rxPath, 0.5)), 100*float64(q(r.rxPath, 0.5))/float64(q(r.rtt, 0.5)))
	}
	if len(r.oneWay) > 0 {
		slices.Sort(r.oneWay)
		fmt.Fprintf(w, "one-way to the reflector (departure stamp here to its arrival stamp, CLOCK_REALTIME), %d trips, microseconds: median %.1f  p99 %.1f  max %.1f\n",
			len(r.oneWay), us(q(r.oneWay, 0.5)), us(q(r.oneWay, 0.99)), us(r.oneWay[len(r.oneWay)-1]))
	}
}
