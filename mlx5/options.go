//go:build linux && cgo && mlx5 && (amd64 || arm64)

package mlx5

import (
	"fmt"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/host"
	"github.com/packetio/packetio/internal/numa"
	"github.com/packetio/packetio/mlx5/internal/ring"
	"github.com/packetio/packetio/mlx5/internal/wqe"
)

// Limits.
const (
	// MaxQueues is the most queues either direction may have.
	MaxQueues = 64
	// MaxFrames is the most frames a region may hold.
	MaxFrames = 1 << 21
	// RxHeadroom is the bytes left free at the start of every receive
	// frame; MaxFrameSize is the frame size less this.
	RxHeadroom = 64
)

// Option configures Open.
type Option func(*config) error

type config struct {
	tx, rx        int
	txDepth       int
	rxDepth       int
	frames        int
	frameSize     int
	steering      *packetio.SteeringFilter
	cpus          []int
	noAffinity    bool
	multiPacket   int // -1 auto, 0 off, 1 pointer, 2 copied
	ringsPerQueue int
	csum          bool
	numaNode      int    // WithNUMANode; meaningful when numaSet
	numaSet       bool   // a node was named (not -1)
	sysRoot       string // tests: a fake sysfs; "" is /sys
}

func defaults() config {
	return config{tx: 1, txDepth: 1024, rxDepth: 1024, frameSize: 2048, multiPacket: -1}
}

// WithQueues sets both the transmit and the receive queue count.
func WithQueues(n int) Option {
	return func(c *config) error {
		if err := queueCount("WithQueues", n); err != nil {
			return err
		}
		c.tx, c.rx = n, n
		return nil
	}
}

// WithTxQueues sets the transmit queue count (default 1).
func WithTxQueues(n int) Option {
	return func(c *config) error {
		if err := queueCount("WithTxQueues", n); err != nil {
			return err
		}
		c.tx = n
		return nil
	}
}

// WithRxQueues sets the receive queue count (default 0).
func WithRxQueues(n int) Option {
	return func(c *config) error {
		if err := queueCount("WithRxQueues", n); err != nil {
			return err
		}
		c.rx = n
		return nil
	}
}

// queueCount checks the count option opt was given.
// WithNUMANode binds the frame region to NUMA node n (MPOL_BIND with
// MPOL_F_STATIC_NODES) before its pages are touched; Open then faults it
// all in, so the card's DMA and the workers' reads stay on that node. -1,
// the default, follows the port's PCI device
// (/sys/class/net/<if>/device/numa_node) and sets no policy when it
// reports none. A node that is not online is refused by Open with
// packetio.ErrInvalid naming it. Capabilities().NUMABound and NUMANode,
// and Info, say where the region is.
func WithNUMANode(n int) Option {
	return func(c *config) error {
		if n < -1 || n > numa.MaxNode {
			return fmt.Errorf("mlx5: WithNUMANode(%d): want a node from 0 to %d, or -1 to follow the NIC: %w", n, numa.MaxNode, packetio.ErrInvalid)
		}
		c.numaNode, c.numaSet = n, n != -1
		return nil
	}
}

// wantNode is the node asked for, numa.Unset to follow the NIC.
func (c *config) wantNode() int {
	if !c.numaSet {
		return numa.Unset
	}
	return c.numaNode
}

func queueCount(opt string, n int) error {
	if n < 0 || n > MaxQueues {
		return fmt.Errorf("mlx5: %s(%d): a queue count is 0..%d: %w", opt, n, MaxQueues, packetio.ErrInvalid)
	}
	return nil
}

// WithTxDepth sets the send queue size in WQE blocks per ring (a power of
// two, default 1024).
func WithTxDepth(n int) Option { return depth("WithTxDepth", n, func(c *config) { c.txDepth = n }) }

// WithRxDepth sets the receive queue size in buffers (a power of two,
// default 1024).
func WithRxDepth(n int) Option { return depth("WithRxDepth", n, func(c *config) { c.rxDepth = n }) }

