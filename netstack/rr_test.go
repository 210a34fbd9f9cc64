package netstack

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio"
)

// RxSpin and AckDelay: zero is the default, negative off, above the
// most refused with ErrInvalidConfig naming the field.
func TestDurationConfig(t *testing.T) {
	caps := packetio.Capabilities{MaxFrameSize: 2048}
	// field points at the Config field under test; resolve fills in the
	// same field of the Config that resolved embeds.
	rxSpin := func(c *Config) *time.Duration { return &c.RxSpin }
	ackDelay := func(c *Config) *time.Duration { return &c.AckDelay }
	for _, tc := range []struct {
		name  string
		field func(*Config) *time.Duration
		in    time.Duration
		want  time.Duration
		bad   bool
	}{
		{"RxSpin default", rxSpin, 0, DefaultRxSpin, false},
		{"RxSpin off", rxSpin, -1, 0, false},
		{"RxSpin set", rxSpin, 100 * time.Microsecond, 100 * time.Microsecond, false},
		{"RxSpin most", rxSpin, time.Millisecond, time.Millisecond, false},
		{"RxSpin too long", rxSpin, time.Millisecond + 1, 0, true},
		{"AckDelay default", ackDelay, 0, DefaultAckDelay, false},
		{"AckDelay off", ackDelay, -1, 0, false},
		{"AckDelay set", ackDelay, 200 * time.Microsecond, 200 * time.Microsecond, false},
		{"AckDelay most", ackDelay, 100 * time.Millisecond, 100 * time.Millisecond, false},
		{"AckDelay too long", ackDelay, 100*time.Millisecond + 1, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Addr: mustPrefix("192.0.2.1/24")}
			*tc.field(&c) = tc.in
			r, err := c.resolve(caps)
			if tc.bad {
				if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), strings.Fields(tc.name)[0]) {
					t.Fatalf("%s: %v, want ErrInvalidConfig naming the field", tc.name, err)
				}
				return
			}
			if got := *tc.field(&r.Config); err != nil || got != tc.want {
				t.Fatalf("%s: resolved %v, %v; want %v", tc.name, got, err, tc.want)
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
