package xdp

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/cilium/ebpf"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/numa"
)

// Defaults. The zero Option list plus one filter is a working fleet.
const (
	// DefaultNumFrames is the number of frames each socket owns (its
	// receive and transmit pools together): 2048 each way, 8 MiB. More
	// frames in circulation cost receive rate in copy mode, where the
	// kernel copies each packet into the next frame of the fill ring: 8192
	// frames received 0.93x of a C receiver with 4096 (xskref, same run,
	// median of 5), 4096 frames 0.98x (the kernel's copy missing the
	// cache and the TLB more often over the larger area). Fewer still
	// receive faster again, 2048 frames 0.97x against 0.88x at 1514-byte
	// packets (afxdp's README, "Frames in circulation"), but hold half as
	// much: the default keeps 2048 receive frames, about 230 µs of packets
	// at 9 Mpps, before the kernel drops.
	DefaultNumFrames = 4096
	// DefaultFrameSize is the size of one frame. ENA's zero-copy needs
	// 4096, which Open picks there on its own.
	DefaultFrameSize = 2048
	// ColourFrameSize is the frame size WithCacheColours takes: the kernel
	// is given a 2048-byte half of each frame.
	ColourFrameSize = 4096
	// DefaultRingSize is the size of each of the four rings, or the frames of
	// the ring's direction, rounded down to a power of two, when fewer.
	DefaultRingSize = 4096
	// RxHeadroom is what the kernel keeps in front of every packet it
	// writes into a frame (XDP_PACKET_HEADROOM): a frame carries at most
	// FrameSize-RxHeadroom bytes of received packet.
	RxHeadroom = 256
	// MaxQueues is the most queues one fleet binds.
	MaxQueues = 256

	minFrameSize = 2048 // the kernel's smallest chunk
	maxFrameSize = 65536
	// colourStep is the distance between two colours' kernel buffers: a
	// cache line.
	colourStep = 64
)

// Mode is how the XDP program is attached and the sockets bound.
type Mode uint8

// The modes. ModeAuto tries native zero-copy, native copy and generic, in
// that order, and takes the first the driver accepts.
const (
	ModeAuto     Mode = iota
	ModeZeroCopy      // native attach, zero-copy bind, or fail
	ModeNative        // native attach, zero-copy then copy
	ModeGeneric       // generic (SKB) attach, copy bind: any interface, slowest
)

func (m Mode) String() string {
	switch m {
	case ModeAuto:
		return "auto"
	case ModeZeroCopy:
		return "zero-copy"
	case ModeNative:
		return "native"
	case ModeGeneric:
		return "generic"
	}
	return fmt.Sprintf("mode(%d)", m)
}

// Option configures Open, NewSocket, NewClassifier and MatchPacket. Options
// apply in order; later ones win. Open (and Validate, which does only that)
// checks every value before it touches the kernel: one out of range is an
// error matching packetio.ErrInvalid that names the option and the value,
// never a panic. The zero value of every option is its default.
type Option func(*config)

// config is what the options build. Its zero value means every default.
type config struct {
	queues     int
	matches    []filter.Match
	except     []filter.Match
	keepMgmt   bool
	mgmtPorts  []uint16
	numFrames  int
	frameSize  int
	txFrames   int
	fillRing   int
	compRing   int
	rxRing     int
	txRing     int
	ringsSet   bool
	mode       Mode
	needWakeup bool
	reuseRx    bool
	busyUsecs  int
	busyBudget int
	pollSpin   time.Duration // 0: DefaultPollSpin; negative: none
	multiBuf   bool
	colours    bool // WithCacheColours
	stamps     bool
	txMeta     bool

	shared    bool
	sharePref bool // share where the kernel lets us, else one UMEM per socket
	extra     int
	onForeign func(addr uint64)
	hugePages bool
	numaNode  int    // WithNUMANode; meaningful when numaSet
	numaSet   bool   // WithNUMANode was given a node (not -1)
	sysRoot   string // tests: a fake sysfs; "" is /sys
	bindNode  int    // resolved at Open: the UMEM's node plus one, 0 for no binding

	replaceProg  bool                 // replace a foreign program attached the legacy way
	userProg     *ebpf.Program        // WithProgram, WithCollection: the caller's program
	userMap      *ebpf.Map            // and its socket map
	userOpt      string               // the option that gave them, for errors
	userMissing  string               // what WithCollection could not find
	sharedHook   bool                 // WithSharedHook
	priority     int                  // its run priority
	tuning       *Tuning              // nil: change nothing on the host
	onOpened     func(f *Fleet) error // tests: runs when Open is done; an error fails it
	frameSizeSet bool
}

