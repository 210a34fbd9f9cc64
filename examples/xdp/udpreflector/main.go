// Command udpreflector answers every UDP datagram sent to -port with the
// same datagram, sent back to where it came from, from the frame it arrived
// in: the Ethernet and IP addresses and the ports swapped, the TTL reset,
// the IPv4 header checksum and the UDP checksum written afresh, nothing
// copied. It is the AF_XDP forwarding cycle on one socket:
//
//	Receive -> rewrite in place -> Transmit -> CompleteInto -> Recycle
//
// A received frame belongs to the socket's receive pool; once it has been
// transmitted the kernel hands its address back on the completion ring,
// CompleteInto returns the address instead of pooling it (Complete would
// put only transmit-pool frames back), and Recycle returns the frame to the
// receive pool to be filled again. The receive and transmit sides of a
// socket are then driven by one goroutine, because frames move between
// them: one goroutine per queue, no locks. The XDP program takes UDP to
// -port only (IPv4 and IPv6); everything else, ARP included, stays with the
// kernel, which is what lets the kernel answer the neighbour lookups that
// precede the datagrams. Fragmented datagrams are not taken (a fragment has
// no UDP header where the program looks, and IPv6 puts a Fragment header
// first): the kernel reassembles them, and answers that nothing listens.
//
// With no -i it needs root and makes its own veth pair between two
// throwaway namespaces, runs the reflector on one end, and from the other
// sends -n datagrams of assorted sizes through an ordinary kernel UDP
// socket, checking that each comes back byte for byte. With -i it reflects
// on that interface until -duration passes or Ctrl-C, then prints its
// counters; Ctrl-C always detaches the program and closes the sockets.
//
// Its first line says what runs, read back from the fleet: interface,
// queues, attach mode, copy or zero-copy, need-wakeup, busy-poll, stamps,
// batch, the workers' CPUs, and what feeds it. -busy-poll makes every
// socket busy-poll its queue and the loops never sleep in Poll; -cpu pins
// the workers.
//
//	sudo go run ./examples/xdp/udpreflector
//	sudo go run ./examples/xdp/udpreflector -i eth1 -port 7 -busy-poll -cpu 1
//
// Exit status: 0 on success (Ctrl-C with -i included), 1 if the fleet
// failed or (without -i) a datagram did not come back intact, 2 for bad
// flags, 130 if Ctrl-C came before the check without -i was done.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/bed"
	"github.com/packetio/packetio/examples/internal/cpus"
	"github.com/packetio/packetio/examples/internal/inplace"
	"github.com/packetio/packetio/examples/internal/pkt"
	"github.com/packetio/packetio/examples/internal/ratelog"
	"github.com/packetio/packetio/filter"
)

type options struct {
	iface    string
	port     uint
	batch    int
	duration time.Duration
	n        int
	cpu      string
	busyPoll bool
}

func main() {
	var o options
	flag.StringVar(&o.iface, "i", "", "interface (default: a veth pair in throwaway namespaces, with a kernel UDP client on the far end; needs root)")
	flag.UintVar(&o.port, "port", 9000, "UDP port to reflect")
	flag.IntVar(&o.batch, "batch", 64, "most datagrams per Receive call")
	flag.DurationVar(&o.duration, "duration", 0, "with -i: how long to run (default: until Ctrl-C)")
	flag.IntVar(&o.n, "n", 32, "without -i: datagrams the client sends")
	flag.StringVar(&o.cpu, "cpu", "", "CPUs to pin the workers to, worker i on the i-th, e.g. 1 or 0,1 (default: the scheduler's choice)")
	flag.BoolVar(&o.busyPoll, "busy-poll", false, fmt.Sprintf("busy-poll every queue (SO_BUSY_POLL %dus, budget %d) and never sleep in Poll", backend.BusyPollUsecs, backend.BusyPollBudget))
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, `usage: udpreflector [-i IFACE] [-port N] [flags]

Sends every UDP datagram to -port back where it came from, in the frame it
arrived in (AF_XDP: Receive, rewrite, Transmit, CompleteInto, Recycle).
Without -i it makes its own veth pair and checks that a kernel UDP client's
datagrams come back byte for byte. Ctrl-C stops it cleanly.
Exit status: 0 on success, 1 on failure or a datagram not echoed intact,
2 for bad flags, 130 if interrupted before the check without -i was done.

`)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 || o.port == 0 || o.port > 65535 || o.batch < 1 || o.batch > 1024 || o.duration < 0 || o.n < 1 || o.n > 100000 {
		fmt.Fprintln(os.Stderr, "udpreflector: -port 1-65535, -batch 1-1024, -n 1-100000, -duration not negative")
		os.Exit(2)
	}
	if _, err := cpus.Parse(o.cpu); err != nil {
		fmt.Fprintln(os.Stderr, "udpreflector:", err)
		os.Exit(2)
	}
	ctx, stop := bed.Interrupted()
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		if ctx.Err() != nil && o.iface == "" {
			fmt.Fprintln(os.Stderr, "udpreflector: interrupted before the check was done:", err)
			os.Exit(130)
		}
		fmt.Fprintln(os.Stderr, "udpreflector:", err)
		os.Exit(1)
	}
}

