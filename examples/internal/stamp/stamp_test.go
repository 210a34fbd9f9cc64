package stamp

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestClocks(t *testing.T) {
	for _, tc := range []struct {
		c    Clock
		id   int32
		comp bool
	}{
		{ofInfo("CLOCK_MONOTONIC (bpf_ktime_get_ns) at the XDP hook"), unix.CLOCK_MONOTONIC, true},
		{ofInfo("off"), -1, false},
		{ofInfo(""), -1, false},
		{ofInfo("the driver's hardware clock (bpf_xdp_metadata_rx_timestamp) where it gives one, else CLOCK_MONOTONIC"), -1, false},
		{ofBackend("afpacket"), unix.CLOCK_REALTIME, true},
		{ofBackend("mlx5"), -1, false},
	} {
		if tc.c.id != tc.id || tc.c.Comparable() != tc.comp || tc.c.Name == "" {
			t.Errorf("%+v: want clock %d, comparable %v", tc.c, tc.id, tc.comp)
		}
		if !tc.comp && tc.c.Now() != 0 {
			t.Errorf("%s: Now on a clock the program cannot read", tc.c.Name)
		}
	}
}

func TestNowIsTheMonotonicClockOfGo(t *testing.T) {
	c := ofInfo("CLOCK_MONOTONIC at the XDP hook")
	a := c.Now()
	time.Sleep(2 * time.Millisecond)
	b := c.Now()
	if a == 0 || b <= a || time.Duration(b-a) < 2*time.Millisecond {
		t.Fatalf("CLOCK_MONOTONIC read %d then %d", a, b)
	}
	r := ofBackend("afpacket").Now()
	if d := time.Duration(int64(r) - time.Now().UnixNano()); d < -time.Second || d > time.Second {
		t.Fatalf("CLOCK_REALTIME is %v from time.Now", d)
	}
}

func TestSince(t *testing.T) {
	for _, tc := range []struct {
		now, stamp uint64
		want       time.Duration
	}{
		{1000, 400, 600},
		{1000, 1000, 0},
		{1000, 2000, 0}, // a stamp from the future
		{0, 5, 0},
		{5, 0, 0},
	} {
		if got := Since(tc.now, tc.stamp); got != tc.want {
			t.Errorf("Since(%d, %d) = %v, want %v", tc.now, tc.stamp, got, tc.want)
		}
	}
}