// WithQueues binds queues 0 to n-1, n from 1 to MaxQueues. The default, 0,
// binds every queue the interface has (at most MaxQueues; Info says when
// there are more): traffic that RSS sends to an unbound queue goes to the
// kernel, silently, so narrow the NIC's channels (ethtool -L) rather than
// this.
func WithQueues(n int) Option { return func(c *config) { c.queues = n } }

// WithFilter adds matches; a packet that satisfies any of them goes to the
// sockets. Open requires at least one: MatchAll to take everything on
// purpose, MatchNone to only transmit.
func WithFilter(m ...filter.Match) Option {
	return func(c *config) { c.matches = append(c.matches, m...) }
}

// WithUDPPorts is WithFilter(filter.MatchUDPPort(ports...)).
func WithUDPPorts(ports ...uint16) Option { return WithFilter(filter.MatchUDPPort(ports...)) }

// WithExcept adds exceptions: a packet that satisfies any of them stays with
// the kernel whatever the filter says. Exceptions run first. MatchAll cannot
// be one.
func WithExcept(m ...filter.Match) Option {
	return func(c *config) { c.except = append(c.except, m...) }
}

// WithKeepManagement keeps the traffic that keeps this host reachable with
// the kernel, whatever the filter takes: ARP, IPv6 neighbour discovery
// (ICMPv6 types 133-137), SSH (TCP port 22 plus extraTCPPorts, both to and
// from it) and DNS replies (UDP and TCP from port 53). The port rules are
// scoped to the addresses the interface (and its VLAN or macvlan children)
// has when Open runs, so transit traffic on those ports is still taken.
// Port 0 is refused.
func WithKeepManagement(extraTCPPorts ...uint16) Option {
	return func(c *config) {
		c.keepMgmt = true
		c.mgmtPorts = append(c.mgmtPorts, extraTCPPorts...)
	}
}

// WithNumFrames sets the frames each socket owns, 1 to 1<<20, split
// between its receive and transmit pools. The default, 0, is
// DefaultNumFrames.
func WithNumFrames(n int) Option { return func(c *config) { c.numFrames = n } }

// WithFrameSize sets the frame size: a power of two from 2048 to 65536.
// The default, 0, is DefaultFrameSize (4096 on ENA).
func WithFrameSize(n int) Option {
	return func(c *config) { c.frameSize, c.frameSizeSet = n, true }
}

// WithTxFrames sets how many of each socket's frames form its transmit pool,
// 1 to the frame count (the whole count only without a receive ring). The
// default, 0, is half. The rest receive.
func WithTxFrames(n int) Option { return func(c *config) { c.txFrames = n } }

// WithReceiveHeavy gives almost every frame to receive (64 transmit), for
// sinks.
func WithReceiveHeavy() Option { return WithTxFrames(64) }

// WithRingSize sets all four rings to n descriptors, a power of two up to
// 1<<20. Without it each ring is DefaultRingSize, or shallower when fewer
// frames could fill it.
func WithRingSize(n int) Option {
	return func(c *config) { c.fillRing, c.compRing, c.rxRing, c.txRing, c.ringsSet = n, n, n, n, true }
}

