// Package trafficgen transmits frames from inside the kernel, faster than
// any user-space sender can on a veth pair: it runs a tiny XDP program
// through BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES, and every run
// returns XDP_TX, so the kernel sends the frame out of the interface named
// in the program's context (the way xdp-tools' xdp-trafficgen works).
//
// It exists to measure receivers. On veth every user-space sender (a packet
// socket, sendmmsg, AF_XDP in copy mode) builds a kernel buffer per frame
// and tops out near a million frames a second per core; this one reuses a
// pool of pages and reaches several times that, so what a benchmark
// measures is the receiver, not the sender.
//
// # What it needs
//
// Linux 5.18 or later that lets programs run on live frames (a kernel can
// forbid it: New then fails with packetio.ErrUnsupported, quoting the
// refusal; Probe asks without sending, and a Circuit feeds without live
// frames, slower), root (CAP_BPF and CAP_NET_ADMIN), and an interface
// whose driver can transmit XDP frames (ndo_xdp_xmit). A veth transmits
// them only when its peer runs a native XDP program (an AF_XDP receiver
// attached in native mode) or has GRO enabled; otherwise the kernel drops
// every frame and the run still succeeds, so check the peer first (or count
// what arrives). The generator sends in the network namespace that was
// current on the thread that called New.
//
// Each Send is one BPF_PROG_RUN call, and each call costs a fixed setup in
// the kernel (a page pool, and the dispatcher below): large batches are
// cheap per frame, small ones are not, and Run, which sends DefaultBatch
// frames a call, takes up to a call's time to notice it should stop (about
// half a second at 4 Mpps, two calls sharing the CPU).
//
// A run also puts the program into the kernel's XDP dispatcher at its start
// and takes it out at its end, and each change waits for an RCU grace period
// (synchronize_rcu in bpf_dispatcher_change_prog): about 10 ms each here, so
// a feed of 250 ms calls stood idle 20 ms after every call, 7% of the time.
// The dispatcher counts its users of a program and changes only when the
// count leaves or reaches zero, so on a generator pinned to a CPU (WithCPU)
// Loop runs its calls on two threads, both on that CPU, whose calls overlap:
// one starts while the other runs, the program stays in, and the CPU has no
// idle gap (the two share it, so the rate is one thread's). That holds while
// a call is long against a grace period, as live's 250 ms calls are: in
// calls of 1 Mi frames to a peer that drops them, 40 ms a call (26.2 Mpps)
// on two overlapping threads against 66 ms (15.9 Mpps) one at a time
// (BenchmarkLoop, medians of 5); under the sweep's forward cell the two
// calls still both ended once in 3 s (a 25 ms gap, against twelve 20 ms gaps
// before). Calls of a millisecond or two fall into step: once the count
// reaches zero the two threads wait on the dispatcher's lock in turn, start
// together, end together and reach zero again, and gain little.
package trafficgen

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/host"
)

// DefaultBatch is the number of frames one BPF_PROG_RUN call of Run sends.
const DefaultBatch = 1 << 20

// xdpMD is struct xdp_md as the live-frames run takes it: the packet
// bounds are filled in by the kernel, ingress_ifindex names the interface
// XDP_TX leaves by.
type xdpMD struct {
	Data, DataEnd, DataMeta    uint32
	IngressIfindex, RxQueueIdx uint32
	EgressIfindex              uint32
}

// Generator sends copies of one frame out of one interface. Send, Loop and
// Run may be called from any goroutine, one at a time. Its calls run on
// threads of its own, in its namespace (and on its CPU).
type Generator struct {
	prog    *ebpf.Program
	ifindex int
	ifname  string
	frame   []byte
	netns   *os.File // the namespace of the thread that called New
	cpu     int      // the CPU to pin the worker to, -1 for none

	mu      sync.Mutex
	work    chan func() error // to the worker threads
	result  chan error
	closing atomic.Bool // Close has begun: a Loop ends after its call
	sent    atomic.Uint64
	runs    atomic.Uint64
}

