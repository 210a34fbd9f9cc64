package afxdp

import (
	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp/xdp"
	"github.com/packetio/packetio/filter"
)

// Defaults.
const (
	// DefaultFrames is the number of frames per queue without WithFrames.
	DefaultFrames = 8192
	// DefaultFrameSize is the frame size without WithFrameSize.
	DefaultFrameSize = 2048
)

// Option changes how Open sets up a Device.
type Option func(*config)

type config struct {
	steering    packetio.SteeringFilter
	steeringSet bool
	queues      int
	frames      int
	frameSize   int
	multiBuffer bool
	txOnly      bool
	txCsum      bool
	match       *filter.Match
	noStamps    bool
	tuning      *xdp.Tuning
	xdp         []xdp.Option
}

// WithSteering names the packets the device takes from the kernel; the rest
// stay with Linux. It is required: a bare Open is refused, because the XDP
// program would otherwise take every packet on the interface, SSH and ARP
// included. SteeringFilter{Promiscuous: true} takes everything on purpose;
// the zero SteeringFilter takes what is addressed to the interface (its MAC,
// broadcast, and the multicast groups it has joined when Open runs).
func WithSteering(f packetio.SteeringFilter) Option {
	return func(c *config) { c.steering, c.steeringSet = f, true }
}

// WithMatch steers with an afxdp/xdp match instead of a SteeringFilter: a
// tcpdump expression (pcapfilter.Match), a classic BPF program
// (bpfmatch.Match), a custom block (filter.NewMatch), or any combination
// (filter.MatchAnd, filter.MatchAny). It stands in for WithSteering and takes
// exactly what the match names.
func WithMatch(m filter.Match) Option {
	return func(c *config) { c.match, c.steeringSet = &m, true }
}

// WithTransmitOnly opens a device with transmit queues only: the XDP
// program redirects nothing (it stays attached, because some drivers
// transmit from an AF_XDP socket only while one is) and the sockets have no
// receive ring. It stands in for WithSteering.
func WithTransmitOnly() Option {
	return func(c *config) { c.txOnly, c.steeringSet = true, true }
}

// WithTxChecksumOffload reserves transmit metadata in front of every
// transmit frame (16 bytes of struct xsk_tx_metadata), so that transmit
// queues implement packetio.OffloadTransmitter for checksum completion:
// the device finishes an L4 checksum from CsumStart (a copy-mode socket
// does it in software). Capabilities().TxChecksumOffload says whether it
// was granted: Open refuses it on a zero-copy driver that does not honour
// the request. Segmentation (GSO) is refused.
func WithTxChecksumOffload() Option { return func(c *config) { c.txCsum = true } }

// WithoutTimestamps leaves arrival stamps out: the XDP program does less
// per packet (in softirq, where the kernel's half of AF_XDP runs), receive
// queues return nil from ReceiveTimestamps and Capabilities().RxTimestamps
// is false.
func WithoutTimestamps() Option { return func(c *config) { c.noStamps = true } }

// WithQueues binds queues 0 to n-1, one transmit and one receive queue each
// (default: every queue the interface has; traffic on an unbound queue goes
// to the kernel unseen).
func WithQueues(n int) Option { return func(c *config) { c.queues = n } }

// WithFrames sets the frames of each queue (default 8192), half for
// receive and half for transmit.
func WithFrames(n int) Option { return func(c *config) { c.frames = n } }

// WithFrameSize sets the frame size, a power of two from 2048 (the default)
// to 65536; some drivers want 4096 for zero-copy. The largest packet a frame
// takes, Capabilities().MaxFrameSize, is the frame less the 256 bytes the
// kernel keeps in front of a received packet and the 16 bytes of its
// arrival stamp.
func WithFrameSize(n int) Option { return func(c *config) { c.frameSize = n } }

// WithMultiBuffer lets a packet span several frames, every one but the last
// marked packetio.OptContinued, in both directions.
func WithMultiBuffer() Option { return func(c *config) { c.multiBuffer = true } }

// WithHostTuning lets Open change the host as t says: NAPI deferral,
// worker placement and interrupt moves, mlx5's xdp_tx_mpwqe flag (see
// xdp.Tuning; xdp.DefaultTuning is what measured best). Without it Open
// changes nothing on the host but attaching the XDP program. Every change is
// listed in Info().Tuning and put back on Close.
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