// WithRingSizes sets the fill, completion, receive and transmit ring sizes
// one by one (powers of two up to 1<<20). A receive or transmit size of 0
// leaves that direction out; not both.
func WithRingSizes(fill, completion, rx, tx int) Option {
	return func(c *config) {
		c.fillRing, c.compRing, c.rxRing, c.txRing, c.ringsSet = fill, completion, rx, tx, true
	}
}

// WithZeroCopy demands native zero-copy: Open fails where the driver cannot.
func WithZeroCopy() Option { return func(c *config) { c.mode = ModeZeroCopy } }

// WithDriverMode demands a native (driver) attach: zero-copy, else copy.
func WithDriverMode() Option { return func(c *config) { c.mode = ModeNative } }

// WithGenericMode attaches in generic (SKB) mode and binds in copy mode:
// works on any interface, never blips the link, costs the most per packet.
func WithGenericMode() Option { return func(c *config) { c.mode = ModeGeneric } }

// WithNeedWakeup binds with XDP_USE_NEED_WAKEUP: an idle driver parks and
// says so in the ring flags instead of spinning, and Fill, Poll and Transmit
// wake it only when it asks. Recommended; the packetio backend always sets
// it. A caller that fills without ever blocking in Poll must then call
// WakeupRx when NeedsWakeupRx says so (Fill does it for you).
func WithNeedWakeup() Option { return func(c *config) { c.needWakeup = true } }

// WithTxReuseRxFrames lets a socket transmit its own received frames: a
// completed frame goes back to the pool its address belongs to. Complete then
// touches the receive pool, so one goroutine must drive both directions of
// the socket. Refused with WithMultiBuffer and WithTxMetadata.
func WithTxReuseRxFrames() Option { return func(c *config) { c.reuseRx = true } }

// WithBusyPoll sets SO_PREFER_BUSY_POLL, SO_BUSY_POLL (usecs) and
// SO_BUSY_POLL_BUDGET (budget packets, at most 65535) on every socket. Both
// must be above 0, or both 0 for off (the default). It only helps together
// with the NAPI deferral Open sets on a native attach.
func WithBusyPoll(usecs, budget int) Option {
	return func(c *config) { c.busyUsecs, c.busyBudget = usecs, budget }
}

// DefaultPollSpin is how long Poll looks at an empty receive ring before it
// sleeps, unless WithPollSpin says otherwise.
const DefaultPollSpin = 50 * time.Microsecond

// maxPollSpin bounds WithPollSpin: longer is a busy loop, which a caller
// writes as Poll(0) in a loop.
const maxPollSpin = time.Millisecond

// WithPollSpin sets how long Poll looks at an empty receive ring before it
// sleeps in poll(2): d of 0 is DefaultPollSpin, a negative d never spins,
// and at most 1ms. Under load the next batch arrives within the spin, so the
// receiver never sleeps and the kernel (in softirq, on the sender's core)
// never has to wake it; a spin that finds nothing turns spinning off until
// a Poll finds packets already waiting, or a sleep ends with packets
// sooner than a spin would have lasted (a receiver that keeps up empties
// its ring every turn, so it finds none waiting), so an idle or slow queue
// sleeps at once and costs no CPU. Stats().SpinHits and SpinMisses count the spins.
func WithPollSpin(d time.Duration) Option { return func(c *config) { c.pollSpin = d } }

// WithMultiBuffer lets a packet span several frames: the program is loaded
// with the frags flag and the sockets bound with XDP_USE_SG. Read packets
// with ReceivePackets; SendBatch splits long payloads.
func WithMultiBuffer() Option { return func(c *config) { c.multiBuf = true } }

