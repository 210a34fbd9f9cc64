package netstack

import (
	"errors"
	"testing"
	"time"

	"github.com/packetio/packetio"
)

func TestRxSpinConfig(t *testing.T) {
	caps := packetio.Capabilities{MaxFrameSize: 2048}
	for _, tc := range []struct {
		name string
		in   time.Duration
		want time.Duration
		bad  bool
	}{
		{"default", 0, DefaultRxSpin, false},
		{"off", -1, 0, false},
		{"set", 100 * time.Microsecond, 100 * time.Microsecond, false},
		{"most", time.Millisecond, time.Millisecond, false},
		{"too long", time.Millisecond + 1, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Config{Addr: mustPrefix("192.0.2.1/24"), RxSpin: tc.in}.resolve(caps)
			if tc.bad {
				if !errors.Is(err, ErrInvalidConfig) {
					t.Fatalf("RxSpin %v: %v, want ErrInvalidConfig", tc.in, err)
				}
				return
			}
			if err != nil || r.RxSpin != tc.want {
				t.Fatalf("RxSpin %v: resolved %v, %v; want %v", tc.in, r.RxSpin, err, tc.want)
			}
		})
	}
}

// The receive loop spins only after two batches close together, and only
// for the spin's length after the last one.
func TestRxSpin(t *testing.T) {
	const d = 20 * time.Microsecond
	t0 := time.Unix(1000, 0)
	us := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Microsecond) }
	for _, tc := range []struct {
		name    string
		d       time.Duration
		batches []time.Time
		at      time.Time
		want    bool
	}{
		{"no batch yet", d, nil, us(0), false},
		{"a lone batch", d, []time.Time{us(0)}, us(1), false},
		{"request/response, 50µs apart", d, []time.Time{us(0), us(50), us(100)}, us(101), false},
		{"bulk, 5µs apart", d, []time.Time{us(0), us(5), us(10)}, us(11), true},
		{"bulk, spin over", d, []time.Time{us(0), us(5), us(10)}, us(30), false},
		{"bulk then a gap", d, []time.Time{us(0), us(5), us(100)}, us(101), false},
		{"off", 0, []time.Time{us(0), us(1), us(2)}, us(3), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := rxSpin{d: tc.d}
			for _, b := range tc.batches {
				s.batch(b)
			}
			if got := s.on(tc.at); got != tc.want {
				t.Errorf("on = %v, want %v", got, tc.want)
			}
		})
	}
}