// Option configures New.
type Option func(*config)

type config struct {
	cpu            int // 1+ the CPU to run on; 0 for anywhere
	flowOff, flows int
	flowBase       uint16 // the counter's value in the frame given to New
}

// WithFlows makes every transmitted frame carry a 16-bit counter at byte
// offset off (big-endian), running through flows values from the value in
// the frame (wrapping back to it), so the receiver sees flows different flows (a UDP source port,
// say; leave the UDP checksum zero so the frames stay valid). The frames are
// rewritten in place by the program, so each page of the kernel's pool
// advances on its own.
func WithFlows(off, flows int) Option { return func(c *config) { c.flowOff, c.flows = off, flows } }

// WithCPU runs the generator on one CPU (its thread is pinned there), so a
// benchmark can keep the feeder off the receiver's core. The kernel's half of
// the receive (the peer's XDP program, the copy into its frames) then runs
// there too, in softirq after each batch.
func WithCPU(cpu int) Option { return func(c *config) { c.cpu = cpu + 1 } }

// New loads the generator's program for frame (an Ethernet frame of 14 to
// 3500 bytes) on the interface named ifname, in the calling thread's network
// namespace.
func New(ifname string, frame []byte, opts ...Option) (g *Generator, err error) {
	c, ifi, ns, err := prepare("trafficgen", ifname, frame, 3500, opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			ns.Close()
		}
	}()
	_ = rlimit.RemoveMemlock()
	if err := Probe(); err != nil {
		return nil, err
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "trafficgen",
		Type:         ebpf.XDP,
		License:      "Dual BSD/GPL",
		Instructions: program(c),
		Flags:        0,
	})
	if err != nil {
		return nil, fmt.Errorf("trafficgen: load the program (needs root): %w", err)
	}
	return &Generator{prog: prog, ifindex: ifi.Index, ifname: ifname, frame: append([]byte(nil), frame...), netns: ns, cpu: c.cpu - 1}, nil
}

// prepare is what New and NewCircuit do first: apply opts and check frame
// against them (14 to maxLen bytes, with room for the flow counter), find
// the interface named ifname and open the calling thread's network
// namespace, where it is. what begins the errors; the caller closes the
// namespace.
func prepare(what, ifname string, frame []byte, maxLen int, opts []Option) (c config, ifi *net.Interface, ns *os.File, err error) {
	for _, o := range opts {
		o(&c)
	}
	if len(frame) < 14 || len(frame) > maxLen {
		return c, nil, nil, fmt.Errorf("%s: a %d-byte frame: need 14 to %d bytes", what, len(frame), maxLen)
	}
	if c.flows > 1 {
		if c.flowOff < 0 || c.flowOff+2 > len(frame) {
			return c, nil, nil, fmt.Errorf("%s: flow counter at %d does not fit a %d-byte frame", what, c.flowOff, len(frame))
		}
		c.flowBase = uint16(frame[c.flowOff])<<8 | uint16(frame[c.flowOff+1])
	}
	if ifi, err = net.InterfaceByName(ifname); err != nil {
		return c, nil, nil, fmt.Errorf("%s: %w", what, err)
	}
	if ns, err = os.Open("/proc/thread-self/ns/net"); err != nil {
		return c, nil, nil, fmt.Errorf("%s: the current network namespace: %w", what, err)
	}
	return c, ifi, ns, nil
}