// WithCacheColours spreads received packets over the CPU's cache. Every
// frame of the usual layout starts on a 2048-byte boundary and the kernel
// writes each packet 256 bytes into it, so the first bytes of every packet
// (the headers a forwarder reads and rewrites) fall in the same two of the
// 64 sets of a typical L1 data cache and evict each other within a batch.
// With this option frames are ColourFrameSize (4096) bytes, and the kernel
// is given the 2048-byte half of each that starts 64×c bytes in, c the
// frame's colour (one of 32, by frame number): packets land in 32 sets
// instead of two. The frames are registered in the kernel's unaligned-chunk
// mode (XDP_UMEM_UNALIGNED_CHUNK_FLAG, Linux 5.4).
//
// A frame takes twice the memory, so without WithNumFrames a socket has
// half the frames (DefaultNumFrames/2: the default layout's memory, and
// half its receive depth). A packet's room stays that of a 2048-byte frame
// (MaxPacket 1792, 1776 with stamps): Open refuses a link whose MTU
// carries longer packets, WithMultiBuffer, a frame size other than 4096
// and a socket with no receive ring. It pays where the program reads the
// packets: mac forwarding on a veth pair here ran 14% and 16% faster at 64
// and 512 bytes than with the default layout; a receive loop that never
// reads them is better off with plain frames (afxdp/README.md, "Cache
// colours").
func WithCacheColours() Option { return func(c *config) { c.colours = true } }

// WithRxTimestamps makes the program stamp every frame it redirects: the
// driver's hardware stamp where the kfunc bpf_xdp_metadata_rx_timestamp
// returns one (native mode), else bpf_ktime_get_ns (CLOCK_MONOTONIC) at the
// XDP hook, written into the frame in front of the packet (16 bytes grown
// with bpf_xdp_adjust_head), which the socket moves each received
// descriptor past. Read them with ReceiveTimestamps, ReceiveStamped or
// Stamp. A frame then holds 16 bytes less of packet (MaxPacket).
func WithRxTimestamps() Option { return func(c *config) { c.stamps = true } }

// WithTxMetadata reserves TxMetadataLen bytes of struct xsk_tx_metadata in
// front of every transmit frame, for checksum offload requests (TxMetadata).
func WithTxMetadata() Option { return func(c *config) { c.txMeta = true } }

// WithSharedMemory maps one region for the whole fleet: every queue's frames
// end to end, then extra bytes the fleet never touches, registered with every
// socket (XDP_SHARED_UMEM). An address then means the same frame on every
// socket, and a frame built once in the extra area can be transmitted by any
// of them without a copy. Fleet.Extra and Fleet.Memory return the areas.
// extra is 0 (no extra area) or more.
func WithSharedMemory(extra int) Option {
	return func(c *config) { c.shared, c.extra = true, extra }
}

// WithPreferSharedMemory is WithSharedMemory(0) where the kernel lets the
// sockets share one UMEM, and one UMEM per socket where it refuses (Info
// says which, and why): what the packetio backend asks for.
func WithPreferSharedMemory() Option {
	return func(c *config) { c.shared, c.sharePref = true, true }
}

// WithOnForeignComplete is called, from inside Complete, with the address of
// every completed frame that belongs to no pool of the socket (a frame in
// the WithSharedMemory extra area, or another queue's). Keep it short and
// never call back into the socket from it.
func WithOnForeignComplete(fn func(addr uint64)) Option {
	return func(c *config) { c.onForeign = fn }
}

// WithReplaceProgram lets Open replace an XDP program another process
// attached to the interface the legacy (netlink) way, which it otherwise
// refuses with packetio.ErrBusy naming the program. The replaced program is
// kept and attached again, in its mode, when the fleet closes (or Open
// fails); Info().Decisions says so. A program held by a BPF link is never
// replaced: its owner is alive and the kernel would refuse anyway.
func WithReplaceProgram() Option { return func(c *config) { c.replaceProg = true } }

// WithHugePages backs the UMEM with 2 MiB pages when the host has them
// reserved; otherwise Open falls back to normal pages and Info says why.
func WithHugePages() Option { return func(c *config) { c.hugePages = true } }

