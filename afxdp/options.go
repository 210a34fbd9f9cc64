package afxdp

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cilium/ebpf"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/filter"
)

// Defaults.
const (
	// DefaultFrames is the number of frames per queue without WithFrames:
	// half receive, half transmit (xdp.DefaultNumFrames, which says why
	// not more).
	DefaultFrames = 4096
	// DefaultFrameSize is the frame size without WithFrameSize.
	DefaultFrameSize = 2048
)

// Option changes how Open sets up a Device.
type Option func(*config)

type config struct {
	steering    packetio.SteeringFilter
	steeringSet bool
	steeredBy   []string // the steering options given, in order
	nilOption   int      // 1 + the index of the first nil Option
	queues      int
	frames      int
	frameSize   int
	multiBuffer bool
	colours     bool
	txOnly      bool
	txCsum      bool
	match       *filter.Match
	stamps      bool
	txStamps    bool // WithTxTimestamps: refused (txstamp.go)
	busySet     bool
	busyUsecs   int
	busyBudget  int
	pollSpinSet bool
	pollSpin    time.Duration
	tuning      *xdp.Tuning
	replaceProg bool
	numaSet     bool
	numaNode    int
	xdp         []xdp.Option
	userProg    *ebpf.Program // WithProgram
	userMap     *ebpf.Map
}

// WithSteering names the packets the device takes from the kernel; the rest
// stay with Linux. It is required: a bare Open is refused, because the XDP
// program would otherwise take every packet on the interface, SSH and ARP
// included. SteeringFilter{Promiscuous: true} takes everything on purpose;
// the zero SteeringFilter takes what is addressed to the interface (its MAC,
// broadcast, and the multicast groups it has joined when Open runs).
func WithSteering(f packetio.SteeringFilter) Option {
	return func(c *config) { c.steering, c.steeringSet = f, true; c.steer("WithSteering()") }
}

// WithMatch steers with an afxdp/xdp match instead of a SteeringFilter: a
// tcpdump expression (pcapfilter.Match), a classic BPF program
// (bpfmatch.Match), a custom block (filter.NewMatch), or any combination
// (filter.MatchAnd, filter.MatchAny). It stands in for WithSteering and takes
// exactly what the match names.
func WithMatch(m filter.Match) Option {
	return func(c *config) { c.match, c.steeringSet = &m, true; c.steer("WithMatch()") }
}

// WithProgram steers with the caller's own XDP program instead of
// packetio's: prog redirects what the device should receive into xsks, an
// XSKMAP keyed by receive queue (bpf_redirect_map(&xsks,
// ctx->rx_queue_index, XDP_PASS)), and passes the rest to the kernel. It
// stands in for WithSteering. Open attaches prog (or leaves it where the
// caller attached it), registers one socket per queue in xsks and Close
// deletes exactly those entries; prog and xsks stay the caller's.
// WithTimestamps is refused with it (the stamp is written by packetio's
// program). Capabilities().SteeringBy is "user". SteeringSpec gives
// packetio's steering program for a program of yours to tail-call. See
// xdp.WithProgram.
func WithProgram(prog *ebpf.Program, xsks *ebpf.Map) Option {
	return func(c *config) {
		c.userProg, c.userMap, c.steeringSet = prog, xsks, true
		c.steer("WithProgram()")
	}
}

// WithSharedHook attaches packetio's steering program through libxdp's
// multi-program dispatcher at run priority priority (lower runs first; 0
// is xdp.DefaultPriority, libxdp's default), so programs other tools load
// with libxdp (xdp-loader, xdp-filter) share the interface; Close removes
// exactly packetio's. Without it, a dispatcher already on the interface is
// joined at xdp.DefaultPriority. It needs a kernel that takes freplace
// programs and a bpffs ($LIBXDP_BPFFS, else /sys/fs/bpf); without either
// Open fails with packetio.ErrUnsupported saying which.
// Capabilities().SteeringBy is "shared". See xdp.WithSharedHook.
func WithSharedHook(priority int) Option {
	return func(c *config) { c.xdp = append(c.xdp, xdp.WithSharedHook(priority)) }
}

// WithTransmitOnly opens a device with transmit queues only: the XDP
// program redirects nothing (it stays attached, because some drivers
// transmit from an AF_XDP socket only while one is) and the sockets have no
// receive ring. It stands in for WithSteering.
func WithTransmitOnly() Option {
	return func(c *config) { c.txOnly, c.steeringSet = true, true; c.steer("WithTransmitOnly()") }
}

