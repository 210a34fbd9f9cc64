// Command dns is an authoritative DNS server for a small static zone that
// answers straight off the AF_XDP path: the XDP program steers UDP to port
// 53 (-port) to the sockets, everything else (ARP, TCP, other ports) goes
// on to the kernel, and each query is answered in the frame it arrived in,
// with no socket, no copy and no allocation per query.
//
//	-zone "www.example.test=192.0.2.10,www.example.test=2001:db8::10,mail.example.test=192.0.2.25"
//
// gives A and AAAA records (a name repeated for each address; TTL -ttl). A
// name the zone does not have is NXDOMAIN; a name it has, or an ancestor of
// one, asked for a type it has no records of, is an empty NOERROR. What the
// server does not handle is answered, never ignored: a class other than IN
// and zone transfers with REFUSED, an opcode other than QUERY with NOTIMP,
// an EDNS version other than 0 with BADVERS, a malformed message or one
// without exactly one question with FORMERR. A message that is a response,
// or too short to have a header, is dropped. The responses are
// authoritative (AA), never recursive (no RA), echo the query's EDNS with a
// 1232-byte payload size, and are truncated (TC, no answers) when they
// would not fit what the client can receive. The messages are read and
// written by package dnsmsg, beside this one, written for this program.
//
// With no -i it needs root and makes its own veth pair between two
// throwaway namespaces, serves a demonstration zone on one end, and from
// the other asks Go's own resolver (net.Resolver with PreferGo) for its
// names, A and AAAA, and for a name it lacks, checking every answer. With -i
// it serves on that interface until -duration passes or Ctrl-C, then prints
// what it answered; Ctrl-C always detaches the program and closes the
// sockets. On a live interface it takes every UDP datagram to the port,
// including queries for names it does not serve and replies to the host's
// own lookups that come from port 53 to it (keep -port 53 off the interface
// the host resolves through, or give the host another resolver).
//
// Its first line says what runs, read back from the fleet: interface,
// queues, attach mode, copy or zero-copy, need-wakeup, busy-poll, stamps,
// batch, the workers' CPUs, and what asks. -busy-poll makes every socket
// busy-poll its queue and the loops never sleep in Poll; -cpu pins the
// workers.
//
//	sudo go run ./examples/xdp/dns
//	sudo go run ./examples/xdp/dns -i eth1 -zone "ns.lab.test=10.0.0.53"
//
// Exit status: 0 on success (Ctrl-C with -i included), 1 if the fleet
// failed or (without -i) an answer was wrong, 2 for bad flags, 130 if
// Ctrl-C came before the check without -i was done.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/bed"
	"github.com/packetio/packetio/examples/internal/cpus"
	"github.com/packetio/packetio/examples/internal/inplace"
	"github.com/packetio/packetio/examples/internal/pkt"
	"github.com/packetio/packetio/examples/internal/ratelog"
	"github.com/packetio/packetio/examples/xdp/dns/dnsmsg"
	"github.com/packetio/packetio/filter"
)

// demoZone is served without -i.
const demoZone = "www.example.test=192.0.2.10,www.example.test=192.0.2.11,www.example.test=2001:db8::10," +
	"v4only.example.test=192.0.2.20,v6only.example.test=2001:db8::30"

type options struct {
	iface    string
	zone     string
	port     uint
	ttl      uint
	batch    int
	duration time.Duration
	cpu      string
	busyPoll bool
}

