package xskopt_test

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/xskopt"
)

// xsk makes an unbound AF_XDP socket with a transmit ring of ring entries
// (none for 0): the kernel takes a budget once the ring exists.
func xsk(t *testing.T, ring int) int {
	t.Helper()
	testenv.NeedRoot(t)
	fd, err := unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		testenv.CannotRun(t, "an AF_XDP socket: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if ring > 0 {
		if err := unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_TX_RING, ring); err != nil {
			t.Fatalf("XDP_TX_RING %d: %v", ring, err)
		}
	}
	return fd
}

// TestRaiseTxBudget: the budget becomes the asked size, halved until the
// socket's transmit ring holds it; a socket the
// kernel refuses every size, or that is no XDP socket, keeps the default
// and says why; nothing is asked at or below the default.
func TestRaiseTxBudget(t *testing.T) {
	unixFD := func(t *testing.T) int {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
		return fds[0]
	}
	for _, tc := range []struct {
		name    string
		fd      func(*testing.T) int
		ask     int
		want    int
		wantErr error // nil: none; errAny: any
	}{
		{"the ring", func(t *testing.T) int { return xsk(t, 256) }, 256, 256, nil},
		{"above the ring: halved to it", func(t *testing.T) int { return xsk(t, 256) }, 1024, 256, nil},
		{"halved until the ring holds it", func(t *testing.T) int { return xsk(t, 256) }, 600, 150, nil},
		{"no transmit ring", func(t *testing.T) int { return xsk(t, 0) }, 2048, xskopt.DefaultTxBudget, unix.EACCES},
		{"no XDP socket", unixFD, 1024, xskopt.DefaultTxBudget, errAny},
		{"the default: nothing asked", unixFD, xskopt.DefaultTxBudget, xskopt.DefaultTxBudget, nil},
		{"below the default: nothing asked", unixFD, 8, xskopt.DefaultTxBudget, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := xskopt.RaiseTxBudget(tc.fd(t), tc.ask)
			switch {
			case tc.wantErr == nil && err != nil, tc.wantErr != nil && err == nil:
				t.Errorf("RaiseTxBudget(%d) error %v, want %v", tc.ask, err, tc.wantErr)
			case tc.wantErr != nil && tc.wantErr != errAny && !errors.Is(err, tc.wantErr):
				t.Errorf("RaiseTxBudget(%d) error %v, want %v", tc.ask, err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("RaiseTxBudget(%d) = %d, want %d", tc.ask, got, tc.want)
			}
		})
	}
}

var errAny = errors.New("any error")

// TestOptions: an AF_XDP socket answers XDP_OPTIONS (no zero-copy before
// it is bound), anything else does not.
func TestOptions(t *testing.T) {
	fd := xsk(t, 0)
	if zc, err := xskopt.Options(fd); err != nil || zc {
		t.Errorf("Options(unbound AF_XDP socket) = %v, %v; want false, nil", zc, err)
	}
	if !xskopt.IsXDPSocket(fd) {
		t.Error("IsXDPSocket(AF_XDP socket) = false")
	}
	udp, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(udp)
	if _, err := xskopt.Options(udp); err == nil {
		t.Error("Options(UDP socket): no error")
	}
	if xskopt.IsXDPSocket(udp) || xskopt.IsXDPSocket(-1) {
		t.Error("IsXDPSocket took a UDP socket or -1")
	}
}
