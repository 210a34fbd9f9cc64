package afpacket

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/net/bpf"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter/cbpf"
	"github.com/packetio/packetio/filter/pcapfilter"
)

// WithSteering keeps every frame f does not take out of the receive rings:
// f is compiled to classic BPF (package filter/cbpf) and attached to every
// receive socket (each fanout member) with SO_ATTACH_FILTER and locked with
// SO_LOCK_FILTER before the socket is bound, so no other frame ever reaches
// a ring. The kernel still gets its own copy of every frame, taken or not:
// afpacket is a tap, which Capabilities().SteeringCopies says. Frames the
// filter refuses are counted nowhere (tp_drops counts ring overflows only).
//
// The zero filter takes what the kernel addressed to this host (unicast to
// the interface, broadcast, multicast), not what the interface sees in
// promiscuous mode; Promiscuous takes everything, as no option does. A
// VLAN match takes the tag in the frame or the one the kernel stripped. A
// filter the steering contract or the compiler refuses makes Open fail with
// packetio.ErrUnsupported naming WithSteering.
func WithSteering(f packetio.SteeringFilter) Option {
	return func(c *config) {
		f.Match = append([]packetio.Match(nil), f.Match...)
		c.steering, c.steeringSet = f, true
	}
}

// WithFilterExpr is WithSteering with a tcpdump expression ("udp port 53",
// "ip6 and not tcp"): compiled by filter/pcapfilter with libpcap's semantics
// and attached the same way. The program sees the frame as the kernel holds
// it, with an 802.1Q tag already stripped into its metadata, so a "vlan"
// primitive does not match a tagged frame received here: use WithSteering
// and packetio.MatchVLAN for tags. The empty expression is refused (tcpdump
// reads it as every packet; open without a filter for that), as is an
// expression that does not compile, with packetio.ErrInvalid naming
// WithFilterExpr. It cannot be combined with WithSteering: which of the two
// would decide is not obvious, so Open refuses both with ErrInvalid.
func WithFilterExpr(expr string) Option {
	return func(c *config) { c.filterExpr, c.filterExprSet = expr, true }
}

// steeringConfig is what WithSteering and WithFilterExpr set.
type steeringConfig struct {
	steering      packetio.SteeringFilter
	steeringSet   bool
	filterExpr    string
	filterExprSet bool
}

// resolveSteering compiles the receive filter, if any, into r.rxFilter.
func (c config) resolveSteering(r *resolved) error {
	switch {
	case c.steeringSet && c.filterExprSet:
		return fmt.Errorf("%w: WithSteering(%v) and WithFilterExpr(%q) both filter the receive rings; use one", packetio.ErrInvalid, c.steering, c.filterExpr)
	case c.steeringSet:
		prog, err := cbpf.Compile(c.steering)
		if err != nil {
			if !errors.Is(err, packetio.ErrUnsupported) {
				err = fmt.Errorf("%w: %w", packetio.ErrUnsupported, err)
			}
			return fmt.Errorf("WithSteering(%v): %w", c.steering, err)
		}
		r.rxFilter, r.rxFilterBy = prog, fmt.Sprintf("WithSteering(%v)", c.steering)
	case c.filterExprSet:
		if strings.TrimSpace(c.filterExpr) == "" {
			return fmt.Errorf("%w: WithFilterExpr(%q): the empty expression takes every packet; open without a filter for that", packetio.ErrInvalid, c.filterExpr)
		}
		prog, err := pcapfilter.Compile(c.filterExpr)
		if err != nil {
			return fmt.Errorf("%w: WithFilterExpr(%q): %w", packetio.ErrInvalid, c.filterExpr, err)
		}
		r.rxFilter, r.rxFilterBy = prog, fmt.Sprintf("WithFilterExpr(%q)", c.filterExpr)
	default:
		return nil
	}
	if r.rxQueues == 0 {
		return fmt.Errorf("%w: %s with %s(0): a filter needs a receive queue", packetio.ErrInvalid, r.rxFilterBy, "WithRxQueues")
	}
	raw, err := bpf.Assemble(r.rxFilter)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", packetio.ErrInvalid, r.rxFilterBy, err)
	}
	r.rxFilterRaw = raw
	return nil
}

// steeringBy is Capabilities().SteeringBy: packetio's classic BPF program
// where a steering filter is attached, none otherwise.
func steeringBy(filtered bool) string {
	if filtered {
		return "packetio"
	}
	return ""
}
