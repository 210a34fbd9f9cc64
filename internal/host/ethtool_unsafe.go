package host

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ifreqData is struct ifreq with the ifr_data member of its union: a
// pointer to the ethtool command buffer. The union (its largest member is
// struct ifmap) is 24 bytes on 64-bit and 16 on 32-bit systems, which is
// the pointer plus 8 + sizeof(pointer) bytes of padding on both.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [8 + unsafe.Sizeof(uintptr(0))]byte
}

// ethtoolSocket is an AF_INET datagram socket used only for SIOCETHTOOL.
// It belongs to the network namespace of the thread that opened it.
type ethtoolSocket struct{ fd int }

func openEthtool() (ethtoolIO, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open an ethtool socket: %w", err)
	}
	return &ethtoolSocket{fd: fd}, nil
}

func (s *ethtoolSocket) ethtool(ifname string, data []byte) error {
	if len(data) < 4 {
		return fmt.Errorf("ethtool: command buffer of %d bytes", len(data))
	}
	if len(ifname) >= unix.IFNAMSIZ {
		return fmt.Errorf("ethtool: interface name %q is too long", ifname)
	}
	var ifr ifreqData
	copy(ifr.name[:], ifname)
	// The kernel reads and writes len(data) bytes at ifr.data; data is a
	// heap slice, kept alive across the call below.
	ifr.data = unsafe.Pointer(&data[0])
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(s.fd), uintptr(unix.SIOCETHTOOL), uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(data)
	if errno != 0 {
		return errno
	}
	return nil
}

func (s *ethtoolSocket) close() error { return unix.Close(s.fd) }
