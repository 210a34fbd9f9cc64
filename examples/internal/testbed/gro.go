package testbed

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ethtool commands for GRO (struct ethtool_value).
const (
	ethtoolGGRO = 0x2b
	ethtoolSGRO = 0x2c
)

// ethtoolValue is struct ethtool_value.
type ethtoolValue struct {
	cmd, data uint32
}

// ifreqData is struct ifreq with its union holding a data pointer, as
// SIOCETHTOOL takes it.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// ethtoolGRO reads (set false) or writes (set true) the GRO flag of ifname
// through a socket of the calling thread's network namespace.
func ethtoolGRO(ifname string, set, on bool) (bool, error) {
	if len(ifname) == 0 || len(ifname) >= unix.IFNAMSIZ {
		return false, fmt.Errorf("interface name %q", ifname)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	v := ethtoolValue{cmd: ethtoolGGRO}
	if set {
		v.cmd = ethtoolSGRO
		if on {
			v.data = 1
		}
	}
	var ifr ifreqData
	copy(ifr.name[:], ifname)
	ifr.data = unsafe.Pointer(&v)
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	runtime.KeepAlive(&v)
	if e != 0 {
		name := "ETHTOOL_GGRO"
		if set {
			name = "ETHTOOL_SGRO"
		}
		return false, fmt.Errorf("%s on %s: %w", name, ifname, e)
	}
	return v.data != 0, nil
}

// GRO turns generic receive offload on or off on the example's own
// interface (only on a pair the program made) and returns the function
// that puts it back as it was. A veth passes on the XDP frames its peer
// transmits (the live-frames source, XDP_TX, XDP_REDIRECT) only while its
// NAPI is on, which takes a native XDP program on it or GRO: a receiver
// that attaches no program of its own needs GRO on to be fed that way.
func (b *Bed) GRO(on bool) (restore func() error, err error) {
	return b.gro(b.In, b.Name, on)
}

// PeerGRO is GRO on the far end of the pair.
func (b *Bed) PeerGRO(on bool) (restore func() error, err error) {
	return b.gro(b.InPeer, b.Peer, on)
}

func (b *Bed) gro(in func(func() error) error, name string, on bool) (func() error, error) {
	if !b.Own() {
		return nil, errors.New("testbed: GRO is changed only on a veth pair this program made")
	}
	var was bool
	err := in(func() error {
		var err error
		if was, err = ethtoolGRO(name, false, false); err != nil {
			return err
		}
		if was != on {
			_, err = ethtoolGRO(name, true, on)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("testbed: GRO on %s: %w", name, err)
	}
	if was == on {
		return func() error { return nil }, nil
	}
	var once sync.Once
	var rerr error
	restore := func() error {
		once.Do(func() {
			if err := in(func() error { _, err := ethtoolGRO(name, true, was); return err }); err != nil {
				rerr = fmt.Errorf("testbed: restore GRO on %s: %w", name, err)
			}
		})
		return rerr
	}
	// Close puts it back too, before the pair goes, if the caller did not.
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errors.Join(errors.New("testbed: closed"), restore())
	}
	b.undo = append(b.undo, restore)
	b.mu.Unlock()
	return restore, nil
}

// GROOn reads whether GRO is on on the example's interface.
func (b *Bed) GROOn() (bool, error) { return b.groOn(b.In, b.Name) }

// PeerGROOn reads whether GRO is on on the far end.
func (b *Bed) PeerGROOn() (bool, error) { return b.groOn(b.InPeer, b.Peer) }

func (b *Bed) groOn(in func(func() error) error, name string) (bool, error) {
	var on bool
	err := in(func() error {
		var err error
		on, err = ethtoolGRO(name, false, false)
		return err
	})
	return on, err
}

// ethtool channel commands (struct ethtool_channels).
const (
	ethtoolGChannels = 0x3c
	ethtoolSChannels = 0x3d
)

// ethtoolChannels is struct ethtool_channels.
type ethtoolChannels struct {
	cmd                                     uint32
	maxRx, maxTx, maxOther, maxCombined     uint32
	rxCount, txCount, otherCount, combCount uint32
}

// setQueues makes ifname run n receive and n transmit queues (a veth's
// channels), in the calling thread's namespace, unless it already does.
func setQueues(ifname string, n int) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ch := ethtoolChannels{cmd: ethtoolGChannels}
	call := func(name string) error {
		var ifr ifreqData
		copy(ifr.name[:], ifname)
		ifr.data = unsafe.Pointer(&ch)
		_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
		runtime.KeepAlive(&ch)
		if e != 0 {
			return fmt.Errorf("%s on %s: %w", name, ifname, e)
		}
		return nil
	}
	if err := call("ETHTOOL_GCHANNELS"); err != nil {
		return err
	}
	if int(ch.rxCount) == n && int(ch.txCount) == n {
		return nil
	}
	ch.cmd, ch.rxCount, ch.txCount = ethtoolSChannels, uint32(n), uint32(n)
	return call("ETHTOOL_SCHANNELS")
}
