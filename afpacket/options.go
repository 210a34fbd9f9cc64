package afpacket

import (
	"fmt"

	"golang.org/x/net/bpf"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/host"
	"github.com/packetio/packetio/internal/numa"
)

// Limits and defaults. Every count and size below is what Open uses when the
// matching option is not given; the zero Option list is a valid device.
const (
	// DefaultFrames is the number of region frames without WithFrames
	// (shared evenly by every queue).
	DefaultFrames = 4096
	// DefaultFrameSize is the region frame size without WithFrameSize.
	DefaultFrameSize = 2048
	// DefaultGSOFrameSize is the region frame size with WithGSO and no
	// WithFrameSize: a 64 KiB super-frame fits one frame.
	DefaultGSOFrameSize = 65536
	// DefaultGSOFrames is the frame count with WithGSO, a frame size of at
	// least 64 KiB and no WithFrames.
	DefaultGSOFrames = 256
	// DefaultBlockSize is the TPACKET_V3 ring block size without
	// WithBlockSize: 32 blocks in RingBytes. tcpdump's size; measured
	// against 64 KiB (netsniff-ng's) and 1 MiB under a flood, it costs the
	// receiver 53 ns a packet against 90 and 33 (a wake-up and a block
	// hand-over per block), and keeps 32 blocks to ride out a stalled
	// reader at low rates, where the 1 ms timeout retires blocks part full.
	DefaultBlockSize = 1 << 18
	// DefaultGSOBlockSize is the block size with WithGSO. A block must
	// hold a 64 KiB packet with its headers: WithBlockSize takes no less
	// than minGSOBlockSize.
	DefaultGSOBlockSize = 1 << 18
	minGSOBlockSize     = 1 << 17
	// RingBytes is the memory of one receive ring (per receive queue); the
	// block count is RingBytes / block size, at least minBlocks.
	RingBytes = 8 << 20
	// MaxQueues is the most queues either direction can have.
	MaxQueues = 64

	frameHeadroom  = 64      // bytes in front of every packet in a frame
	minFrameSize   = 128     // 2*frameHeadroom: a Desc never lands on the next frame
	maxFrameSize   = 1 << 16 // nothing bigger than a 64 KiB packet exists here
	minQueueFrames = 8       // a queue with fewer frames cannot batch
	maxRegionBytes = 512 << 20
	minBlocks      = 8
	maxBlockSize   = 1 << 22
	pageSize       = 4096
	socketBuffer   = 8 << 20
)

// Option changes how Open sets up a Device. Options are applied in order and
// checked together afterwards, so their order does not matter.
type Option func(*config)

// config is what the options produce. Its zero value means "all defaults".
type config struct {
	txQueues, rxQueues      int
	txSet, rxSet            bool
	txBy, rxBy              string // the option that set the count, for errors
	frames, frameSize       int
	framesSet, frameSizeSet bool
	blockSize               int
	blockSizeSet            bool
	gso                     bool
	multiBuffer             bool
	lowLatency              bool
	qdisc                   bool
	txStamps                bool
	numaNode                int  // WithNUMANode; meaningful when numaSet
	numaSet                 bool // a node was named (not -1)
	sysRoot                 string
	steeringConfig
}

// WithNUMANode binds the frame region to NUMA node n (MPOL_BIND with
// MPOL_F_STATIC_NODES, set before its pages are touched, every page
// faulted in by Open). -1, the default, follows the NIC
// (/sys/class/net/<if>/device/numa_node) and binds nothing when it reports
// no node, as veth does: the region then stays Go memory, as without this
// option. A bound region is a mapping of its own: Close gives its pages
// back and keeps its address range, so a frame slice kept past Close reads
// zeros rather than faulting. The receive rings are not bound: the kernel
// allocates and fills them itself (PACKET_RX_RING), and a memory policy on
// their mapping moves nothing. A node that is not online is refused by
// Open with packetio.ErrInvalid naming it. Capabilities().NUMABound and
// NUMANode say where the region is.
func WithNUMANode(n int) Option {
	return func(c *config) { c.numaNode, c.numaSet = n, n != -1 }
}