// tuning is how the fleet runs, and what feeds it, for the first line.
func (o options) tuning(feed string) (inplace.Tuning, error) {
	pin, err := cpus.Parse(o.cpu)
	return inplace.Tuning{Program: "udpreflector", Batch: o.batch, BusyPoll: o.busyPoll, CPUs: pin, Feed: feed}, err
}

func run(ctx context.Context, o options, w io.Writer) error {
	if o.iface != "" {
		if o.duration > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, o.duration)
			defer cancel()
		}
		t, err := o.tuning(fmt.Sprintf("reflecting UDP to port %d that arrives on %s", o.port, o.iface))
		if err != nil {
			return err
		}
		r, err := start(ctx, bed.Named(o.iface), uint16(o.port), t, w)
		if err != nil {
			return err
		}
		<-ctx.Done()
		return r.stop(w)
	}
	pair, err := bed.NewPair(bed.AddrA, bed.AddrB)
	if err != nil {
		return err
	}
	defer pair.Close()
	t, err := o.tuning(fmt.Sprintf("fed by a kernel UDP client in %s's namespace, %d datagrams to port %d, one at a time", pair.B.Link, o.n, o.port))
	if err != nil {
		return err
	}
	r, err := start(ctx, bed.Of(pair.A), uint16(o.port), t, w)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "no -i: made veth pair %s (%s) <-> %s (%s) in two throwaway namespaces\n", pair.A.Link, pair.A.Addr, pair.B.Link, pair.B.Addr)
	target := netip.AddrPortFrom(pair.A.Addr.Addr(), uint16(o.port))
	fmt.Fprintf(w, "a kernel UDP client in %s's namespace sends %d datagrams to %s\n", pair.B.Link, o.n, target)
	back, cerr := client(ctx, bed.Of(pair.B), target, o.n)
	serr := r.stop(w)
	if cerr != nil {
		return cerr
	}
	fmt.Fprintf(w, "%d of %d datagrams came back byte for byte\n", back, o.n)
	return serr
}

// reflector is a running fleet and its workers.
type reflector struct {
	fleet   *xdp.Fleet
	workers *inplace.Workers
	st      counters
}

// counters are summed over the workers, added once per batch.
type counters struct {
	reflected, notReflectable, ringFull atomic.Uint64
}

// start opens the fleet on port, taking UDP to udpPort, and starts one
// worker per queue.
func start(ctx context.Context, p bed.Port, udpPort uint16, t inplace.Tuning, w io.Writer) (*reflector, error) {
	fleet, err := inplace.Open(p, filter.MatchUDPPort(udpPort), t, w)
	if err != nil {
		return nil, err
	}
	r := &reflector{fleet: fleet}
	log := ratelog.New(os.Stderr, time.Second)
	r.workers = inplace.Start(ctx, fleet, t.CPUs, func(ctx context.Context, s *xdp.Socket) error {
		return reflect(ctx, s, udpPort, t, &r.st, log)
	})
	return r, nil
}

