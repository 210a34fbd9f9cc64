package xdp

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

const ethtoolGChannels = 0x3c // ETHTOOL_GCHANNELS

// ethtoolChannels is struct ethtool_channels.
type ethtoolChannels struct {
	cmd                                     uint32
	maxRx, maxTx, maxOther, maxCombined     uint32
	rxCount, txCount, otherCount, combCount uint32
}

// ifreqData is struct ifreq with its union holding a data pointer, as
// SIOCETHTOOL takes it.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// channels asks the driver how many receive queues the interface runs
// (ETHTOOL_GCHANNELS: combined plus receive-only channels), through a
// socket of the calling thread's network namespace.
func channels(ifname string) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	ch := ethtoolChannels{cmd: ethtoolGChannels}
	var ifr ifreqData
	copy(ifr.name[:len(ifr.name)-1], ifname)
	ifr.data = unsafe.Pointer(&ch)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); e != 0 {
		return 0, fmt.Errorf("ETHTOOL_GCHANNELS on %s: %w", ifname, e)
	}
	return int(ch.combCount + ch.rxCount), nil
}

// driverName is the interface's driver (ETHTOOL_GDRVINFO), "" when it has
// none to report.
func driverName(ifname string) string {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	info, err := unix.IoctlGetEthtoolDrvinfo(fd, ifname)
	if err != nil {
		return ""
	}
	return unix.ByteSliceToString(info.Driver[:])
}