// WithQueues sets both the transmit and the receive queue count to n.
func WithQueues(n int) Option {
	return func(c *config) {
		c.txQueues, c.rxQueues, c.txSet, c.rxSet = n, n, true, true
		c.txBy, c.rxBy = "WithQueues", "WithQueues"
	}
}

// WithTxQueues sets the transmit queue count (default 1). Zero makes a
// receive-only device.
func WithTxQueues(n int) Option {
	return func(c *config) { c.txQueues, c.txSet, c.txBy = n, true, "WithTxQueues" }
}

// WithRxQueues sets the receive queue count (default 1). Zero makes a
// transmit-only device; two or more join one PACKET_FANOUT_HASH group, so
// each flow lands on one queue (Capabilities().RSS).
func WithRxQueues(n int) Option {
	return func(c *config) { c.rxQueues, c.rxSet, c.rxBy = n, true, "WithRxQueues" }
}

// WithFrames sets the number of frames in the region (default 4096, or 256
// with WithGSO). They are split evenly over all queues of both directions.
func WithFrames(n int) Option { return func(c *config) { c.frames, c.framesSet = n, true } }

// WithFrameSize sets the size of one region frame: a power of two from 128
// to 65536 (default 2048, or 65536 with WithGSO). The largest packet a frame
// carries is the size less 64 bytes of headroom.
func WithFrameSize(n int) Option { return func(c *config) { c.frameSize, c.frameSizeSet = n, true } }

// WithBlockSize sets the size of one TPACKET_V3 receive ring block: a power
// of two from 4096 to 4 MiB (default 256 KiB; at least 128 KiB with
// WithGSO). The kernel hands a block over when it is full or 1 ms after its
// first packet, so bigger blocks mean bigger receive batches and fewer
// wake-ups under load (1 MiB: 33 ns of receiver CPU a packet under a flood
// against 53 at 256 KiB), and fewer blocks in the 8 MiB ring: at low rates,
// where the timeout retires blocks part full, a stalled reader drops after
// as many milliseconds as there are blocks.
func WithBlockSize(n int) Option { return func(c *config) { c.blockSize, c.blockSizeSet = n, true } }

// WithGSO turns on PACKET_VNET_HDR: every packet crosses the socket with a
// virtio_net_hdr, so the queues satisfy packetio.OffloadReceiver and
// packetio.OffloadTransmitter (a 64 KiB TCP super-frame is one packet, and the
// kernel segments and checksums on transmit). Receive finishes partial
// checksums in software. It makes the default frame size 64 KiB.
func WithGSO() Option { return func(c *config) { c.gso = true } }

// WithMultiBuffer lets a packet span several frames in both directions:
// Receive delivers a packet bigger than one frame as a chain of descriptors,
// every one but the last marked packetio.OptContinued (all or nothing), and
// Transmit sends such a chain as one packet. Without it a received packet
// that does not fit one frame is dropped and counted. With WithGSO it lets
// frames stay smaller than 64 KiB. Capabilities().MultiBuffer reports it.
func WithMultiBuffer() Option { return func(c *config) { c.multiBuffer = true } }

// WithLowLatency makes every receive ring TPACKET_V2 instead of TPACKET_V3:
// the kernel hands each packet over in its own frame slot and wakes Poll at
// once, instead of packing packets into a block it hands over when the block
// is full or 1 ms after its first packet. At low rates that removes up to
// 1 ms from every packet's receive latency; it costs a poll(2) wake-up (a
// system call and a context switch) per packet when packets trickle in,
// fewer packets per Receive batch under load, and a ring of fixed-size slots
// (each as big as the largest packet the queue accepts: a frame, or 64 KiB
// with WithGSO or WithMultiBuffer). Everything else behaves as without it:
// VLAN tags are put back, stamps, offloads, chains and counters are the
// same, and WithBlockSize still sets the ring block size (raised to hold one
// slot when it is smaller).
func WithLowLatency() Option { return func(c *config) { c.lowLatency = true } }

