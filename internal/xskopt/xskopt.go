// Package xskopt is the one door to the AF_XDP socket options that more
// than one backend sets or reads on a bound socket: the copy-mode
// transmit budget (XDP_MAX_TX_SKB_BUDGET), which the afxdp backend raises
// on its own sockets and the dpdk backend on net_af_xdp's, and
// XDP_OPTIONS, which tells zero-copy and tells an XDP socket from others.
// The ring and UMEM options only afxdp/xdp sets stay there, beside the
// mappings they describe.
//
// It changes nothing on the host: every option belongs to a socket of this
// process and goes with it.
package xskopt

import (
	"errors"

	"golang.org/x/sys/unix"
)

// DefaultTxBudget is the transmit budget of a socket nobody raised: the
// most descriptors the kernel's copy-mode transmit sends for one sendto,
// which answers EAGAIN while more wait.
const DefaultTxBudget = 32

// RaiseTxBudget sets fd's transmit budget (XDP_MAX_TX_SKB_BUDGET) to ring,
// halved until the kernel takes it (it refuses, EACCES, a budget larger
// than the socket's transmit ring), and returns the budget the socket has. It asks nothing of the kernel for a ring of
// DefaultTxBudget or less. Where the kernel has no such option (before
// Linux 6.16: ENOPROTOOPT) or refuses every size, the socket keeps
// DefaultTxBudget and err says why; the socket works either way, one kick
// per DefaultTxBudget frames.
func RaiseTxBudget(fd, ring int) (budget int, err error) {
	for b := ring; b > DefaultTxBudget; b /= 2 {
		if err = unix.SetsockoptInt(fd, unix.SOL_XDP, unix.XDP_MAX_TX_SKB_BUDGET, b); err == nil {
			return b, nil
		}
		if !errors.Is(err, unix.EACCES) {
			break
		}
	}
	return DefaultTxBudget, err
}

// Options reads a bound socket's XDP_OPTIONS: zero-copy is whether the
// kernel granted it. Any other socket (or descriptor) answers an error,
// which is how IsXDPSocket tells them apart.
func Options(fd int) (zeroCopy bool, err error) {
	v, err := unix.GetsockoptInt(fd, unix.SOL_XDP, unix.XDP_OPTIONS)
	if err != nil {
		return false, err
	}
	return v&unix.XDP_OPTIONS_ZEROCOPY != 0, nil
}

// IsXDPSocket reports whether fd is an AF_XDP socket: the only kind that
// answers a SOL_XDP getsockopt.
func IsXDPSocket(fd int) bool {
	_, err := Options(fd)
	return err == nil
}