// WithNUMANode binds the frame memory (the UMEM) to NUMA node n with
// MPOL_BIND|MPOL_F_STATIC_NODES before any of its pages is touched, and
// faults it all in at Open, so a node without room fails Open instead of
// placing frames elsewhere. n = -1, the default, follows the NIC: the
// UMEM is bound to the node /sys/class/net/<if>/device/numa_node
// reports, and to none (the kernel places it, no policy is set) when the
// NIC reports no node, as veth and single-node hosts do. A node that is not
// online is refused by Open with packetio.ErrInvalid naming it; a host
// without NUMA support refuses any node with packetio.ErrUnsupported.
// Info().NUMANode says where the memory went.
func WithNUMANode(n int) Option {
	return func(c *config) { c.numaNode, c.numaSet = n, n != -1 }
}

// wantNode is the node asked for, numa.Unset to follow the NIC.
func (c *config) wantNode() int {
	if !c.numaSet {
		return numa.Unset
	}
	return c.numaNode
}

// umemNode is the node the UMEM is bound to, numa.Unset for none.
func (c *config) umemNode() int { return c.bindNode - 1 }

// chooseNode resolves the UMEM's node for the interface (Open, NewSocket).
func (c *config) chooseNode(ifname string, ifindex int) error {
	root := c.sysRoot
	if root == "" {
		root = "/sys"
	}
	n, err := numa.Choose(root, ifname, ifindex, c.wantNode())
	switch {
	case errors.Is(err, numa.ErrBadNode):
		return invalid("WithNUMANode(%d): %v", c.numaNode, err)
	case err != nil:
		return fmt.Errorf("%w: WithNUMANode(%d): %v", packetio.ErrUnsupported, c.numaNode, err)
	}
	c.bindNode = n + 1
	return nil
}

// Tuning is every change to the host a Fleet may make. Without
// WithHostTuning, Open changes nothing on the host but attaching its XDP
// program; with it, Open makes the changes the fields ask for through
// internal/host's journal, lists each in Info().Tuning, and Close (or a
// failed Open) puts every one back. The zero Tuning changes nothing either.
// Negative NAPIDefer or NAPIFlush, and a CPU outside 0 to 1023, are refused
// by Open with packetio.ErrInvalid; whether a CPU is online is found out when
// the workers are placed.
type Tuning struct {
	// NAPIDefer and NAPIFlush are the NAPI deferral a native attach
	// applies (napi_defer_hard_irqs and gro_flush_timeout in
	// /sys/class/net/<if>/): the kernel lets packets gather for NAPIDefer
	// polls, flushing at most NAPIFlush later, instead of waking the
	// receiver every time. A NAPIFlush of 0 leaves NAPI alone.
	NAPIDefer int
	NAPIFlush time.Duration
	// NAPIAllDrivers applies the deferral on every driver. Without it,
	// drivers where it measured no gain are left alone: veth (no hard
	// interrupt to defer) and devices with no driver.
	NAPIAllDrivers bool
	// Place puts each queue's worker (the goroutine that first drives
	// its socket) on the CPU planned beside the queue's interrupt, by
	// core and cache, and moves an interrupt where the plan needs it.
	Place bool
	// CPUs names the worker CPU of each queue: queue q runs on
	// CPUs[q%len(CPUs)]. With Place the plan takes them and may move
	// interrupts beside them; without it only the workers are pinned.
	CPUs []int
	// MLX5TxMPWQEOff turns mlx5's xdp_tx_mpwqe private flag off for up to
	// four queues (pointer descriptors transmit faster there; more
	// queues keep the driver's default).
	MLX5TxMPWQEOff bool
}

// DefaultTuning is what Open did by itself before tuning became opt-in,
// measured to help on the drivers it touches: NAPI deferral of
// DefaultNAPIDefer polls and DefaultNAPIFlush on drivers other than veth,
// workers placed beside their interrupts on a native attach, and mlx5's
// xdp_tx_mpwqe off for up to four queues.
func DefaultTuning() Tuning {
	return Tuning{NAPIDefer: DefaultNAPIDefer, NAPIFlush: DefaultNAPIFlush, Place: true, MLX5TxMPWQEOff: true}
}