// WithQdisc keeps transmitted frames on the kernel's queueing path instead
// of the default PACKET_QDISC_BYPASS, which hands them straight to the
// driver. Use it when something must see or shape them there: tc shaping or
// policing (a qdisc, e.g. tbf or fq, on the interface), qdisc statistics
// (`tc -s qdisc`), or a tap that sees frames at dev_queue_xmit (a tcpdump
// on the sending host, AF_PACKET sockets of other programs, tc egress
// filters and BPF programs): the bypass skips all of them. It costs the
// qdisc's lock, enqueue and dequeue per frame (little with the default
// noqueue or pfifo_fast; a shaping qdisc holds the rate to what it is set
// to), and a frame the qdisc drops is back-pressure, a short count, as a
// full device queue is without it. Receive is unchanged.
func WithQdisc() Option { return func(c *config) { c.qdisc = true } }

// validate checks the interface name and every option, and resolves the
// configuration, without touching the system: Open calls it before anything
// else. Every refusal wraps packetio.ErrInvalid and names the input: the
// option and its value, the position of a nil Option (counting from 1), or
// the interface name.
func validate(ifname string, opts []Option) (resolved, error) {
	var c config
	for i, o := range opts {
		if o == nil {
			return resolved{}, fmt.Errorf("%w: option %d is nil", packetio.ErrInvalid, i+1)
		}
		o(&c)
	}
	r, err := c.resolve()
	if err != nil {
		return resolved{}, err
	}
	if err := checkName(ifname); err != nil {
		return resolved{}, err
	}
	return r, nil
}

// checkName refuses a name no interface can have (host.ValidInterfaceName).
func checkName(name string) error {
	if !host.ValidInterfaceName(name) {
		return fmt.Errorf("%w: interface name %q cannot name an interface: want 1 to 15 bytes, not \".\" or \"..\", no NUL, '/', ':' or white space", packetio.ErrInvalid, name)
	}
	return nil
}

// resolved is a checked configuration with every default filled in.
type resolved struct {
	txQueues, rxQueues int
	frames, frameSize  int
	perQueue           int // frames per queue
	blockSize          int
	blocks             int
	gso                bool
	multiBuffer        bool
	// WithLowLatency: TPACKET_V2 rings of v2Blocks blocks of v2BlockSize
	// bytes cut into v2FrameSize slots.
	lowLatency                         bool
	v2FrameSize, v2BlockSize, v2Blocks int
	qdisc                              bool
	txStamps                           bool                 // WithTxTimestamps
	numaWant                           int                  // WithNUMANode, numa.Unset to follow the NIC
	sysRoot                            string               // tests: a fake sysfs; "" is /sys
	rxFilter                           []bpf.Instruction    // WithSteering, WithFilterExpr: nil without
	rxFilterRaw                        []bpf.RawInstruction // rxFilter assembled, for SO_ATTACH_FILTER
	rxFilterBy                         string               // the option that set it, for errors
}