// WithTxChecksumOffload reserves transmit metadata in front of every
// transmit frame (16 bytes of struct xsk_tx_metadata), so that transmit
// queues implement packetio.OffloadTransmitter for checksum completion:
// the device finishes an L4 checksum from CsumStart (a copy-mode socket
// does it in software). Capabilities().TxChecksumOffload says whether it
// was granted: Open refuses it on a zero-copy driver that does not honour
// the request. Segmentation (GSO) is refused.
func WithTxChecksumOffload() Option { return func(c *config) { c.txCsum = true } }

// WithTimestamps stamps every packet on arrival: the XDP program writes
// the stamp into the frame in front of the packet, where the receive
// queue reads it and moves the packet's descriptor past it (see the
// package documentation), receive queues implement ReceiveTimestamps and
// Capabilities().RxTimestamps is true. Without it the program does less
// per packet, in softirq where the kernel's half of AF_XDP runs (a third
// of the receive rate on a veth fed flat out, BenchmarkReceiveStamped
// against BenchmarkReceive), and ReceiveTimestamps returns nil.
func WithTimestamps() Option { return func(c *config) { c.stamps = true } }

// WithBusyPoll makes every socket busy-poll its queue's NAPI context from
// Poll and the wake-ups, instead of waiting for the interrupt path:
// SO_PREFER_BUSY_POLL, SO_BUSY_POLL=usecs and SO_BUSY_POLL_BUDGET=budget
// (at most 65535 packets per poll). Both must be above 0, or both 0 for
// off (the default). It trades a CPU
// that spins for a higher packet rate and lower latency; a receive loop
// that wants all of it does not sleep in Poll (Poll(0) and Receive in a
// loop). Info().BusyPoll says what was set. Equivalent to
// WithXDP(xdp.WithBusyPoll(usecs, budget)).
func WithBusyPoll(usecs, budget int) Option {
	return func(c *config) { c.busyUsecs, c.busyBudget, c.busySet = usecs, budget, true }
}

// WithPollSpin sets how long Poll looks at an empty receive ring before it
// sleeps: 0 is xdp.DefaultPollSpin (50µs), a negative d never spins, at
// most 1ms. Under load the next batch arrives within the spin, so the
// receiving goroutine never sleeps and the kernel never has to wake it; a
// spin that finds nothing turns spinning off until a Poll finds packets
// already waiting, or a sleep ends with packets sooner than a spin would
// have lasted, so an idle queue sleeps at once. Stats().Backend counts
// spin_hits and spin_misses. Equivalent to WithXDP(xdp.WithPollSpin(d)).
func WithPollSpin(d time.Duration) Option {
	return func(c *config) { c.pollSpin, c.pollSpinSet = d, true }
}

// WithQueues binds queues 0 to n-1, one transmit and one receive queue each,
// n from 1 to xdp.MaxQueues. The default, 0, binds every queue the
// interface has (at most xdp.MaxQueues); traffic on an unbound queue goes to
// the kernel unseen. Other values are refused by Open with
// packetio.ErrInvalid.
func WithQueues(n int) Option { return func(c *config) { c.queues = n } }

// WithFrames sets the frames of each queue, half for receive and half for
// transmit: 2 to 1<<20 (1 to 1<<20 with WithTransmitOnly). The default, 0,
// is DefaultFrames. Other values are refused by Open with
// packetio.ErrInvalid.
func WithFrames(n int) Option { return func(c *config) { c.frames = n } }

// WithFrameSize sets the frame size, a power of two from 2048 to 65536;
// some drivers want 4096 for zero-copy. The default, 0, is DefaultFrameSize
// (4096 on ENA, whose zero-copy needs it). Other values are refused by Open
// with packetio.ErrInvalid. The largest packet a frame
// takes, Capabilities().MaxFrameSize, is the frame less the 256 bytes the
// kernel keeps in front of a received packet and the 16 bytes of its
// arrival stamp.
func WithFrameSize(n int) Option { return func(c *config) { c.frameSize = n } }

// WithMultiBuffer lets a packet span several frames, every one but the last
// marked packetio.OptContinued, in both directions.
func WithMultiBuffer() Option { return func(c *config) { c.multiBuffer = true } }