func main() {
	var o options
	flag.StringVar(&o.cpu, "cpu", "", "CPUs to pin the workers to, worker i on the i-th, e.g. 1 or 0,1 (default: the scheduler's choice)")
	flag.BoolVar(&o.busyPoll, "busy-poll", false, fmt.Sprintf("busy-poll every queue (SO_BUSY_POLL %dus, budget %d) and never sleep in Poll", backend.BusyPollUsecs, backend.BusyPollBudget))
	flag.StringVar(&o.iface, "i", "", "interface (default: a veth pair in throwaway namespaces, with Go's resolver on the far end; needs root)")
	flag.StringVar(&o.zone, "zone", "", `the zone: "name=addr,name=addr,..." (default without -i: a demonstration zone)`)
	flag.UintVar(&o.port, "port", 53, "UDP port to serve")
	flag.UintVar(&o.ttl, "ttl", 300, "TTL of every record, in seconds")
	flag.IntVar(&o.batch, "batch", 64, "most queries per Receive call")
	flag.DurationVar(&o.duration, "duration", 0, "with -i: how long to serve (default: until Ctrl-C)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, `usage: dns [-i IFACE -zone SPEC] [flags]

An authoritative DNS server for A and AAAA records of a static zone, answering
on the AF_XDP path (UDP to -port steered, everything else to the kernel).
Without -i it makes its own veth pair and checks answers with Go's resolver.
Ctrl-C stops it cleanly.
Exit status: 0 on success, 1 on failure or a wrong answer, 2 for bad flags,
130 if interrupted before the check without -i was done.

`)
		flag.PrintDefaults()
	}
	flag.Parse()
	if o.zone == "" && o.iface == "" {
		o.zone = demoZone
	}
	z, err := ParseZone(o.zone, uint32(o.ttl))
	if flag.NArg() > 0 || o.iface != "" && o.zone == "" || o.port == 0 || o.port > 65535 || o.ttl > 1<<31-1 || o.batch < 1 || o.batch > 1024 || o.duration < 0 || err != nil {
		if err != nil && o.zone != "" {
			fmt.Fprintln(os.Stderr, "dns: -zone:", err)
		}
		fmt.Fprintln(os.Stderr, "dns: -zone is required with -i; -port 1-65535, -ttl up to 2^31-1, -batch 1-1024")
		os.Exit(2)
	}
	if _, err := cpus.Parse(o.cpu); err != nil {
		fmt.Fprintln(os.Stderr, "dns:", err)
		os.Exit(2)
	}
	ctx, stop := bed.Interrupted()
	defer stop()
	if err := run(ctx, o, z, os.Stdout); err != nil {
		if ctx.Err() != nil && o.iface == "" {
			fmt.Fprintln(os.Stderr, "dns: interrupted before the check was done:", err)
			os.Exit(130)
		}
		fmt.Fprintln(os.Stderr, "dns:", err)
		os.Exit(1)
	}
}

// tuning is how the fleet runs, and what asks, for the first line.
func (o options) tuning(feed string) (inplace.Tuning, error) {
	pin, err := cpus.Parse(o.cpu)
	return inplace.Tuning{Program: "dns", Batch: o.batch, BusyPoll: o.busyPoll, CPUs: pin, Feed: feed}, err
}

func run(ctx context.Context, o options, z *Zone, w io.Writer) error {
	if o.iface != "" {
		if o.duration > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, o.duration)
			defer cancel()
		}
		t, err := o.tuning(fmt.Sprintf("answering queries to UDP port %d that arrive on %s", o.port, o.iface))
		if err != nil {
			return err
		}
		srv, err := start(ctx, bed.Named(o.iface), z, uint16(o.port), t, w)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "zone:\n%s\n", z)
		<-ctx.Done()
		return srv.stop(w)
	}
	pair, err := bed.NewPair(bed.AddrA, bed.AddrB)
	if err != nil {
		return err
	}
	defer pair.Close()
	t, err := o.tuning(fmt.Sprintf("asked by Go's resolver in %s's namespace, one query at a time", pair.B.Link))
	if err != nil {
		return err
	}
	srv, err := start(ctx, bed.Of(pair.A), z, uint16(o.port), t, w)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "no -i: made veth pair %s (%s) <-> %s (%s) in two throwaway namespaces\n", pair.A.Link, pair.A.Addr, pair.B.Link, pair.B.Addr)
	fmt.Fprintf(w, "zone:\n%s\n", z)
	server := fmt.Sprintf("%s:%d", pair.A.Addr.Addr(), o.port)
	fmt.Fprintf(w, "asking Go's resolver in %s's namespace, at %s:\n", pair.B.Link, server)
	bad := askAll(ctx, bed.Of(pair.B), server, z, w)
	serr := srv.stop(w)
	if bad > 0 {
		return fmt.Errorf("%d answer(s) wrong", bad)
	}
	fmt.Fprintln(w, "every answer right")
	return serr
}

// server is a running fleet and its workers.
type server struct {
	fleet    *xdp.Fleet
	workers  *inplace.Workers
	verdicts [numVerdicts]atomic.Uint64
	notDNS   atomic.Uint64 // taken by the program, not a datagram to the port
	ringFull atomic.Uint64
}

// start opens the fleet on p, steering UDP to port, and starts one worker
// per queue.
func start(ctx context.Context, p bed.Port, z *Zone, port uint16, t inplace.Tuning, w io.Writer) (*server, error) {
	// Answers go out in the frames queries came in.
	fleet, err := inplace.Open(p, filter.MatchUDPPort(port), t, w)
	if err != nil {
		return nil, err
	}
	srv := &server{fleet: fleet}
	log := ratelog.New(os.Stderr, time.Second)
	srv.workers = inplace.Start(ctx, fleet, t.CPUs, func(ctx context.Context, s *xdp.Socket) error {
		return srv.serve(ctx, s, z, port, t, log)
	})
	return srv, nil
}

// stop stops the workers, closes the fleet and prints what was answered.
func (srv *server) stop(w io.Writer) error {
	werr := srv.workers.Stop()
	st, serr := srv.fleet.Stats()
	cerr := srv.fleet.Close()
	var parts []string
	for v := range numVerdicts {
		if n := srv.verdicts[v].Load(); n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", v, n))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing")
	}
	fmt.Fprintf(w, "queries: %s; %d other frames taken, %d answers dropped on a full ring\n", strings.Join(parts, ", "), srv.notDNS.Load(), srv.ringFull.Load())
	if serr == nil {
		fmt.Fprintf(w, "fleet: %s\n", st)
	}
	return errors.Join(werr, cerr)
}

// serve is one queue's loop: each query is answered in the frame it came
// in (Receive, answer in place, Transmit, CompleteInto, Recycle).
func (srv *server) serve(ctx context.Context, s *xdp.Socket, z *Zone, port uint16, t inplace.Tuning, log *ratelog.Limiter) error {
	batch := t.Batch
	l := inplace.NewLoop(s, batch, t.BusyPoll)
	var q dnsmsg.Query
	recs := make([]dnsmsg.Record, 0, 32)
	var counts [numVerdicts]uint64
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
		clear(counts[:])
		other := 0
		for _, d := range descs {
			frame, ok := l.Room(d)
			if !ok {
				log.Printf("queue %d: descriptor %#x outside the UMEM", s.Queue(), d.Addr)
				drop = append(drop, d)
				continue
			}
			dg, err := pkt.Parse(frame[:d.Len])
			if err != nil || dg.DstPort != port {
				other++
				drop = append(drop, d)
				continue
			}
			// The answer is written over the query, in the room the
			// frame has after it.
			n, v := z.Answer(dg.Body(frame), &q, frame[dg.Payload:], recs)
			counts[v]++
			if n == 0 {
				drop = append(drop, d)
				continue
			}
			m := pkt.Reply(frame, dg, n)
			if m == 0 {
				log.Printf("queue %d: a %d-byte answer does not fit its frame", s.Queue(), n)
				drop = append(drop, d)
				continue
			}
			tx = append(tx, xdp.Desc{Addr: d.Addr, Len: uint32(m)})
		}
		if sent := l.Send(tx, drop); sent < len(tx) {
			srv.ringFull.Add(uint64(len(tx) - sent))
		}
		for v, n := range counts {
			if n > 0 {
				srv.verdicts[v].Add(n)
			}
		}
		if other > 0 {
			srv.notDNS.Add(uint64(other))
		}
	}
}
