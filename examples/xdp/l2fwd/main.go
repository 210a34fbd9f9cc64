// Command l2fwd is a two-port layer-2 forwarder on AF_XDP: every frame that
// arrives on -i leaves by -o, and every frame that arrives on -o leaves by
// -i, unchanged (or with its Ethernet addresses swapped, -macswap). Given
// only -i, it sends every frame back out of the port it came in by.
//
// Where the frame memory allows, a frame is forwarded in place. One
// interface is one Fleet and one UMEM, so bouncing a frame out of the port
// it came in by is the forwarding cycle on one socket, nothing copied:
//
//	Receive -> Transmit -> CompleteInto -> Recycle
//
// Two interfaces are two Fleets, and a UMEM is registered with the sockets
// of one Fleet only: a descriptor names bytes in its own socket's UMEM, and
// the other interface's sockets cannot send them. So between two ports each
// frame is copied once, from a receive frame of one UMEM into a transmit
// frame of the other:
//
//	Receive (X) -> Alloc (Y) -> copy -> Transmit (Y) -> Recycle (X) ... Complete (Y)
//
// (The kernel can share one UMEM between sockets of different devices, but
// the xdp Fleet keeps one UMEM per fleet, so this program copies.) A worker
// goroutine per direction and queue drives the receive side of one port's
// socket and the transmit side of the other's, which the datapath allows
// with no locks: the two sides of a socket have disjoint rings and pools.
//
// It takes every frame on the ports from the kernel (filter.MatchAll), as a
// wire would: on the interface you are logged in through that includes your
// session. -keep-management leaves ARP, neighbour discovery, SSH and DNS
// replies to the host instead, which keeps it reachable but stops those
// from crossing.
//
// With no -i it needs root and makes two veth pairs between throwaway
// namespaces, forwards between one end of each, and sends frames of every
// size from the far end of each pair, checking that each arrives at the far
// end of the other pair, byte for byte; -bounce does the same with one pair
// and one port. With -i it forwards until -duration passes or Ctrl-C, then
// prints its counters; Ctrl-C always detaches the programs and closes the
// sockets.
//
// Its first lines, one per port, say what runs, read back from the fleet:
// interface, queues, attach mode, copy or zero-copy, need-wakeup,
// busy-poll, stamps, batch, the workers' CPUs, and what feeds it.
// -busy-poll makes every socket busy-poll its queue and the loops never
// sleep in Poll; -cpu pins the workers.
//
//	sudo go run ./examples/xdp/l2fwd
//	sudo go run ./examples/xdp/l2fwd -bounce -busy-poll -cpu 1
//	sudo go run ./examples/xdp/l2fwd -i veth1 -o veth2
//
// Exit status: 0 on success (Ctrl-C with -i included), 1 if a fleet failed
// or (without -i) a frame did not arrive intact, 2 for bad flags, 130 if
// Ctrl-C came before the check without -i was done.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/bed"
	"github.com/packetio/packetio/examples/internal/cpus"
	"github.com/packetio/packetio/examples/internal/inplace"
	"github.com/packetio/packetio/filter"
)

type options struct {
	in, out  string
	batch    int
	duration time.Duration
	macswap  bool
	keepMgmt bool
	bounce   bool
	n        int
	cpu      string
	busyPoll bool
	feed     string // what feeds the ports, for the first lines
}

