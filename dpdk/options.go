package dpdk

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/packetio/packetio"
)

// Option changes how Open opens a device.
type Option func(*config)

type config struct {
	txQueues, rxQueues int
	txDepth, rxDepth   int
	frameSize          int // 0: chosen for the driver
	frames             int // per queue; 0: chosen from the depth

	noHuge     bool
	memory     int
	filePrefix string
	logLevel   string
	ealArgs    []string

	steering    *packetio.SteeringFilter
	promiscuous bool
	checksums   bool
	tso         bool
	txStamps    bool // WithTxTimestamps: refused (txstamp.go)

	numaNode int  // WithNUMANode; meaningful when numaSet
	numaSet  bool // a node was named (not -1)
}

// Defaults and limits.
const (
	DefaultDepth     = 1024
	DefaultFrameSize = 2048
	MaxQueues        = 64
	minFrameSize     = 512
	minXDPFrameSize  = 2048  // the kernel's smallest AF_XDP chunk (XDP_UMEM_MIN_CHUNK_SIZE)
	maxFrameSize     = 65536 // data_off and data_len are 16 bits
	maxFrames        = 1 << 20
	xskRxFrames      = 4096 // the fewest a net_af_xdp receive queue works with (checkPort)
	maxNode          = 1023 // internal/numa.MaxNode
)

func defaults() config {
	return config{txQueues: 1, rxQueues: 1, txDepth: DefaultDepth, rxDepth: DefaultDepth}
}

// WithTxQueues sets the number of transmit queues (default 1).
func WithTxQueues(n int) Option { return func(c *config) { c.txQueues = n } }

// WithRxQueues sets the number of receive queues (default 1; 0 opens a
// transmit-only device).
func WithRxQueues(n int) Option { return func(c *config) { c.rxQueues = n } }

// WithTxDepth sets the transmit ring size, a power of two (default 1024).
func WithTxDepth(n int) Option { return func(c *config) { c.txDepth = n } }

// WithRxDepth sets the receive ring size, a power of two (default 1024).
func WithRxDepth(n int) Option { return func(c *config) { c.rxDepth = n } }

// WithFrameSize sets the frame size, a power of two from 512 to 65536. The
// default is 2048, and 4096 for net_af_packet, whose ring frames need it,
// and for net_af_xdp, whose packets start 576 bytes in (so a 2048-byte
// frame would hold less than a 1500-byte MTU's 1514-byte frames). On
// net_af_xdp it is at least 2048, the kernel's smallest UMEM chunk: Open
// refuses a smaller one (ErrInvalid) rather than pass on the driver's bare
// EINVAL.
func WithFrameSize(n int) Option { return func(c *config) { c.frameSize = n } }

// WithFrames sets the frames per queue, a power of two. The default is
// twice the queue's depth (at least 4096 per receive queue on net_af_xdp,
// which takes half of them at setup; Open refuses fewer there, with
// packetio.ErrInvalid, since its receive would return nothing).
func WithFrames(n int) Option { return func(c *config) { c.frames = n } }

// WithNoHuge starts the EAL on ordinary pages (--no-huge), for machines
// without hugepages. Only virtual devices work so: there are no physical
// addresses. Only the first Open in a process decides.
func WithNoHuge() Option { return func(c *config) { c.noHuge = true } }

// WithMemory sets the EAL's memory in megabytes (-m). Only the first Open
// in a process decides.
func WithMemory(mb int) Option { return func(c *config) { c.memory = mb } }

// WithFilePrefix sets the EAL's --file-prefix. The default is "packetio"
// and the process id, unique per process. Only the first Open decides.
func WithFilePrefix(p string) Option { return func(c *config) { c.filePrefix = p } }

// WithLogLevel passes --log-level to the EAL (e.g. "lib.eal:debug"). Only
// the first Open decides.
func WithLogLevel(l string) Option { return func(c *config) { c.logLevel = l } }

// WithEALArgs appends raw EAL arguments after the ones packetio builds, so
// they override them. Only the first Open decides.
func WithEALArgs(args ...string) Option {
	return func(c *config) { c.ealArgs = append(c.ealArgs, args...) }
}

// WithSteering installs f as rte_flow rules on the receive queues (QUEUE
// for one, RSS for several). A port shared with the kernel is isolated
// first, so what the rules do not match stays with Linux. Anything the
// driver will not match exactly fails Open with packetio.ErrUnsupported.
func WithSteering(f packetio.SteeringFilter) Option {
	return func(c *config) { c.steering = &f }
}

// WithPromiscuous puts the port in promiscuous mode.
func WithPromiscuous() Option { return func(c *config) { c.promiscuous = true } }

// WithChecksumOffload asks for receive checksum flags and transmit checksum
// offload; Capabilities says which the port kept.
func WithChecksumOffload() Option { return func(c *config) { c.checksums = true } }

// WithTSO asks for TCP segmentation offload (and checksums); Open fails with
// packetio.ErrUnsupported when the port does not keep it.
func WithTSO() Option { return func(c *config) { c.tso, c.checksums = true, true } }

