package trafficgen

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/host"
)

// A Circuit sends copies of one frame out of one interface from inside the
// kernel on a kernel that refuses live frames (Probe). It makes a veth
// pair of its own in the caller's namespace, its ends "a" and "b", and
// keeps frames running round it: the program on a sends back what it
// gets (XDP_TX), the one on b sends each frame it gets back round and a
// copy out of the target interface, in one broadcast redirect through a
// device map (bpf_redirect_map with BPF_F_BROADCAST, Linux 5.13). Run puts
// frames in with a packet socket, from a thread on the circuit's CPU, where
// the frames then go round in softirq, and takes them out by detaching
// b's program. A rate, when asked for, is kept by b's program: a frame
// that comes round early goes round again without a copy.
//
// The pair is made in the namespace of the thread that calls NewCircuit,
// named piog and six hex digits, and deleted by Close: make it in a
// namespace of your own (a test's, an example's testbed), which takes it
// along when it goes, also after a kill -9.
//
// It needs what the generator needs but live frames: root, and a target
// that transmits XDP frames (a veth whose peer runs native XDP or has GRO
// on). One circuit keeps one CPU busy while it runs, as a generator does,
// and the target's peer's kernel half of the receive (its XDP program, its
// copy) runs there too, in the same softirq; at a rate too, since the
// frames go round whether or not a copy goes out. Softirq is not shared
// with processes as a generator's system calls are: a process on the
// circuit's CPU gets what is left (with a circuit on each of two CPUs,
// testpmd received 0.18 Mpps where it received 0.56-0.63 beside one).
type Circuit struct {
	ns        *os.File // the namespace of the thread that called NewCircuit
	cpu       int      // -1: none
	ends      [2]string
	frame     []byte
	bounce    *ebpf.Program // on a: XDP_TX
	broadcast *ebpf.Program // on b: round again, and a copy to the target
	devs      *ebpf.Map     // b, target
	state     *ebpf.Map     // per CPU: circuitState

	mu     sync.Mutex // one Run at a time, and Close
	closed bool
}

// circuitState is b's program's per-CPU value: when the next copy may go
// (ns), the interval between copies (0: no pacing), and the copies sent.
type circuitState struct {
	Next, Interval, Copies uint64
}

// circuitMaxFrame is the longest frame a circuit takes: its veth pair's
// default MTU, 1500, and the Ethernet header.
const circuitMaxFrame = 1514

// circuitFrames is how many frames Run puts in: enough that the ends'
// NAPI polls find full batches, and as many as the two ends' receive
// rings (256 each) hold, where the frames wait between turns.
const circuitFrames = 512

// NewCircuit builds a circuit for frame (14 to 1514 bytes: an Ethernet
// frame at its veth pair's MTU of 1500, without FCS) to the interface
// named target, in the calling thread's network namespace.
func NewCircuit(target string, frame []byte, opts ...Option) (c *Circuit, err error) {
	cfg, ti, ns, err := prepare("trafficgen: circuit", target, frame, circuitMaxFrame, opts)
	if err != nil {
		return nil, err
	}
	var suffix [3]byte
	_, _ = rand.Read(suffix[:])
	id := hex.EncodeToString(suffix[:])
	c = &Circuit{ns: ns, cpu: cfg.cpu - 1, ends: [2]string{"piog" + id + "a", "piog" + id + "b"}, frame: append([]byte(nil), frame...)}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	_ = rlimit.RemoveMemlock()
	var bIndex int
	if err := c.in(func() (err error) { bIndex, err = c.makePair(); return err }); err != nil {
		return nil, err
	}
	if c.devs, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.DevMap, KeySize: 4, ValueSize: 4, MaxEntries: 2}); err != nil {
		return nil, fmt.Errorf("trafficgen: circuit: device map: %w", err)
	}
	if err := errors.Join(c.devs.Put(uint32(0), uint32(bIndex)), c.devs.Put(uint32(1), uint32(ti.Index))); err != nil {
		return nil, fmt.Errorf("trafficgen: circuit: device map: %w", err)
	}
	if c.state, err = ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 24, MaxEntries: 1}); err != nil {
		return nil, fmt.Errorf("trafficgen: circuit: state map: %w", err)
	}
	if c.bounce, err = loadXDP("trafficgen_bnc", asm.Instructions{asm.Mov.Imm(asm.R0, 3), asm.Return()}); err != nil {
		return nil, err
	}
	if c.broadcast, err = loadXDP("trafficgen_bc", circuitProgram(cfg, c.devs.FD(), c.state.FD())); err != nil {
		return nil, err
	}
	return c, nil
}