// WithHostTuning lets Open change the host as t says (see Tuning). It
// replaces an earlier WithHostTuning.
func WithHostTuning(t Tuning) Option {
	t.CPUs = append([]int(nil), t.CPUs...)
	return func(c *config) { c.tuning = &t }
}

// withOpenedHook runs fn when Open has done everything; an error fails
// Open there. Tests use it to prove the rollback of a complete bring-up.
func withOpenedHook(fn func(*Fleet) error) Option { return func(c *config) { c.onOpened = fn } }

// socketGeometry is a socket's checked frame and ring layout.
type socketGeometry struct {
	frameSize, numFrames, txFrames int
	colours                        bool // WithCacheColours: the kernel gets half of each frame, coloured
	fill, comp, rx, tx             int
	txHeadroom                     int // TxMetadataLen with WithTxMetadata
}

// Limits of the option values Open accepts.
const (
	maxNumFrames  = 1 << 20 // frames per socket
	maxRingSize   = 1 << 20 // descriptors per ring
	maxBusyBudget = 1<<16 - 1
	maxCPU        = 1023 // the last CPU a unix.CPUSet holds
)

// invalid is a refusal of an option value: it matches packetio.ErrInvalid
// and reads "WithFrames(-1): ...".
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{packetio.ErrInvalid}, args...)...)
}

// spinTime is the spin Poll makes before it sleeps.
func (c *config) spinTime() time.Duration {
	switch {
	case c.pollSpin < 0:
		return 0
	case c.pollSpin == 0:
		return DefaultPollSpin
	}
	return c.pollSpin
}

func pow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// checkOptions refuses an option value no socket could take, naming the
// option and the value. It does no I/O. The zero value of every field is
// its default: 0 queues is every queue, 0 frames DefaultNumFrames, frame
// size 0 DefaultFrameSize, 0 transmit frames half of them, busy polling
// 0/0 off, shared memory 0 no extra area, the zero Tuning no change.
func (c *config) checkOptions() error {
	switch {
	case c.queues < 0 || c.queues > MaxQueues:
		return invalid("WithQueues(%d): want 1 to %d, or 0 for every queue", c.queues, MaxQueues)
	case c.numFrames < 0 || c.numFrames > maxNumFrames:
		return invalid("WithNumFrames(%d): want 1 to %d, or 0 for %d", c.numFrames, maxNumFrames, DefaultNumFrames)
	case c.frameSize != 0 && (!pow2(c.frameSize) || c.frameSize < minFrameSize || c.frameSize > maxFrameSize):
		return invalid("WithFrameSize(%d): frame size is not a power of two from %d to %d (or 0 for %d)", c.frameSize, minFrameSize, maxFrameSize, DefaultFrameSize)
	case c.txFrames < 0:
		return invalid("WithTxFrames(%d): want 1 to the frame count, or 0 for half", c.txFrames)
	case c.busyUsecs < 0 || c.busyBudget < 0 || c.busyBudget > maxBusyBudget || (c.busyUsecs == 0) != (c.busyBudget == 0):
		return invalid("WithBusyPoll(%d, %d): want both above 0 (budget at most %d), or both 0 for off", c.busyUsecs, c.busyBudget, maxBusyBudget)
	case c.numaSet && (c.numaNode < 0 || c.numaNode > numa.MaxNode):
		return invalid("WithNUMANode(%d): want a node from 0 to %d, or -1 to follow the NIC", c.numaNode, numa.MaxNode)
	case c.pollSpin > maxPollSpin:
		return invalid("WithPollSpin(%v): at most %v (a negative value never spins, 0 is %v)", c.pollSpin, maxPollSpin, DefaultPollSpin)
	case c.sharedHook && (c.priority < 0 || c.priority > math.MaxInt32):
		return invalid("WithSharedHook(%d): want a run priority from 1 to %d (lower runs first), or 0 for %d", c.priority, math.MaxInt32, DefaultPriority)
	case c.extra < 0 || c.extra > maxNumFrames*maxFrameSize:
		return invalid("WithSharedMemory(%d): want 0 to %d bytes", c.extra, maxNumFrames*maxFrameSize)
	}
	if c.ringsSet {
		if err := checkRings(c.fillRing, c.compRing, c.rxRing, c.txRing); err != nil {
			return err
		}
	}
	for _, p := range c.mgmtPorts {
		if p == 0 {
			return invalid("WithKeepManagement(%v): port 0 names no traffic", c.mgmtPorts)
		}
	}
	if c.tuning != nil {
		return c.tuning.check()
	}
	return nil
}

