// Package backend lets one example program pick its packetio backend at run
// time with -backend. The pure-Go backends are always registered; the cgo
// ones register themselves from files behind their build tags, and asking
// for one that was not built says which tag to build with.
package backend

import (
	"fmt"
	"sort"
	"strings"

	"github.com/packetio/packetio"
)

// Config is what an example asks of a device, in the vocabulary every
// backend shares. Zero fields take the backend's defaults.
type Config struct {
	TxQueues, RxQueues int
	Frames, FrameSize  int
	Steering           packetio.SteeringFilter
	// LowLatency asks for the backend's low-latency receive mode where it
	// has one (afpacket: WithLowLatency). The polling backends (dpdk,
	// mlx5) have no wait to shorten and ignore it.
	LowLatency bool
	// Stamps asks for arrival timestamps where they cost something and
	// are therefore off by default (afxdp: WithTimestamps). Backends that
	// stamp for free (afpacket, the kernel's own stamp) ignore it.
	Stamps bool
	// BusyPoll asks the backend to busy-poll its queues where it can
	// (afxdp: WithBusyPoll(BusyPollUsecs, BusyPollBudget)); the polling
	// backends (dpdk, mlx5) always do, and afpacket has no such mode.
	BusyPoll bool
	// MultiBuffer lets a packet span several frames, chained with
	// packetio.OptContinued, in both directions (afxdp and afpacket:
	// WithMultiBuffer), for packets bigger than a frame: a 9000-byte
	// jumbo frame is a chain of 3 of afxdp's 4 KiB frames or 5 of
	// afpacket's 2 KiB ones. The backends without it (dpdk, mlx5) refuse
	// it with packetio.ErrUnsupported rather than drop such packets.
	MultiBuffer bool
	// Forwards says the program reads and rewrites the packets it
	// receives and sends them on: a backend that can lay its frames out
	// for that does (afxdp: WithCacheColours, where the link's MTU lets
	// it and without MultiBuffer); the others ignore it.
	Forwards bool
}

// The busy-polling Config.BusyPoll asks of afxdp: SO_BUSY_POLL of 50 µs
// with a budget of 64 packets per poll, what the kernel's AF_XDP sample
// uses.
const (
	BusyPollUsecs  = 50
	BusyPollBudget = 64
)

// Opener opens a device on an interface (or a backend-specific name).
type Opener func(name string, c Config) (packetio.Device, error)

var (
	openers = map[string]Opener{}
	// needsTag names the build tag of each cgo backend, for the message
	// when it was not built in.
	needsTag = map[string]string{"dpdk": "dpdk", "mlx5": "mlx5"}
	// steers lists the backends that take only what a SteeringFilter
	// names and leave the rest to the kernel. afpacket is a tap; dpdk as
	// this registry opens it (net_af_packet over a kernel interface) has
	// no flow engine and refuses matches.
	steers = map[string]bool{"afxdp": true, "mlx5": true}
	// multiBuffer lists the backends that take Config.MultiBuffer.
	multiBuffer = map[string]bool{"afxdp": true, "afpacket": true}
)

// Register adds a backend. It is called from init functions.
func Register(name string, o Opener) { openers[name] = o }

// Steers reports whether backend takes only what Config.Steering names,
// leaving the rest with the kernel. An example that receives its own test
// traffic steers exactly that traffic on such a backend (and nothing
// else is taken from the kernel); on the others it gets everything the
// interface sees and must pick its frames out itself.
func Steers(backend string) bool { return steers[backend] }

// Steering is f on a backend that steers and the zero filter (the
// backend's default) on one that does not, where asking would be refused.
func Steering(backend string, f packetio.SteeringFilter) packetio.SteeringFilter {
	if Steers(backend) {
		return f
	}
	return packetio.SteeringFilter{}
}

// Names lists the backends built into this program.
func Names() []string {
	var ns []string
	for n := range openers {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// Open opens name on backend.
func Open(backend, name string, c Config) (packetio.Device, error) {
	o, ok := openers[backend]
	if !ok {
		if tag, cgo := needsTag[backend]; cgo {
			return nil, fmt.Errorf("backend %q is not built into this program: rebuild with -tags %s (and its C library)", backend, tag)
		}
		return nil, fmt.Errorf("unknown backend %q (built in: %s)", backend, strings.Join(Names(), ", "))
	}
	if c.MultiBuffer && !multiBuffer[backend] {
		return nil, errNoMultiBuffer(backend)
	}
	return o(name, c)
}
