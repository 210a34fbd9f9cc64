//go:build linux

package afpacket

import (
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// attachFilter attaches the classic BPF program prog to fd and locks it,
// so nothing (a library, a forked child holding the socket) can detach or
// replace it. openSocket calls it before the socket is bound with a
// protocol: until then the socket has no receive hook, so no frame can be
// queued to it before the filter is in place and there is nothing to drain.
func attachFilter(fd int, prog []bpf.RawInstruction) error {
	if len(prog) == 0 {
		return nil
	}
	sf := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		sf[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fp := unix.SockFprog{Len: uint16(len(sf)), Filter: &sf[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fp); err != nil {
		return fmt.Errorf("SO_ATTACH_FILTER (%d instructions): %w", len(sf), err)
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_LOCK_FILTER, 1); err != nil {
		return fmt.Errorf("SO_LOCK_FILTER: %w", err)
	}
	return nil
}