func main() {
	var o options
	flag.StringVar(&o.cpu, "cpu", "", "CPUs to pin the workers to, worker i on the i-th, e.g. 1 or 0,1 (default: the scheduler's choice)")
	flag.BoolVar(&o.busyPoll, "busy-poll", false, fmt.Sprintf("busy-poll every queue (SO_BUSY_POLL %dus, budget %d) and never sleep in Poll", backend.BusyPollUsecs, backend.BusyPollBudget))
	flag.StringVar(&o.in, "i", "", "first port (default: veth pairs in throwaway namespaces, with test traffic; needs root)")
	flag.StringVar(&o.out, "o", "", "second port (default: send frames back out of -i)")
	flag.IntVar(&o.batch, "batch", 64, "most frames per Receive call")
	flag.DurationVar(&o.duration, "duration", 0, "with -i: how long to forward (default: until Ctrl-C)")
	flag.BoolVar(&o.macswap, "macswap", false, "swap the Ethernet source and destination of every frame")
	flag.BoolVar(&o.keepMgmt, "keep-management", false, "leave ARP, neighbour discovery, SSH and DNS replies to the host, unforwarded")
	flag.BoolVar(&o.bounce, "bounce", false, "without -i: show one port sending frames back, instead of two ports")
	flag.IntVar(&o.n, "n", 200, "without -i: frames to send each way")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, `usage: l2fwd [-i PORT [-o PORT]] [flags]

Forwards every frame from -i to -o and back over AF_XDP (in place on one
port, one copy between two). It takes every frame on the ports from the
kernel, as a wire would: on the interface you are logged in through, your
session's too (see -keep-management). Without -i it makes its own veth pairs
and checks that frames cross byte for byte. Ctrl-C stops it cleanly.
Exit status: 0 on success, 1 on failure or a lost frame, 2 for bad flags,
130 if interrupted before the check without -i was done.

`)
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 || o.batch < 1 || o.batch > 1024 || o.duration < 0 || o.n < 1 || o.n > 10000 || (o.out != "" && o.in == "") || (o.out != "" && o.out == o.in) {
		fmt.Fprintln(os.Stderr, "l2fwd: -batch 1-1024, -n 1-10000, -o needs -i and another interface")
		os.Exit(2)
	}
	if _, err := cpus.Parse(o.cpu); err != nil {
		fmt.Fprintln(os.Stderr, "l2fwd:", err)
		os.Exit(2)
	}
	ctx, stop := bed.Interrupted()
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		if ctx.Err() != nil && o.in == "" {
			fmt.Fprintln(os.Stderr, "l2fwd: interrupted before the check was done:", err)
			os.Exit(130)
		}
		fmt.Fprintln(os.Stderr, "l2fwd:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, w io.Writer) error {
	if o.in != "" {
		if o.duration > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, o.duration)
			defer cancel()
		}
		ports := []bed.Port{bed.Named(o.in)}
		if o.out != "" {
			ports = append(ports, bed.Named(o.out))
		}
		o.feed = "forwarding what arrives"
		f, err := start(ctx, ports, o, w)
		if err != nil {
			return err
		}
		<-ctx.Done()
		return f.stop(w)
	}
	n := 2
	if o.bounce {
		n = 1
	}
	fwd, far := make([]bed.Port, n), make([]bed.Port, n)
	var made bytes.Buffer // said after the first lines
	for i := range n {
		p, err := bed.NewPair(netip.Prefix{}, netip.Prefix{})
		if err != nil {
			return err
		}
		defer p.Close()
		fwd[i], far[i] = bed.Of(p.A), bed.Of(p.B)
		fmt.Fprintf(&made, "no -i: made veth pair %s <-> %s in two throwaway namespaces\n", p.A.Link, p.B.Link)
	}
	o.feed = fmt.Sprintf("fed by %d test frames a port from a raw socket on the far end, one at a time", o.n)
	f, err := start(ctx, fwd, o, w)
	if err != nil {
		return err
	}
	w.Write(made.Bytes())
	res, terr := check(ctx, far, o.n, o.macswap, w)
	serr := f.stop(w)
	if terr != nil {
		return terr
	}
	fmt.Fprintf(w, "%d of %d frames arrived byte for byte\n", res.arrived, res.sent)
	if res.arrived != res.sent {
		return fmt.Errorf("%d frames lost or changed", res.sent-res.arrived)
	}
	return serr
}

// forwarder is the running fleets and workers.
type forwarder struct {
	fleets []*xdp.Fleet
	names  []string
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   chan error
	// forwarded[i] counts frames that left by port i, dropped[i] frames
	// that arrived on port i and could not be sent on.
	forwarded, dropped [2]atomic.Uint64
}

// start opens a fleet on each port and starts the workers: one per queue
// bouncing on one port, one per direction and transmit queue between two.
func start(ctx context.Context, ports []bed.Port, o options, w io.Writer) (*forwarder, error) {
	pin, err := cpus.Parse(o.cpu)
	if err != nil {
		return nil, err
	}
	f := &forwarder{}
	var infos []string
	for _, p := range ports {
		opts := []xdp.Option{xdp.WithFilter(filter.MatchAll()), xdp.WithNeedWakeup()}
		if o.busyPoll {
			opts = append(opts, xdp.WithBusyPoll(backend.BusyPollUsecs, backend.BusyPollBudget))
		}
		if o.keepMgmt {
			opts = append(opts, xdp.WithKeepManagement())
		}
		if len(ports) == 1 {
			// Received frames are what is sent: rings with room
			// for all of them, a token transmit pool.
			opts = append(opts, xdp.WithNumFrames(4096), xdp.WithTxFrames(64), xdp.WithRingSizes(2048, 4096, 2048, 4096))
		} else {
			opts = append(opts, xdp.WithNumFrames(4096))
		}
		var fl *xdp.Fleet
		if err := p.Do(func() (err error) { fl, err = xdp.Open(p.Name, opts...); return err }); err != nil {
			for _, o := range f.fleets {
				o.Close()
			}
			return nil, err
		}
		f.fleets, f.names = append(f.fleets, fl), append(f.names, p.Name)
		if info, err := fl.Info(); err == nil {
			fmt.Fprintln(w, backend.XDPLine("l2fwd", info, o.batch, pin, o.feed))
			infos = append(infos, info.String())
		}
	}
	for _, s := range infos {
		fmt.Fprintln(w, s)
	}
	ctx, f.cancel = context.WithCancel(ctx)
	f.errs = make(chan error, 4*xdp.MaxQueues)
	if len(f.fleets) == 1 {
		fmt.Fprintf(w, "forwarding %s back out of itself, in place\n", f.names[0])
		for i, s := range f.fleets[0].Sockets() {
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				if err := cpus.Pin(cpus.For(pin, i)); err != nil {
					f.report(err)
					return
				}
				f.report(bounce(ctx, s, o, &f.forwarded[0], &f.dropped[0]))
			}()
		}
		return f, nil
	}
	fmt.Fprintf(w, "forwarding %s <-> %s, one copy per frame (two UMEMs)\n", f.names[0], f.names[1])
	worker := 0
	for dir := range 2 {
		rx, tx := f.fleets[dir], f.fleets[1-dir]
		nrx, ntx := rx.NumQueues(), tx.NumQueues()
		// Transmit queue j is fed by the receive queues q with
		// q % ntx == j: every socket side has one goroutine.
		for j := range min(nrx, ntx) {
			var from []*xdp.Socket
			for q := j; q < nrx; q += ntx {
				from = append(from, rx.Socket(q))
			}
			cpu := cpus.For(pin, worker)
			worker++
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				if err := cpus.Pin(cpu); err != nil {
					f.report(err)
					return
				}
				f.report(cross(ctx, from, tx.Socket(j), o, &f.forwarded[1-dir], &f.dropped[dir]))
			}()
		}
	}
	return f, nil
}

