package dpdk

import (
	"fmt"

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
}

// Defaults and limits.
const (
	DefaultDepth     = 1024
	DefaultFrameSize = 2048
	MaxQueues        = 64
	minFrameSize     = 512
	maxFrameSize     = 65536 // data_off and data_len are 16 bits
	maxFrames        = 1 << 20
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
// frame would hold less than a 1500-byte MTU's 1514-byte frames).
func WithFrameSize(n int) Option { return func(c *config) { c.frameSize = n } }

// WithFrames sets the frames per queue, a power of two. The default is
// twice the queue's depth (at least 4096 per receive queue on net_af_xdp,
// which takes half of them at setup).
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

func pow2(n int) bool { return n > 0 && n&(n-1) == 0 }

func (c *config) validate() error {
	switch {
	case c.txQueues < 0 || c.rxQueues < 0:
		return fmt.Errorf("negative queue count")
	case c.txQueues == 0:
		return fmt.Errorf("at least one transmit queue is needed")
	case c.txQueues > MaxQueues || c.rxQueues > MaxQueues:
		return fmt.Errorf("more than %d queues", MaxQueues)
	case !pow2(c.txDepth) || !pow2(c.rxDepth) || c.txDepth > 1<<15 || c.rxDepth > 1<<15:
		return fmt.Errorf("depths %d/%d are not powers of two up to 32768", c.txDepth, c.rxDepth)
	case c.frameSize != 0 && (!pow2(c.frameSize) || c.frameSize < minFrameSize || c.frameSize > maxFrameSize):
		return fmt.Errorf("frame size %d is not a power of two from %d to %d", c.frameSize, minFrameSize, maxFrameSize)
	case c.frames != 0 && (!pow2(c.frames) || c.frames > maxFrames):
		return fmt.Errorf("frames %d is not a power of two up to %d", c.frames, maxFrames)
	case c.memory < 0:
		return fmt.Errorf("negative memory")
	}
	if c.steering != nil {
		if err := c.steering.Validate(); err != nil {
			return err
		}
		if len(c.steering.Match) > 0 && c.rxQueues == 0 {
			return fmt.Errorf("steering needs a receive queue: %w", packetio.ErrUnsupported)
		}
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