// WithCacheColours spreads received packets over the CPU's cache, for
// programs that read or rewrite them (forwarders): frames become 4096
// bytes and the kernel writes each packet into the 2048-byte half that
// starts at one of 32 cache-line offsets, so a batch's headers stop
// evicting each other (xdp.WithCacheColours says how). Without WithFrames
// a queue gets 2048 of them, the default layout's memory. Mac forwarding on
// a veth pair ran 14% and 16% faster with it here at 64 and 512 bytes; a
// receive loop that never reads the packets does better without it, so it
// is not the default (README, "Cache colours").
// Capabilities().MaxFrameSize stays that of a 2048-byte frame. Open
// refuses it with WithMultiBuffer, WithTransmitOnly, a WithFrameSize other
// than 4096 (packetio.ErrInvalid), and on a link whose MTU carries longer
// packets than that (packetio.ErrUnsupported).
func WithCacheColours() Option { return func(c *config) { c.colours = true } }

// WithHostTuning lets Open change the host as t says: NAPI deferral,
// worker placement and interrupt moves, mlx5's xdp_tx_mpwqe flag (see
// xdp.Tuning; xdp.DefaultTuning is what measured best). Without it Open
// changes nothing on the host but attaching the XDP program. Every change is
// listed in Info().Tuning and put back on Close. Negative NAPIDefer or
// NAPIFlush, and a CPU outside 0 to 1023, are refused by Open with
// packetio.ErrInvalid; the zero Tuning changes nothing.
func WithHostTuning(t xdp.Tuning) Option {
	return func(c *config) { c.tuning = &t }
}

// WithXDP passes options of the datapath (package afxdp/xdp) through, after
// the ones this package sets, so they win: the mode, busy polling, ring
// sizes. xdp.WithFilter and xdp.WithExcept add to the steering
// filter's matches (as alternatives and exceptions).
func WithXDP(opts ...xdp.Option) Option {
	return func(c *config) { c.xdp = append(c.xdp, opts...) }
}

// WithNUMANode binds the frame memory (the UMEM) to NUMA node n before
// its pages are touched; -1, the default, follows the NIC's node
// (/sys/class/net/<if>/device/numa_node) and sets no policy when the NIC
// reports none, as veth does. A node that is not online is refused by Open
// with packetio.ErrInvalid. Capabilities().NUMABound and NUMANode say where
// the memory went. See xdp.WithNUMANode.
func WithNUMANode(n int) Option { return func(c *config) { c.numaSet, c.numaNode = true, n } }

// WithReplaceProgram lets Open replace an XDP program another process
// attached to the interface the legacy (netlink) way; without it Open
// refuses with packetio.ErrBusy naming the program. The replaced program is
// attached again, in its mode, when the device closes. A program held by a
// BPF link is never replaced. See xdp.WithReplaceProgram.
func WithReplaceProgram() Option { return func(c *config) { c.replaceProg = true } }

func newConfig(opts []Option) *config {
	c := &config{}
	for i, o := range opts {
		if o == nil {
			if c.nilOption == 0 {
				c.nilOption = i + 1
			}
			continue
		}
		o(c)
	}
	return c
}

// steer records a steering option, so that two different ones (which
// would silently override each other) are refused.
func (c *config) steer(name string) {
	for _, n := range c.steeredBy {
		if n == name {
			return
		}
	}
	c.steeredBy = append(c.steeredBy, name)
}

// maxFrames is the most frames a queue may have (xdp.WithNumFrames' limit).
const maxFrames = 1 << 20