// depth checks the ring size option opt was given and applies it.
func depth(opt string, n int, set func(*config)) Option {
	return func(c *config) error {
		if n < 64 || n > 32768 || n&(n-1) != 0 {
			return fmt.Errorf("mlx5: %s(%d): not a power of two in 64..32768: %w", opt, n, packetio.ErrInvalid)
		}
		set(c)
		return nil
	}
}

// WithFrames fixes the number of frames in the region. Without it the region
// holds twice what the queues can have outstanding.
func WithFrames(n int) Option {
	return func(c *config) error {
		if n < 1 || n > MaxFrames {
			return fmt.Errorf("mlx5: WithFrames(%d): outside 1..%d: %w", n, MaxFrames, packetio.ErrInvalid)
		}
		c.frames = n
		return nil
	}
}

// WithFrameSize sets the frame size: a power of two from 256 to 65536
// (default 2048). Received packets get the frame less RxHeadroom.
func WithFrameSize(n int) Option {
	return func(c *config) error {
		if n < 256 || n > 65536 || n&(n-1) != 0 {
			return fmt.Errorf("mlx5: WithFrameSize(%d): not a power of two in 256..65536: %w", n, packetio.ErrInvalid)
		}
		c.frameSize = n
		return nil
	}
}

// WithSteering says which packets the receive queues take from the port.
// Without it they take packets addressed to the interface's own MAC. The
// filter is checked at Open and refused with ErrUnsupported when a rule
// cannot be expressed exactly.
func WithSteering(f packetio.SteeringFilter) Option {
	return func(c *config) error {
		if err := f.Validate(); err != nil {
			return fmt.Errorf("mlx5: WithSteering: %w", err)
		}
		c.steering = &f
		return nil
	}
}

// WithAffinity pins the goroutine that first drives each queue to the next
// CPU of cpus, in order; a goroutine driving several queues keeps its first
// CPU. Every CPU must be in the process's affinity mask (Open refuses one
// that is not), and a goroutine that finds every CPU taken runs unpinned and
// is counted in Info().PinFailures. Without it no goroutine is pinned.
func WithAffinity(cpus ...int) Option {
	return func(c *config) error {
		if len(cpus) == 0 {
			return fmt.Errorf("mlx5: WithAffinity(): needs at least one CPU: %w", packetio.ErrInvalid)
		}
		for _, cpu := range cpus {
			if cpu < 0 || cpu >= 1024 {
				return fmt.Errorf("mlx5: WithAffinity(%v): CPU %d is outside 0..1023: %w", cpus, cpu, packetio.ErrInvalid)
			}
		}
		c.cpus, c.noAffinity = append([]int(nil), cpus...), false
		return nil
	}
}

// WithoutAffinity leaves placement to the scheduler (the default); it
// cancels an earlier WithAffinity.
func WithoutAffinity() Option {
	return func(c *config) error {
		c.cpus, c.noAffinity = nil, true
		return nil
	}
}

// WithMultiPacket forces enhanced multi-packet transmit in the copied form;
// WithoutMultiPacket forces ordinary SEND entries. Without either, Open
// chooses (see the package documentation). A card without enhanced MPW, or
// a port that requires inline headers, refuses WithMultiPacket.
func WithMultiPacket() Option { return func(c *config) error { c.multiPacket = 2; return nil } }

// WithoutMultiPacket forces one ordinary SEND entry per packet.
func WithoutMultiPacket() Option { return func(c *config) error { c.multiPacket = 0; return nil } }

// WithRingsPerQueue sets the hardware send queues behind each transmit queue
// (1..16); 0 lets Open choose.
func WithRingsPerQueue(n int) Option {
	return func(c *config) error {
		if n < 0 || n > 16 {
			return fmt.Errorf("mlx5: WithRingsPerQueue(%d): outside 0..16: %w", n, packetio.ErrInvalid)
		}
		c.ringsPerQueue = n
		return nil
	}
}