// Probe reports whether the kernel runs XDP programs on live frames: nil,
// or an error matching packetio.ErrUnsupported that quotes the kernel's
// refusal (a kernel can forbid BPF_F_TEST_XDP_LIVE_FRAMES: the machine
// this was written on answered EPERM, root or not). It loads a program
// that drops its frame and runs it once on the loopback interface of the
// calling thread's namespace, so nothing is sent. Any other failure (no
// BPF at all) is left to New's own load to report.
func Probe() error {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "trafficgen_probe",
		Type:         ebpf.XDP,
		License:      "Dual BSD/GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 1), asm.Return()}, // XDP_DROP
	})
	if err != nil {
		return nil
	}
	defer prog.Close()
	frame := make([]byte, 60)
	_, err = prog.Run(&ebpf.RunOptions{
		Data:    frame,
		Context: xdpMD{DataEnd: uint32(len(frame)), IngressIfindex: 1},
		Repeat:  1,
		Flags:   unix.BPF_F_TEST_XDP_LIVE_FRAMES,
	})
	if err != nil {
		return fmt.Errorf("%w: trafficgen: this kernel refuses to run XDP programs on live frames (BPF_PROG_RUN with BPF_F_TEST_XDP_LIVE_FRAMES): %w", packetio.ErrUnsupported, err)
	}
	return nil
}

// program returns XDP_TX, after advancing the flow counter when asked.
func program(c config) asm.Instructions {
	insns := asm.Instructions{}
	if c.flows > 1 {
		insns = append(insns,
			asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), // data
			asm.LoadMem(asm.R3, asm.R1, 4, asm.Word), // data_end
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, int32(c.flowOff+2)),
			asm.JGT.Reg(asm.R4, asm.R3, "tx"),
			asm.LoadMem(asm.R5, asm.R2, int16(c.flowOff), asm.Half),
			asm.HostTo(asm.BE, asm.R5, asm.Half), // network order to host
			asm.Sub.Imm32(asm.R5, int32(c.flowBase)),
			asm.Add.Imm32(asm.R5, 1),
			asm.Mod.Imm32(asm.R5, int32(c.flows)),
			asm.Add.Imm32(asm.R5, int32(c.flowBase)),
			asm.And.Imm(asm.R5, 0xffff),
			asm.HostTo(asm.BE, asm.R5, asm.Half),
			asm.StoreMem(asm.R2, int16(c.flowOff), asm.R5, asm.Half),
		)
	}
	return append(insns,
		asm.Mov.Imm(asm.R0, 3).WithSymbol("tx"), // XDP_TX
		asm.Return(),
	)
}

// Send transmits n copies of the frame (n <= 2^32-1) in one BPF_PROG_RUN
// call, on the generator's own thread in its namespace, and returns when the
// kernel has run them all. Each call sets up a page pool in the kernel, so
// large n are much cheaper per frame than small ones.
func (g *Generator) Send(n uint32) (uint64, error) {
	if err := g.do(1, func() error { return g.run(n) }); err != nil {
		return 0, err
	}
	return uint64(n), nil
}

// Loop sends in calls made back to back on the generator's threads (two
// overlapping ones when it is pinned, see the package comment) until next
// returns 0 or Close begins, and returns the first failed call's error.
// Before each call next is given the frames the thread's call before sent
// and how long it took (0 and 0 before a thread's first) and returns how
// many frames to send. Calls of next are serialised; they run on the
// generator's threads, so next may pace the feed by sleeping, and
// everything a call sent has been passed to next when Loop returns.
func (g *Generator) Loop(next func(sent uint32, took time.Duration) uint32) error {
	var mu sync.Mutex
	var done atomic.Bool // a thread's loop ended: the other's ends after its call
	ask := func(last uint32, took time.Duration) uint32 {
		mu.Lock()
		defer mu.Unlock()
		if n := next(last, took); n > 0 && !done.Load() && !g.closing.Load() {
			return n
		}
		done.Store(true)
		return 0
	}
	return g.do(g.threads(), func() error {
		var last uint32
		var took time.Duration
		for {
			n := ask(last, took)
			if n == 0 {
				return nil
			}
			t0 := time.Now()
			if err := g.run(n); err != nil {
				done.Store(true)
				return err
			}
			last, took = n, time.Since(t0)
		}
	})
}