// validate is everything Open checks before it touches the kernel: a
// steering filter that compiles, this package's option values, and the
// datapath options they make (xdp.Validate). It does no I/O: the zero
// SteeringFilter is compiled against a stand-in address. A refused value
// is an error matching packetio.ErrInvalid that names the option and the
// value ("WithFrames(-1): ...").
func (c *config) validate() error {
	if c.nilOption > 0 {
		return fmt.Errorf("%w: option %d is nil", packetio.ErrInvalid, c.nilOption)
	}
	if len(c.steeredBy) > 1 {
		return fmt.Errorf("%w: %s: each names all the traffic the device takes, so one would silently override the other; give one",
			packetio.ErrInvalid, strings.Join(c.steeredBy, " and "))
	}
	if !c.steeringSet {
		return fmt.Errorf("%w: no steering filter: the XDP program would take every packet on the interface from the kernel, SSH and ARP included; "+
			"name what you want with WithSteering, or take everything on purpose with WithSteering(packetio.SteeringFilter{Promiscuous: true})", packetio.ErrUnsupported)
	}
	minFrames := 2
	if c.txOnly {
		minFrames = 1
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{packetio.ErrInvalid}, args...)...)
	}
	switch {
	case c.queues < 0 || c.queues > xdp.MaxQueues:
		return bad("WithQueues(%d): want 1 to %d, or 0 for every queue", c.queues, xdp.MaxQueues)
	case c.frames < 0 || (c.frames > 0 && c.frames < minFrames) || c.frames > maxFrames:
		return bad("WithFrames(%d): want %d to %d (half receive, half transmit), or 0 for %d", c.frames, minFrames, maxFrames, DefaultFrames)
	case c.frameSize != 0 && (c.frameSize < 2048 || c.frameSize > 65536 || c.frameSize&(c.frameSize-1) != 0):
		return bad("WithFrameSize(%d): want a power of two from 2048 to 65536, or 0 for %d", c.frameSize, DefaultFrameSize)
	}
	if c.colours && c.txOnly {
		return fmt.Errorf("%w: WithCacheColours cannot combine with WithTransmitOnly: it colours received packets", packetio.ErrUnsupported)
	}
	if c.userProg != nil || c.userMap != nil {
		if c.stamps {
			return bad("WithProgram with WithTimestamps: the arrival stamp is written by packetio's program, which does not run")
		}
	}
	match, err := c.steeringMatch(func() ([][6]byte, error) { return [][6]byte{{0x02}}, nil })
	if err != nil {
		return err
	}
	if err := xdp.Validate(c.xdpOptions(match)...); err != nil {
		var oe *packetio.OpError
		if errors.As(err, &oe) {
			err = oe.Err
		}
		return err
	}
	return nil
}

// steeringMatch compiles what the device steers into one match; local
// gives the interface's addresses for the zero SteeringFilter.
func (c *config) steeringMatch(local func() ([][6]byte, error)) (filter.Match, error) {
	switch {
	case c.txOnly || c.userProg != nil || c.userMap != nil:
		return filter.MatchNone(), nil
	case c.match != nil:
		return *c.match, nil
	}
	return filter.Steering(c.steering, local)
}

// xdpOptions are the datapath options the device's options make, the
// WithXDP ones last so they win.
func (c *config) xdpOptions(match filter.Match) []xdp.Option {
	xo := []xdp.Option{
		xdp.WithNeedWakeup(),
		xdp.WithPreferSharedMemory(),
	}
	if c.userProg != nil || c.userMap != nil {
		xo = append(xo, xdp.WithProgram(c.userProg, c.userMap))
	} else {
		xo = append(xo, xdp.WithFilter(match))
	}
	if c.stamps && !c.txOnly {
		xo = append(xo, xdp.WithRxTimestamps())
	}
	if c.busySet {
		xo = append(xo, xdp.WithBusyPoll(c.busyUsecs, c.busyBudget))
	}
	if c.pollSpinSet {
		xo = append(xo, xdp.WithPollSpin(c.pollSpin))
	}
	if c.queues > 0 {
		xo = append(xo, xdp.WithQueues(c.queues))
	}
	if c.frames > 0 {
		xo = append(xo, xdp.WithNumFrames(c.frames))
	}
	if c.frameSize > 0 {
		xo = append(xo, xdp.WithFrameSize(c.frameSize))
	}
	if c.multiBuffer {
		xo = append(xo, xdp.WithMultiBuffer())
	}
	if c.colours {
		xo = append(xo, xdp.WithCacheColours())
	}
	if c.txOnly {
		xo = append(xo, xdp.WithRingSizes(0, xdp.DefaultRingSize, 0, xdp.DefaultRingSize))
	}
	if c.txCsum {
		xo = append(xo, xdp.WithTxMetadata())
	}
	if c.tuning != nil {
		xo = append(xo, xdp.WithHostTuning(*c.tuning))
	}
	if c.replaceProg {
		xo = append(xo, xdp.WithReplaceProgram())
	}
	if c.numaSet {
		xo = append(xo, xdp.WithNUMANode(c.numaNode))
	}
	return append(xo, c.xdp...)
}