// resolve fills in defaults and refuses what cannot work. The error wraps
// packetio.ErrInvalid and names the option and its value.
func (c config) resolve() (resolved, error) {
	r := resolved{txQueues: 1, rxQueues: 1, frames: DefaultFrames, frameSize: DefaultFrameSize, blockSize: DefaultBlockSize, gso: c.gso, multiBuffer: c.multiBuffer, lowLatency: c.lowLatency, qdisc: c.qdisc, txStamps: c.txStamps, numaWant: numa.Unset}
	if c.numaSet {
		r.numaWant = c.numaNode
	}
	r.sysRoot = c.sysRoot
	if c.txSet {
		r.txQueues = c.txQueues
	}
	if c.rxSet {
		r.rxQueues = c.rxQueues
	}
	if c.gso {
		r.blockSize = DefaultGSOBlockSize
		if !c.multiBuffer {
			r.frameSize = DefaultGSOFrameSize
		}
	}
	if c.frameSizeSet {
		r.frameSize = c.frameSize
	}
	if c.gso && r.frameSize >= DefaultGSOFrameSize {
		r.frames = DefaultGSOFrames
	}
	if c.framesSet {
		r.frames = c.frames
	}
	if c.blockSizeSet {
		r.blockSize = c.blockSize
	}
	bad := func(format string, args ...any) (resolved, error) {
		return resolved{}, fmt.Errorf("%w: "+format, append([]any{packetio.ErrInvalid}, args...)...)
	}
	txBy, rxBy := c.txBy, c.rxBy
	if txBy == "" {
		txBy = "WithTxQueues"
	}
	if rxBy == "" {
		rxBy = "WithRxQueues"
	}
	switch {
	case r.txQueues < 0:
		return bad("%s(%d): a queue count is 0 to %d", txBy, r.txQueues, MaxQueues)
	case r.rxQueues < 0:
		return bad("%s(%d): a queue count is 0 to %d", rxBy, r.rxQueues, MaxQueues)
	case r.txQueues == 0 && r.rxQueues == 0:
		return bad("%s(0) and %s(0): no queues either way", txBy, rxBy)
	case r.txQueues > MaxQueues:
		return bad("%s(%d): at most %d queues each way", txBy, r.txQueues, MaxQueues)
	case r.rxQueues > MaxQueues:
		return bad("%s(%d): at most %d queues each way", rxBy, r.rxQueues, MaxQueues)
	case r.frameSize < minFrameSize || r.frameSize > maxFrameSize || r.frameSize&(r.frameSize-1) != 0:
		return bad("WithFrameSize(%d): not a power of two from %d to %d", r.frameSize, minFrameSize, maxFrameSize)
	case c.gso && !c.multiBuffer && r.rxQueues > 0 && r.frameSize < DefaultGSOFrameSize:
		return bad("WithGSO with WithFrameSize(%d): receiving 64 KiB super-frames needs WithFrameSize(65536) or WithMultiBuffer", r.frameSize)
	case r.blockSize < pageSize || r.blockSize > maxBlockSize || r.blockSize&(r.blockSize-1) != 0:
		return bad("WithBlockSize(%d): not a power of two from %d to %d", r.blockSize, pageSize, maxBlockSize)
	case c.gso && r.blockSize < minGSOBlockSize:
		return bad("WithGSO with WithBlockSize(%d): a block of at least %d bytes is needed to hold a 64 KiB packet", r.blockSize, minGSOBlockSize)
	case r.frames <= 0:
		return bad("WithFrames(%d): the frame count must be positive", r.frames)
	case c.numaSet && (c.numaNode < 0 || c.numaNode > numa.MaxNode):
		return bad("WithNUMANode(%d): want a node from 0 to %d, or -1 to follow the NIC", c.numaNode, numa.MaxNode)
	case r.frames > maxRegionBytes/r.frameSize: // divided, so a huge count cannot wrap
		return bad("WithFrames(%d) of WithFrameSize(%d): more than the %d MiB region limit", r.frames, r.frameSize, maxRegionBytes>>20)
	}
	r.perQueue = r.frames / (r.txQueues + r.rxQueues)
	if r.perQueue < minQueueFrames {
		return bad("WithFrames(%d) over %d queues leaves %d per queue; need at least %d (use WithFrames(%d))",
			r.frames, r.txQueues+r.rxQueues, r.perQueue, minQueueFrames, minQueueFrames*(r.txQueues+r.rxQueues))
	}
	if c.gso && c.multiBuffer && r.rxQueues > 0 {
		// A queue must be able to hold one whole 64 KiB packet.
		need := (maxFrameSize + vlanLen + r.frameSize - frameHeadroom - 1) / (r.frameSize - frameHeadroom)
		if r.perQueue < need {
			return bad("WithFrames(%d): WithGSO and WithMultiBuffer with %d-byte frames need %d frames per queue for one 64 KiB packet, have %d (use WithFrames(%d))",
				r.frames, r.frameSize, need, r.perQueue, need*(r.txQueues+r.rxQueues))
		}
	}
	if err := c.resolveSteering(&r); err != nil {
		return resolved{}, err
	}
	r.blocks = max(RingBytes/r.blockSize, minBlocks)
	if r.lowLatency {
		// A slot holds a whole packet: one frame's worth, or the
		// largest packet there is when it may span frames.
		capacity := r.frameSize - frameHeadroom
		if r.gso || r.multiBuffer {
			capacity = maxFrameSize
		}
		r.v2FrameSize, r.v2BlockSize, r.v2Blocks = ring2Geometry(capacity, r.blockSize)
	}
	return r, nil
}
