// Package stamp says which clock a device stamps arrivals with, and reads
// that clock now, so an example can tell how long a packet waited between
// its stamp and the program: the receive path's share of a round trip.
//
// Stamps are only comparable with a clock the program can read. afpacket
// stamps with the kernel's CLOCK_REALTIME when the frame enters the ring;
// afxdp with CLOCK_MONOTONIC at the XDP hook (bpf_ktime_get_ns) on drivers
// without a hardware stamp, veth among them. A hardware clock (a NIC's, a
// DPDK port's) is not this machine's: its stamps still give gaps between
// arrivals, never a time to compare with now.
package stamp

import (
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
)

// Clock is a device's arrival clock.
type Clock struct {
	// Name says which clock, for output.
	Name string
	id   int32 // a POSIX clock, or -1 when the program cannot read it
}

// Comparable reports whether Now reads the clock the stamps are on.
func (c Clock) Comparable() bool { return c.id >= 0 }

// Now reads the clock in nanoseconds (one clock_gettime call), or 0 when
// it is not Comparable.
func (c Clock) Now() uint64 {
	if c.id < 0 {
		return 0
	}
	var ts unix.Timespec
	if unix.ClockGettime(c.id, &ts) != nil {
		return 0
	}
	return uint64(ts.Nano())
}

// Since is how long before now a stamp was taken, given now from Now: 0 for
// a stamp from the future (a clock that stepped), or when either is 0.
func Since(now, stamp uint64) time.Duration {
	if now == 0 || stamp == 0 || stamp > now {
		return 0
	}
	return time.Duration(now - stamp)
}

// Of says which clock d stamps with.
func Of(d packetio.Device) Clock {
	if x, ok := d.(*afxdp.Device); ok {
		return ofInfo(x.Info().Timestamps)
	}
	return ofBackend(d.Capabilities().Backend)
}

// ofInfo reads afxdp's Info().Timestamps.
func ofInfo(s string) Clock {
	switch {
	case s == "" || s == "off":
		return Clock{Name: "none (stamps off)", id: -1}
	case strings.HasPrefix(s, "CLOCK_MONOTONIC"):
		return Clock{Name: "CLOCK_MONOTONIC at the XDP hook", id: unix.CLOCK_MONOTONIC}
	}
	// The driver's hardware clock, with CLOCK_MONOTONIC where it gives
	// none: not one clock, so nothing to compare with.
	return Clock{Name: "the driver's clock (" + s + ")", id: -1}
}

func ofBackend(backend string) Clock {
	if backend == "afpacket" {
		return Clock{Name: "CLOCK_REALTIME as the kernel queued the frame", id: unix.CLOCK_REALTIME}
	}
	return Clock{Name: backend + "'s device clock", id: -1}
}