// checkRings refuses ring sizes that are not powers of two up to
// maxRingSize; a receive or transmit ring of 0 leaves its direction out.
func checkRings(fill, comp, rx, tx int) error {
	bad := func(n int) bool { return !pow2(n) || n > maxRingSize }
	name := fmt.Sprintf("WithRingSizes(%d, %d, %d, %d)", fill, comp, rx, tx)
	if fill == comp && comp == rx && rx == tx {
		name = fmt.Sprintf("WithRingSize(%d)", rx)
	}
	switch {
	case rx == 0 && tx == 0:
		return invalid("%s: both the receive and the transmit ring are 0", name)
	case rx < 0 || tx < 0 || (rx != 0 && (bad(rx) || bad(fill))) || (tx != 0 && (bad(tx) || bad(comp))):
		return invalid("%s: ring sizes must be powers of two up to %d (receive ring %d and fill ring %d, transmit ring %d and completion ring %d; 0 for rx or tx leaves that direction out)",
			name, maxRingSize, rx, fill, tx, comp)
	}
	return nil
}

// check refuses Tuning values out of range. Whether a CPU is online is
// found out when Open places the workers.
func (t *Tuning) check() error {
	switch {
	case t.NAPIDefer < 0:
		return invalid("WithHostTuning(Tuning{NAPIDefer: %d}): want 0 or more polls", t.NAPIDefer)
	case t.NAPIFlush < 0:
		return invalid("WithHostTuning(Tuning{NAPIFlush: %v}): want 0 (leave NAPI alone) or more", t.NAPIFlush)
	}
	for _, cpu := range t.CPUs {
		if cpu < 0 || cpu > maxCPU {
			return invalid("WithHostTuning(Tuning{CPUs: %v}): CPU %d is outside 0 to %d", t.CPUs, cpu, maxCPU)
		}
	}
	return nil
}

// validate is everything Open checks before it touches the kernel: a
// filter, valid matches, option values in range, options that combine. It
// does no I/O.
func (c *config) validate() error {
	if c.userOpt != "" {
		if err := c.checkUserProgram(); err != nil {
			return err
		}
		_, err := c.geometry()
		return err
	}
	if len(c.matches) == 0 {
		return fmt.Errorf("%w: no filter: without one the program would take every packet from the kernel, SSH and ARP included; "+
			"name the traffic (WithFilter, WithUDPPorts), take everything on purpose with WithFilter(filter.MatchAll()), or only transmit with WithFilter(filter.MatchNone())",
			ErrUnsupported)
	}
	if err := filter.Validate(c.matches, c.except); err != nil {
		return err
	}
	_, err := c.geometry()
	return err
}

// Validate checks an option set as Open would before it touches the
// kernel, and returns the error Open would: nil, or a *packetio.OpError
// matching packetio.ErrInvalid that names the option and its value
// ("WithNumFrames(-1): ..."), or packetio.ErrUnsupported for a missing
// filter or options that cannot combine. It opens nothing.
func Validate(opts ...Option) error {
	return packetio.NewOpError("open", "afxdp", "", packetio.NoQueue, newConfig(opts).validate())
}