func loadXDP(name string, insns asm.Instructions) (*ebpf.Program, error) {
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: name, Type: ebpf.XDP, License: "Dual BSD/GPL", Instructions: insns})
	if err != nil {
		return nil, fmt.Errorf("trafficgen: circuit: load the program (needs root): %w", err)
	}
	return p, nil
}

// makePair creates the circuit's veth pair, up, and returns b's index.
func (c *Circuit) makePair() (int, error) {
	la := netlink.NewLinkAttrs()
	la.Name = c.ends[0]
	if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: c.ends[1]}); err != nil {
		return 0, fmt.Errorf("trafficgen: circuit: make the veth pair %s: %w", c.ends[0], err)
	}
	var b int
	for _, name := range c.ends {
		l, err := netlink.LinkByName(name)
		if err == nil {
			err = netlink.LinkSetUp(l)
		}
		if err != nil {
			return 0, fmt.Errorf("trafficgen: circuit: %s: %w", name, err)
		}
		b = l.Attrs().Index
	}
	return b, nil
}

// circuitProgram is b's program: advance the flow counter, then, unless
// the pace says a copy is early, count one and broadcast the frame to b
// (round again) and the target; an early frame only goes round (XDP_TX).
func circuitProgram(c config, devs, state int) asm.Instructions {
	insns := program(c)
	insns = insns[:len(insns)-2] // the flow counter, without the XDP_TX
	return append(insns,
		asm.Mov.Imm(asm.R1, 0).WithSymbol("tx"),
		asm.StoreMem(asm.R10, -4, asm.R1, asm.Word),
		asm.LoadMapPtr(asm.R1, state),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "round"),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.LoadMem(asm.R8, asm.R7, 8, asm.DWord), // interval
		asm.JEq.Imm(asm.R8, 0, "copy"),
		asm.FnKtimeGetNs.Call(),
		asm.LoadMem(asm.R1, asm.R7, 0, asm.DWord), // next
		asm.JGT.Reg(asm.R1, asm.R0, "round"),
		// Due: the next copy an interval on, from now when the circuit
		// fell behind by more than one (no burst to catch up).
		asm.Add.Reg(asm.R1, asm.R8),
		asm.JGT.Reg(asm.R1, asm.R0, "set"),
		asm.Mov.Reg(asm.R1, asm.R0),
		asm.Add.Reg(asm.R1, asm.R8),
		asm.StoreMem(asm.R7, 0, asm.R1, asm.DWord).WithSymbol("set"),
		asm.LoadMem(asm.R1, asm.R7, 16, asm.DWord).WithSymbol("copy"),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R7, 16, asm.R1, asm.DWord),
		asm.LoadMapPtr(asm.R1, devs),
		asm.Mov.Imm(asm.R2, 0),
		asm.Mov.Imm(asm.R3, unix.BPF_F_BROADCAST),
		asm.FnRedirectMap.Call(),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 3).WithSymbol("round"), // XDP_TX
		asm.Return(),
	)
}

// Run puts frames into the circuit and lets them go round, a copy out of
// the target each time (at most rate a second when rate is not 0), until
// stop is closed; then it takes them out. It returns why it could not
// start, or stop.
func (c *Circuit) Run(stop <-chan struct{}, rate float64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("trafficgen: circuit: closed")
	}
	var interval uint64
	if rate > 0 {
		interval = uint64(1e9 / rate)
	}
	if err := c.setPace(interval); err != nil {
		return err
	}
	var links []link.Link
	err := c.in(func() error {
		for i, p := range []*ebpf.Program{c.bounce, c.broadcast} {
			ifi, err := net.InterfaceByName(c.ends[i])
			if err != nil {
				return fmt.Errorf("trafficgen: circuit: %w", err)
			}
			l, err := link.AttachXDP(link.XDPOptions{Program: p, Interface: ifi.Index, Flags: link.XDPDriverMode})
			if err != nil {
				return fmt.Errorf("trafficgen: circuit: attach to %s: %w", c.ends[i], err)
			}
			links = append(links, l)
		}
		if c.cpu >= 0 {
			if err := host.PinThread(c.cpu); err != nil {
				return fmt.Errorf("trafficgen: circuit: %w", err)
			}
		}
		return c.inject()
	})
	if err == nil {
		<-stop
	}
	// Without b's program the frames reach b's stack, which drops them.
	for i := len(links) - 1; i >= 0; i-- {
		err = errors.Join(err, links[i].Close())
	}
	return err
}