func (f *forwarder) report(err error) {
	if err != nil {
		f.errs <- err
	}
}

// stop stops the workers, closes the fleets and prints the counters.
func (f *forwarder) stop(w io.Writer) error {
	f.cancel()
	f.wg.Wait()
	var errs []error
	for i, fl := range f.fleets {
		if st, err := fl.Stats(); err == nil {
			fmt.Fprintf(w, "%s: left by it %d, arrived and not sent on %d; %s\n", f.names[i], f.forwarded[i].Load(), f.dropped[i].Load(), st)
		}
		errs = append(errs, fl.Close())
	}
	close(f.errs)
	for err := range f.errs {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// swapMAC swaps a frame's Ethernet destination and source.
func swapMAC(b []byte) {
	if len(b) < 12 {
		return
	}
	var t [6]byte
	copy(t[:], b[0:6])
	copy(b[0:6], b[6:12])
	copy(b[6:12], t[:])
}

// bounce sends every frame s receives back out of s, in the frame it came
// in: Receive, Transmit, CompleteInto, Recycle, one goroutine for both
// sides of the socket.
func bounce(ctx context.Context, s *xdp.Socket, o options, forwarded, dropped *atomic.Uint64) error {
	macswap := o.macswap
	l := inplace.NewLoop(s, o.batch, o.busyPoll)
	for {
		descs, ok, err := l.Next(ctx)
		if !ok {
			return err
		}
		if len(descs) == 0 {
			continue
		}
		if macswap {
			for _, d := range descs {
				swapMAC(s.GetFrame(d))
			}
		}
		sent := l.Send(descs, nil)
		forwarded.Add(uint64(sent))
		if sent < len(descs) {
			dropped.Add(uint64(len(descs) - sent))
		}
	}
}

// cross forwards what the sockets of from receive out of to, copying each
// frame from from's UMEM into a transmit frame of to's: the receive frame
// goes straight back to its pool, the transmit frame comes back through
// Complete.
func cross(ctx context.Context, from []*xdp.Socket, to *xdp.Socket, o options, forwarded, dropped *atomic.Uint64) error {
	batch, macswap := o.batch, o.macswap
	wait := 100 * time.Millisecond
	switch {
	case o.busyPoll:
		wait = 0 // the kernel busy-polls the queue instead
	case len(from) > 1:
		wait = time.Millisecond // several queues to look at in turn
	}
	mem, frameSize := to.UMEM(), uint64(to.FrameSize())
	for ctx.Err() == nil {
		for _, r := range from {
			to.Complete(to.NumCompleted())
			r.Fill(r.NumFreeFillSlots())
			if _, err := r.Poll(wait); err != nil {
				if errors.Is(err, xdp.ErrClosed) {
					return nil
				}
				return err
			}
			descs := r.Receive(batch)
			if len(descs) == 0 {
				continue
			}
			out := to.Alloc(len(descs))
			k := min(len(out), len(descs))
			for i := range k {
				src := r.GetFrame(descs[i])
				end := out[i].Addr&^(frameSize-1) + frameSize
				dst := mem[out[i].Addr:end:end]
				out[i].Len = uint32(copy(dst, src))
				if macswap {
					swapMAC(dst)
				}
			}
			sent := to.Transmit(out[:k])
			if sent < len(out) {
				to.Free(out[sent:])
			}
			r.Recycle(descs)
			forwarded.Add(uint64(sent))
			if sent < len(descs) {
				dropped.Add(uint64(len(descs) - sent))
			}
		}
	}
	return nil
}