// do runs job on k of the generator's threads at once, starting them first
// if need be, and returns the first error a job returned.
func (g *Generator) do(k int, job func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.prog == nil {
		return errors.New("trafficgen: closed")
	}
	if g.work == nil {
		if err := g.startWorkers(); err != nil {
			return err
		}
	}
	for range k {
		g.work <- job
	}
	var first error
	for range k {
		if err := <-g.result; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// startWorkers starts the goroutines that run the program, g.threads() of
// them: each locked to a thread that entered the generator's namespace (and
// was pinned to its CPU), and never unlocked, so the runtime discards the
// thread (and its namespace) when it ends. It stops those it started when
// one fails.
func (g *Generator) startWorkers() error {
	work, result := make(chan func() error), make(chan error)
	ready := make(chan error)
	for range g.threads() {
		go func() {
			runtime.LockOSThread()
			if e := unix.Setns(int(g.netns.Fd()), unix.CLONE_NEWNET); e != nil {
				ready <- fmt.Errorf("trafficgen: enter the namespace: %w", e)
				return
			}
			if g.cpu >= 0 {
				if e := host.PinThread(g.cpu); e != nil {
					ready <- fmt.Errorf("trafficgen: %w", e)
					return
				}
			}
			ready <- nil
			for job := range work {
				result <- job()
			}
		}()
	}
	var errs []error
	for range g.threads() {
		if err := <-ready; err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		close(work) // the threads that started end
		return errors.Join(errs...)
	}
	g.work, g.result = work, result
	return nil
}

func (g *Generator) run(n uint32) error {
	// The kernel wants data_end to be the frame length and nothing before
	// the data.
	ctx := xdpMD{DataEnd: uint32(len(g.frame)), IngressIfindex: uint32(g.ifindex)}
	_, err := g.prog.Run(&ebpf.RunOptions{
		Data:      g.frame,
		Context:   ctx,
		Repeat:    n,
		Flags:     unix.BPF_F_TEST_XDP_LIVE_FRAMES,
		BatchSize: 64,
	})
	g.runs.Add(1)
	if err != nil {
		return fmt.Errorf("trafficgen: live-frames run on %s (a veth transmits XDP frames only while its peer runs native XDP): %w", g.ifname, err)
	}
	g.sent.Add(uint64(n))
	return nil
}

// Run sends until stop is closed, in batches of DefaultBatch (or fewer
// frames when rate, in frames per second, is not 0) made back to back
// (Loop), and returns how many it sent.
func (g *Generator) Run(stop <-chan struct{}, rate float64) (uint64, error) {
	var total uint64
	start := time.Now()
	batch := uint32(DefaultBatch)
	if rate > 0 {
		batch = uint32(max(min(rate/20, DefaultBatch), 1))
	}
	err := g.Loop(func(sent uint32, _ time.Duration) uint32 {
		total += uint64(sent)
		for {
			select {
			case <-stop:
				return 0
			default:
			}
			if rate <= 0 {
				return batch
			}
			ahead := float64(total) - rate*time.Since(start).Seconds()
			if ahead <= 0 {
				return batch
			}
			time.Sleep(time.Duration(ahead / rate * float64(time.Second)))
		}
	})
	return total, err
}

// threads is how many threads the generator runs: two on its CPU, whose
// calls overlap, when it is pinned; one when not, since a second could run
// on another CPU and double what the feed costs.
func (g *Generator) threads() int {
	if g.cpu >= 0 {
		return 2
	}
	return 1
}

// Sent is how many frames the generator has sent.
func (g *Generator) Sent() uint64 { return g.sent.Load() }

// Close unloads the program. It is idempotent.
func (g *Generator) Close() error {
	g.closing.Store(true) // a Loop in progress ends after its call
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.prog == nil {
		return nil
	}
	if g.work != nil {
		close(g.work)
		g.work = nil
	}
	g.prog.Close()
	g.prog = nil
	return g.netns.Close()
}
