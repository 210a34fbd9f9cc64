package clock

import (
	"math/big"
	"testing"
)

// exact computes ((wraps*(mask+1)+raw)*mult)>>shift with big integers.
func exact(info Info, wraps, raw uint64) uint64 {
	t := new(big.Int).SetUint64(wraps)
	t.Mul(t, new(big.Int).Add(new(big.Int).SetUint64(info.Mask), big.NewInt(1)))
	t.Add(t, new(big.Int).SetUint64(raw))
	t.Mul(t, new(big.Int).SetUint64(uint64(info.Mult)))
	t.Rsh(t, uint(info.Shift))
	return t.Uint64()
}

var cx6 = Info{Mult: 1 << 31, Shift: 31, Mask: 1<<41 - 1}

func TestZeroClockIsUnusable(t *testing.T) {
	for _, i := range []Info{{}, {Mult: 1}, {Mask: 1}, {Mult: 1, Mask: 1, Shift: 64}} {
		if i.OK() {
			t.Fatalf("%+v OK", i)
		}
		c := NewCounter(i)
		if c.NS(12345) != 0 {
			t.Fatal("a clock that is not OK produced a time")
		}
	}
}

func TestOneNanosecondTicks(t *testing.T) {
	c := NewCounter(cx6)
	for _, v := range []uint64{1, 1000, 1 << 40} {
		if got := c.NS(v); got != v {
			t.Fatalf("NS(%d) = %d", v, got)
		}
	}
}

func TestWrapIsCounted(t *testing.T) {
	c := NewCounter(cx6)
	near := cx6.Mask - 10
	if got := c.NS(near); got != near {
		t.Fatalf("before wrap %d", got)
	}
	if got := c.NS(5); got != cx6.Mask+1+5 {
		t.Fatalf("after wrap %d, want %d", got, cx6.Mask+1+5)
	}
	// A late stamp from before the wrap keeps its old lap.
	if got := c.NS(near + 2); got != near+2 {
		t.Fatalf("late stamp %d, want %d", got, near+2)
	}
	if got := c.NS(7); got != cx6.Mask+1+7 {
		t.Fatalf("back after wrap %d", got)
	}
	// Bits above the mask are ignored.
	if got := c.NS(^cx6.Mask | 8); got != cx6.Mask+1+8 {
		t.Fatalf("high bits not masked: %d", got)
	}
}

func TestOutOfOrderIsNotAWrap(t *testing.T) {
	c := NewCounter(cx6)
	c.NS(1000)
	if got := c.NS(900); got != 900 {
		t.Fatalf("small backward step counted as a wrap: %d", got)
	}
	if got := c.NS(1100); got != 1100 {
		t.Fatalf("%d", got)
	}
}

func TestExactArithmetic(t *testing.T) {
	for _, info := range []Info{
		cx6,
		{Mult: 0x9c40_0000, Shift: 29, Mask: 1<<63 - 1}, // 156.25 MHz-ish, wide counter
		{Mult: 3, Shift: 0, Mask: 0xffff},
		{Mult: 0xffffffff, Shift: 63, Mask: 0xffffffff},
	} {
		c := NewCounter(info)
		var wraps uint64
		raw := uint64(0)
		step := info.Mask/3 + 1
		for i := 0; i < 50; i++ {
			next := (raw + step) & info.Mask
			if next < raw {
				wraps++
			}
			raw = next
			if got, want := c.NS(raw), exact(info, wraps, raw); got != want {
				t.Fatalf("%+v step %d: NS = %d, want %d", info, i, got, want)
			}
		}
	}
}
