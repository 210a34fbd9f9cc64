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
}

// Opener opens a device on an interface (or a backend-specific name).
type Opener func(name string, c Config) (packetio.Device, error)

var (
	openers = map[string]Opener{}
	// needsTag names the build tag of each cgo backend, for the message
	// when it was not built in.
	needsTag = map[string]string{"dpdk": "dpdk", "mlx5": "mlx5"}
)

// Register adds a backend. It is called from init functions.
func Register(name string, o Opener) { openers[name] = o }

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
	return o(name, c)
}