// stop stops the workers, then closes the fleet, and prints the counters.
func (r *reflector) stop(w io.Writer) error {
	werr := r.workers.Stop()
	st, serr := r.fleet.Stats()
	cerr := r.fleet.Close()
	fmt.Fprintf(w, "reflected %d datagrams, %d taken but not reflectable, %d dropped on a full transmit ring\n",
		r.st.reflected.Load(), r.st.notReflectable.Load(), r.st.ringFull.Load())
	if serr == nil {
		fmt.Fprintf(w, "fleet: %s\n", st)
	}
	return errors.Join(werr, cerr)
}

// reflect is one queue's loop: the forwarding cycle on one socket.
func reflect(ctx context.Context, s *xdp.Socket, port uint16, t inplace.Tuning, st *counters, log *ratelog.Limiter) error {
	batch := t.Batch
	l := inplace.NewLoop(s, batch, t.BusyPoll)
	tx := make([]xdp.Desc, 0, batch)
	drop := make([]xdp.Desc, 0, batch)
	for {
		descs, ok, err := l.Next(ctx)
		if !ok {
			return err
		}
		if len(descs) == 0 {
			continue
		}
		tx, drop = tx[:0], drop[:0]
		for _, d := range descs {
			frame, ok := l.Room(d)
			if !ok {
				log.Printf("queue %d: descriptor %#x outside the UMEM", s.Queue(), d.Addr)
				drop = append(drop, d)
				continue
			}
			dg, err := pkt.Parse(frame[:d.Len])
			if err != nil || dg.DstPort != port {
				if err == nil {
					err = fmt.Errorf("to port %d", dg.DstPort)
				}
				log.Printf("queue %d: %d-byte frame not reflected: %v", s.Queue(), d.Len, err)
				drop = append(drop, d)
				continue
			}
			n := pkt.Reply(frame, dg, dg.PayloadLen)
			if n == 0 {
				drop = append(drop, d)
				continue
			}
			tx = append(tx, xdp.Desc{Addr: d.Addr, Len: uint32(n)})
		}
		sent := l.Send(tx, drop)
		st.reflected.Add(uint64(sent))
		if sent < len(tx) {
			st.ringFull.Add(uint64(len(tx) - sent))
		}
		if len(drop) > 0 {
			st.notReflectable.Add(uint64(len(drop)))
		}
	}
}

// client sends n datagrams of assorted sizes to target from a kernel UDP
// socket opened in p's namespace, reads each reply, and returns how many
// came back byte for byte; a missing or changed reply is an error.
func client(ctx context.Context, p bed.Port, target netip.AddrPort, n int) (int, error) {
	var c *net.UDPConn
	if err := p.Do(func() (err error) {
		c, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(target))
		return err
	}); err != nil {
		return 0, err
	}
	defer c.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 2048)
	back := 0
	for i := range n {
		if ctx.Err() != nil {
			return back, ctx.Err()
		}
		// The largest is what fits a 1500-byte MTU unfragmented: a
		// fragment is not taken (the kernel reassembles it instead).
		largest := 1500 - 20 - 8
		if target.Addr().Is6() {
			largest = 1500 - 40 - 8
		}
		size := []int{1, 18, 64, 512, 1000, largest}[i%6]
		msg := make([]byte, size)
		for j := range msg {
			msg[j] = byte(rng.Uint32())
		}
		msg[0] = byte(i)
		got, err := roundTrip(c, msg, buf)
		if err != nil {
			return back, fmt.Errorf("datagram %d (%d bytes): %w", i, size, err)
		}
		if !bytes.Equal(got, msg) {
			return back, fmt.Errorf("datagram %d (%d bytes) came back changed", i, size)
		}
		back++
	}
	return back, nil
}

// roundTrip sends msg and waits for its echo, sending again a few times
// (the first datagram may wait on a neighbour lookup).
func roundTrip(c *net.UDPConn, msg, buf []byte) ([]byte, error) {
	for try := 0; try < 5; try++ {
		if _, err := c.Write(msg); err != nil {
			return nil, err
		}
		c.SetReadDeadline(time.Now().Add(time.Second))
		for {
			m, err := c.Read(buf)
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					break
				}
				return nil, err
			}
			if m > 0 && buf[0] == msg[0] && m == len(msg) {
				return buf[:m], nil
			}
			// an echo of an earlier try: read on
		}
	}
	return nil, errors.New("no echo after 5 tries")
}