// geometry fills defaults and refuses what cannot work: a value out of
// range with packetio.ErrInvalid, options that cannot combine with
// packetio.ErrUnsupported.
func (c *config) geometry() (socketGeometry, error) {
	if err := c.checkOptions(); err != nil {
		return socketGeometry{}, err
	}
	g := socketGeometry{frameSize: DefaultFrameSize, numFrames: DefaultNumFrames,
		fill: DefaultRingSize, comp: DefaultRingSize, rx: DefaultRingSize, tx: DefaultRingSize}
	if c.frameSize != 0 {
		g.frameSize = c.frameSize
	} else if c.colours {
		g.frameSize = ColourFrameSize
	}
	g.colours = c.colours
	if c.numFrames != 0 {
		g.numFrames = c.numFrames
	} else if c.colours {
		g.numFrames = DefaultNumFrames / 2 // the default layout's memory
	}
	if c.ringsSet {
		g.fill, g.comp, g.rx, g.tx = c.fillRing, c.compRing, c.rxRing, c.txRing
	}
	g.txFrames = g.numFrames / 2
	if c.txFrames != 0 {
		g.txFrames = c.txFrames
	}
	if g.rx == 0 {
		g.txFrames = g.numFrames
	}
	if g.tx == 0 {
		g.txFrames = 0
	}
	if c.txMeta {
		g.txHeadroom = TxMetadataLen
	}
	if !c.ringsSet {
		// Default rings no deeper than the frames that can fill them.
		if rx := g.numFrames - g.txFrames; rx > 0 {
			g.fill = min(g.fill, floorPow2(rx))
			g.rx = min(g.rx, floorPow2(rx))
		}
		if g.txFrames > 0 {
			g.tx = min(g.tx, floorPow2(g.txFrames))
			g.comp = min(g.comp, floorPow2(g.txFrames))
		}
	}
	cannot := func(format string) (socketGeometry, error) {
		return socketGeometry{}, fmt.Errorf("%w: %s", packetio.ErrUnsupported, format)
	}
	switch {
	case g.txFrames > g.numFrames:
		return socketGeometry{}, invalid("WithTxFrames(%d): more than the %d frames (WithNumFrames)", g.txFrames, g.numFrames)
	case g.tx != 0 && g.txFrames == 0:
		return socketGeometry{}, invalid("WithNumFrames(%d), WithTxFrames(%d): a transmit ring with no transmit frames", g.numFrames, c.txFrames)
	case g.rx != 0 && g.numFrames-g.txFrames == 0:
		return socketGeometry{}, invalid("WithNumFrames(%d), WithTxFrames(%d): a receive ring with no receive frames", g.numFrames, g.txFrames)
	case g.rx != 0 && g.fill > g.numFrames-g.txFrames:
		return socketGeometry{}, invalid("WithRingSizes(%d, ...): fill ring %d is larger than the %d receive frames: it could never be filled (use WithRingSizes or more frames)", g.fill, g.fill, g.numFrames-g.txFrames)
	case c.reuseRx && c.multiBuf:
		return cannot("WithTxReuseRxFrames cannot combine with WithMultiBuffer: a completed chain's frames cannot be told apart by address")
	case c.colours && c.multiBuf:
		return cannot("WithCacheColours cannot combine with WithMultiBuffer: a packet that spans frames needs each frame whole")
	case c.colours && g.frameSize != ColourFrameSize:
		return socketGeometry{}, invalid("WithFrameSize(%d) with WithCacheColours: colours need %d-byte frames (or 0 for that)", c.frameSize, ColourFrameSize)
	case c.colours && g.rx == 0:
		return cannot("WithCacheColours cannot combine with a socket that has no receive ring (WithRingSizes with rx 0): it colours received packets")
	case c.reuseRx && c.txMeta:
		return cannot("WithTxReuseRxFrames cannot combine with WithTxMetadata: a received frame has no room for metadata in front of it")
	}
	return g, nil
}

// floorPow2 is the largest power of two not above n (n > 0).
func floorPow2(n int) int { return 1 << (bits.Len(uint(n)) - 1) }

// ceilPow2 is the least power of two n or more (n positive).
func ceilPow2(n int) int { return 1 << bits.Len(uint(n-1)) }

func newConfig(opts []Option) *config {
	c := &config{}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}