// WithChecksumOffload asks the card to compute the IPv4 header and TCP/UDP
// checksums of every transmitted packet.
func WithChecksumOffload() Option { return func(c *config) error { c.csum = true; return nil } }

// validate checks the interface name and every option, and returns the
// configuration, without looking at any hardware: Open calls it first. A
// refusal wraps packetio.ErrInvalid (ErrUnsupported for a steering filter
// that cannot work) and names the input: the option and its value, a nil
// option's position counting from 1, or the interface name, quoted.
func validate(ifname string, opts []Option) (config, error) {
	c := defaults()
	for i, o := range opts {
		if o == nil {
			return config{}, fmt.Errorf("mlx5: option %d is nil: %w", i+1, packetio.ErrInvalid)
		}
		if err := o(&c); err != nil {
			return config{}, err
		}
	}
	if err := c.check(); err != nil {
		return config{}, err
	}
	if err := checkName(ifname); err != nil {
		return config{}, err
	}
	return c, nil
}

// checkName refuses a name no interface can have (host.ValidInterfaceName).
func checkName(name string) error {
	if !host.ValidInterfaceName(name) {
		return fmt.Errorf("mlx5: interface name %q cannot name an interface: want 1 to 15 bytes, not \".\" or \"..\", no NUL, '/', ':' or white space: %w", name, packetio.ErrInvalid)
	}
	return nil
}

// check validates the combination, before any hardware is touched.
func (c *config) check() error {
	if c.tx == 0 && c.rx == 0 {
		return fmt.Errorf("mlx5: WithTxQueues(0) and WithRxQueues(0): no queues asked for: %w", packetio.ErrInvalid)
	}
	if c.steering != nil && c.rx == 0 {
		return fmt.Errorf("mlx5: WithSteering needs receive queues (WithRxQueues): %w", packetio.ErrUnsupported)
	}
	rings := max(c.ringsPerQueue, 1)
	if c.tx*rings > MaxQueues {
		return fmt.Errorf("mlx5: WithTxQueues(%d) with WithRingsPerQueue(%d): more than %d hardware send queues: %w", c.tx, rings, MaxQueues, packetio.ErrInvalid)
	}
	if c.frames > 0 && c.frames < c.need(rings) {
		return fmt.Errorf("mlx5: WithFrames(%d): the queues can hold %d: %w", c.frames, c.need(rings), packetio.ErrInvalid)
	}
	return nil
}

// need is the frames the queues can have outstanding.
func (c *config) need(rings int) int { return c.tx*rings*c.txDepth + c.rx*c.rxDepth }

// txPlan is the transmit descriptor mode Open chose.
type txPlan struct {
	mode   ring.TxMode
	rings  int
	inline int
}

// planTx chooses the transmit descriptor mode from the card's flags, the
// port's required inline header and the queue counts.
func (c *config) planTx(flags uint64, required int) (txPlan, error) {
	empw := flags&wqe.FlagEnhancedMPW != 0 && required == 0
	p := txPlan{mode: ring.ModeSend, rings: max(c.ringsPerQueue, 1), inline: required}
	switch c.multiPacket {
	case 0:
	case 2:
		if !empw {
			return p, fmt.Errorf("mlx5: multi-packet transmit needs enhanced MPW and a port without required inline headers (flags %#x, inline %d): %w", flags, required, packetio.ErrUnsupported)
		}
		p.mode, p.inline = ring.ModeMPWCopied, 0
	default:
		if !empw {
			break
		}
		p.mode, p.inline = ring.ModeMPWPointer, 0
		if (c.rx == 0 && c.tx >= 2) || (c.rx > 0 && c.tx >= 4) {
			// The pointer form shares a device-wide fetch ceiling;
			// the copied form scales per ring.
			p.mode = ring.ModeMPWCopied
			if c.ringsPerQueue == 0 {
				p.rings = 4
			}
		}
	}
	if c.tx*p.rings > MaxQueues {
		p.rings = max(1, MaxQueues/c.tx)
	}
	return p, nil
}