// WithNUMANode reserves the frame region, the mempools and the queue rings
// on NUMA node n, DPDK's socket n (DPDK numbers sockets by the kernel's
// NUMA nodes), instead of the port's own socket; -1, the default, follows
// the port (rte_eth_dev_socket_id; SOCKET_ID_ANY, any socket, when the port
// reports none). DPDK's hugepage memory is bound to its socket by the EAL
// itself. With --no-huge (WithNoHuge) the EAL's memory is one anonymous
// mapping that it labels socket 0 and binds nowhere, so Open refuses any
// node with packetio.ErrUnsupported, and the default reports no binding. A
// node that is not online is refused with packetio.ErrInvalid naming it.
// Capabilities().NUMABound and NUMANode say where the region is.
func WithNUMANode(n int) Option {
	return func(c *config) { c.numaNode, c.numaSet = n, n != -1 }
}

func pow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// check is one option's rule: the option as the caller wrote it and why
// its value is refused, when bad.
type check struct {
	bad bool
	opt string // e.g. "WithTxDepth(1000)"
	why string
}

// validate refuses the first option whose value cannot work, naming it and
// its value; every refusal matches packetio.ErrInvalid, except a steering
// filter the backend cannot honour, which matches its own sentinel.
func (c *config) validate() error {
	for _, k := range []check{
		{c.txQueues < 1 || c.txQueues > MaxQueues, fmt.Sprintf("WithTxQueues(%d)", c.txQueues), fmt.Sprintf("a device has 1 to %d transmit queues", MaxQueues)},
		{c.rxQueues < 0 || c.rxQueues > MaxQueues, fmt.Sprintf("WithRxQueues(%d)", c.rxQueues), fmt.Sprintf("a device has 0 to %d receive queues", MaxQueues)},
		{!pow2(c.txDepth) || c.txDepth > 1<<15, fmt.Sprintf("WithTxDepth(%d)", c.txDepth), "a depth is a power of two up to 32768"},
		{!pow2(c.rxDepth) || c.rxDepth > 1<<15, fmt.Sprintf("WithRxDepth(%d)", c.rxDepth), "a depth is a power of two up to 32768"},
		{c.frameSize != 0 && (!pow2(c.frameSize) || c.frameSize < minFrameSize || c.frameSize > maxFrameSize), fmt.Sprintf("WithFrameSize(%d)", c.frameSize), fmt.Sprintf("a frame size is a power of two from %d to %d", minFrameSize, maxFrameSize)},
		{c.frames != 0 && (!pow2(c.frames) || c.frames > maxFrames), fmt.Sprintf("WithFrames(%d)", c.frames), fmt.Sprintf("a frame count is a power of two up to %d", maxFrames)},
		{c.memory < 0, fmt.Sprintf("WithMemory(%d)", c.memory), "memory is a number of megabytes, 0 for the default"},
		{c.numaSet && (c.numaNode < 0 || c.numaNode > maxNode), fmt.Sprintf("WithNUMANode(%d)", c.numaNode), fmt.Sprintf("want a node from 0 to %d, or -1 to follow the port", maxNode)},
		{strings.ContainsAny(c.filePrefix, "/\x00"), fmt.Sprintf("WithFilePrefix(%q)", c.filePrefix), "a file prefix names files: no slash or NUL"},
		{strings.IndexByte(c.logLevel, 0) >= 0, fmt.Sprintf("WithLogLevel(%q)", c.logLevel), "an EAL argument cannot contain NUL"},
		{slices.ContainsFunc(c.ealArgs, func(a string) bool { return strings.IndexByte(a, 0) >= 0 }), fmt.Sprintf("WithEALArgs(%q)", c.ealArgs), "an EAL argument cannot contain NUL"},
	} {
		if k.bad {
			return fmt.Errorf("%s: %s: %w", k.opt, k.why, packetio.ErrInvalid)
		}
	}
	if c.txStamps {
		return errTxStamps()
	}
	if c.steering != nil {
		if err := c.steering.Validate(); err != nil {
			if !errors.Is(err, packetio.ErrUnsupported) && !errors.Is(err, packetio.ErrInvalid) {
				err = fmt.Errorf("%w: %w", packetio.ErrInvalid, err)
			}
			return fmt.Errorf("WithSteering(%v): %w", c.steering, err)
		}
		if len(c.steering.Match) > 0 && c.rxQueues == 0 {
			return fmt.Errorf("WithSteering(%v) with WithRxQueues(0): steering needs a receive queue: %w", c.steering, packetio.ErrUnsupported)
		}
	}
	return nil
}

// apply applies opts to c, refusing a nil one.
func (c *config) apply(opts []Option) error {
	for i, o := range opts {
		if o == nil {
			return fmt.Errorf("option %d of %d is nil: %w", i+1, len(opts), packetio.ErrInvalid)
		}
		o(c)
	}
	return nil
}

// framesFor is the frame count of one queue.
func (c *config) framesFor(depth int, atLeast int) int {
	if c.frames != 0 {
		return c.frames
	}
	n := max(2*depth, atLeast, 512)
	for !pow2(n) {
		n++
	}
	return n
}
