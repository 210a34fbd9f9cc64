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
// Linux 5.18 or later, root (CAP_BPF and CAP_NET_ADMIN), and an interface
// whose driver can transmit XDP frames (ndo_xdp_xmit). A veth transmits
// them only when its peer runs a native XDP program (an AF_XDP receiver
// attached in native mode) or has GRO enabled; otherwise the kernel drops
// every frame and the run still succeeds, so check the peer first (or count
// what arrives). The generator sends in the network namespace that was
// current on the thread that called New.
//
// Each Send is one BPF_PROG_RUN call, and each call sets up a page pool in
// the kernel (about 30 ms here): large batches are cheap per frame, small
// ones are not, and Run, which sends DefaultBatch frames a call, takes up to
// a batch's time (about a second at 4 Mpps) to notice it should stop.
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

	"github.com/packetio/packetio/internal/host"
)

// DefaultBatch is the number of frames one BPF_PROG_RUN call sends.
const DefaultBatch = 1 << 22

// xdpMD is struct xdp_md as the live-frames run takes it: the packet
// bounds are filled in by the kernel, ingress_ifindex names the interface
// XDP_TX leaves by.
type xdpMD struct {
	Data, DataEnd, DataMeta    uint32
	IngressIfindex, RxQueueIdx uint32
	EgressIfindex              uint32
}

// Generator sends copies of one frame out of one interface. Send and Run
// may be called from any goroutine, one at a time.
type Generator struct {
	prog    *ebpf.Program
	ifindex int
	ifname  string
	frame   []byte
	netns   *os.File // the namespace of the thread that called New
	cpu     int      // the CPU to pin the worker to, -1 for none

	mu     sync.Mutex
	work   chan uint32 // to the worker thread
	result chan error
	sent   atomic.Uint64
	runs   atomic.Uint64
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
	var c config
	for _, o := range opts {
		o(&c)
	}
	if len(frame) < 14 || len(frame) > 3500 {
		return nil, fmt.Errorf("trafficgen: a %d-byte frame: need 14 to 3500 bytes", len(frame))
	}
	if c.flows > 1 && (c.flowOff < 0 || c.flowOff+2 > len(frame)) {
		return nil, fmt.Errorf("trafficgen: flow counter at %d does not fit a %d-byte frame", c.flowOff, len(frame))
	}
	if c.flows > 1 {
		c.flowBase = uint16(frame[c.flowOff])<<8 | uint16(frame[c.flowOff+1])
	}
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("trafficgen: %w", err)
	}
	ns, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, fmt.Errorf("trafficgen: the current network namespace: %w", err)
	}
	defer func() {
		if err != nil {
			ns.Close()
		}
	}()
	_ = rlimit.RemoveMemlock()
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
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.prog == nil {
		return 0, errors.New("trafficgen: closed")
	}
	if g.work == nil {
		if err := g.startWorker(); err != nil {
			return 0, err
		}
	}
	g.work <- n
	if err := <-g.result; err != nil {
		return 0, err
	}
	g.sent.Add(uint64(n))
	return uint64(n), nil
}

// startWorker starts the goroutine that runs the program: locked to a
// thread that entered the generator's namespace, and never unlocked, so the
// runtime discards the thread (and its namespace) when it ends.
func (g *Generator) startWorker() error {
	g.work, g.result = make(chan uint32), make(chan error)
	ready := make(chan error)
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
		for n := range g.work {
			g.result <- g.run(n)
		}
	}()
	if err := <-ready; err != nil {
		g.work = nil
		return err
	}
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
	return nil
}

// Run sends until stop is closed, in batches of DefaultBatch (or fewer
// frames when rate, in frames per second, is not 0), and returns how many
// it sent.
func (g *Generator) Run(stop <-chan struct{}, rate float64) (uint64, error) {
	var total uint64
	start := time.Now()
	batch := uint32(DefaultBatch)
	if rate > 0 {
		batch = uint32(max(min(rate/20, DefaultBatch), 1))
	}
	for {
		select {
		case <-stop:
			return total, nil
		default:
		}
		if rate > 0 {
			ahead := float64(total) - rate*time.Since(start).Seconds()
			if ahead > 0 {
				time.Sleep(time.Duration(ahead / rate * float64(time.Second)))
				continue
			}
		}
		n, err := g.Send(batch)
		total += n
		if err != nil {
			return total, err
		}
	}
}

// Sent is how many frames the generator has sent.
func (g *Generator) Sent() uint64 { return g.sent.Load() }

// Close unloads the program. It is idempotent.
func (g *Generator) Close() error {
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
