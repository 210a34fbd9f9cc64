// Package clock turns mlx5 device ticks, as found in a CQE timestamp, into
// nanoseconds on the device's own clock.
//
// The device counter is Mask+1 ticks wide and wraps (on a ConnectX-6 Dx
// 2^41 ticks of 1 ns: every 36.6 minutes). A Counter extends it to 64 bits by
// counting wraps, and scales ticks to nanoseconds with the Mult and Shift
// that mlx5dv_get_clock_info reports. The epoch is the device's, not the
// wall clock's: only differences between stamps mean anything.
package clock

import "math/bits"

// Info is the device clock description from mlx5dv_get_clock_info.
type Info struct {
	Mult  uint32 // ns = ticks * Mult >> Shift
	Shift uint32
	Mask  uint64 // the counter's width: Mask+1 ticks per wrap
}

// OK reports whether the device has a usable clock. A zero Info means no
// timestamps.
func (i Info) OK() bool { return i.Mult != 0 && i.Mask != 0 && i.Shift < 64 }

// Counter converts one queue's ticks to nanoseconds. It is not safe for
// concurrent use; one queue owns one Counter.
type Counter struct {
	info  Info
	last  uint64 // last raw tick seen
	wraps uint64
	seen  bool
}

// NewCounter returns a Counter for info.
func NewCounter(info Info) Counter { return Counter{info: info} }

// NS returns the nanoseconds of a raw tick value, counting a wrap when the
// counter stepped back by more than half its range since the last call. A
// smaller backward step is a stamp that arrived out of order, not a wrap. A
// tick that jumps forward by more than half the range right after a wrap is
// taken as a late stamp from before it. It returns 0 when the clock is not
// OK.
func (c *Counter) NS(ticks uint64) uint64 {
	if !c.info.OK() {
		return 0
	}
	mask := c.info.Mask
	raw := ticks & mask
	wraps := c.wraps
	if c.seen {
		switch {
		case raw < c.last && c.last-raw > mask/2:
			c.wraps++
			wraps = c.wraps
			c.last = raw
		case raw > c.last && raw-c.last > mask/2:
			// From before the last wrap: do not move last.
			if wraps > 0 {
				wraps--
			}
		default:
			if raw > c.last {
				c.last = raw
			}
		}
	} else {
		c.last, c.seen = raw, true
	}
	// total = wraps*(mask+1) + raw, in 128 bits, then * Mult >> Shift.
	hi, lo := bits.Mul64(wraps, mask+1)
	var carry uint64
	lo, carry = bits.Add64(lo, raw, 0)
	hi += carry
	// (hi:lo) * Mult
	h1, l1 := bits.Mul64(lo, uint64(c.info.Mult))
	h2 := hi * uint64(c.info.Mult)
	h1 += h2
	s := uint(c.info.Shift)
	if s == 0 {
		return l1
	}
	return l1>>s | h1<<(64-s)
}

// OK reports whether the counter's clock is usable.
func (c *Counter) OK() bool { return c.info.OK() }