// inject sends circuitFrames copies of the frame out of a, on the calling
// thread (and its CPU), so they arrive at b and start going round.
func (c *Circuit) inject() error {
	ifi, err := net.InterfaceByName(c.ends[0])
	if err != nil {
		return fmt.Errorf("trafficgen: circuit: %w", err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("trafficgen: circuit: packet socket: %w", err)
	}
	defer unix.Close(fd)
	sa := &unix.SockaddrLinklayer{Ifindex: ifi.Index, Halen: 6}
	copy(sa.Addr[:], c.frame[:6])
	for i, full := 0, 0; i < circuitFrames; {
		err := unix.Sendto(fd, c.frame, 0, sa)
		switch {
		case err == nil:
			i++
		case errors.Is(err, unix.ENOBUFS) && full < 2000:
			// b's ring is full until its NAPI takes a batch: wait.
			full++
			time.Sleep(50 * time.Microsecond)
		case errors.Is(err, unix.ENOBUFS) && i > 0:
			// The frames already in keep b's ring full: the
			// circuit is.
			return nil
		default:
			return fmt.Errorf("trafficgen: circuit: put frames in (%d of %d in): %w", i, circuitFrames, err)
		}
	}
	return nil
}

// setPace writes the interval between copies on every CPU, and the next
// copy as due now.
func (c *Circuit) setPace(interval uint64) error {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return fmt.Errorf("trafficgen: circuit: %w", err)
	}
	vals := make([]circuitState, n)
	var cur []circuitState
	if err := c.state.Lookup(uint32(0), &cur); err == nil {
		for i := range min(len(cur), n) {
			vals[i].Copies = cur[i].Copies
		}
	}
	for i := range vals {
		vals[i].Interval = interval
	}
	if err := c.state.Put(uint32(0), vals); err != nil {
		return fmt.Errorf("trafficgen: circuit: pace: %w", err)
	}
	return nil
}

// Sent is how many copies the circuit has sent out of the target.
func (c *Circuit) Sent() uint64 {
	var vals []circuitState
	if c.state == nil || c.state.Lookup(uint32(0), &vals) != nil {
		return 0
	}
	var n uint64
	for _, v := range vals {
		n += v.Copies
	}
	return n
}

// in runs fn on a thread of its own inside the circuit's namespace; the
// thread is thrown away after (it may be pinned).
func (c *Circuit) in(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if err := unix.Setns(int(c.ns.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("trafficgen: circuit: enter the namespace: %w", err)
			return
		}
		done <- fn()
	}()
	return <-done
}

// Close deletes the circuit's veth pair and unloads its programs, after a
// Run in progress. It is idempotent.
func (c *Circuit) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	if c.ns != nil {
		errs = append(errs, c.in(func() error {
			l, err := netlink.LinkByName(c.ends[0])
			if err != nil {
				var nf netlink.LinkNotFoundError
				if errors.As(err, &nf) {
					return nil
				}
				return fmt.Errorf("trafficgen: circuit: %s: %w", c.ends[0], err)
			}
			if err := netlink.LinkDel(l); err != nil {
				return fmt.Errorf("trafficgen: circuit: delete %s: %w", c.ends[0], err)
			}
			return nil
		}))
		c.ns.Close()
	}
	for _, p := range []*ebpf.Program{c.bounce, c.broadcast} {
		if p != nil {
			errs = append(errs, p.Close())
		}
	}
	for _, m := range []*ebpf.Map{c.devs, c.state} {
		if m != nil {
			errs = append(errs, m.Close())
		}
	}
	return errors.Join(errs...)
}
