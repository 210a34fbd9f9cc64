//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
)

// A port over a kernel interface (net_af_packet, net_af_xdp) does not notice
// when the interface goes away: its bursts keep returning 0 and nothing in
// ethdev says why. So a device over one runs a watcher: one goroutine that
// asks the kernel every WatchInterval whether the interface's index still
// names an interface in the namespace Open ran in, and when it does not,
// latches ErrDeviceGone into every queue. The queues read that latch where
// they already read their failure state, so the fast path gains nothing.
//
// Asking (one SIOCGIFNAME ioctl on a socket made in the namespace at Open,
// no allocation) was chosen over an RTM_DELLINK subscription: it cannot
// miss the event (a subscription loses messages when its socket buffer
// overflows and must then resynchronise), it wakes ten times a second
// rather than on every link event of every interface in the namespace, and
// it is bounded: the loss is seen within one interval. The index, not the
// name, is asked about, so a rename is not a loss and a new interface
// with the old name is not the old one.

// WatchInterval is how often a device over a kernel interface checks that
// the interface is still there: the longest a loss goes unreported.
const WatchInterval = 100 * time.Millisecond

// watcher checks one interface index.
type watcher struct {
	fd    int // a socket in the device's namespace, for the ioctl
	index uint32
	ifr   *unix.Ifreq
	stop  chan struct{}
	done  chan struct{}
}

// newWatcher makes the socket in the calling thread's namespace, which must
// be the device's.
func newWatcher(index uint32) (*watcher, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("a socket to watch interface %d: %w", index, err)
	}
	ifr, err := unix.NewIfreq("")
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return &watcher{fd: fd, index: index, ifr: ifr, stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// present reports whether the index names an interface, and the error
// when it does not. Errors that say nothing about the interface (EINTR,
// ENOMEM) count as present: only the kernel's "no such device" is a loss.
func (w *watcher) present() (bool, error) {
	w.ifr.SetUint32(w.index)
	err := unix.IoctlIfreq(w.fd, unix.SIOCGIFNAME, w.ifr)
	if errors.Is(err, unix.ENODEV) || errors.Is(err, unix.ENXIO) {
		return false, err
	}
	return true, nil
}

// mtu reads the interface's MTU.
func (w *watcher) mtu() (int, error) {
	w.ifr.SetUint32(w.index)
	if err := unix.IoctlIfreq(w.fd, unix.SIOCGIFNAME, w.ifr); err != nil {
		return 0, fmt.Errorf("the name of interface %d: %w", w.index, err)
	}
	if err := unix.IoctlIfreq(w.fd, unix.SIOCGIFMTU, w.ifr); err != nil {
		return 0, fmt.Errorf("the MTU of %s: %w", w.ifr.Name(), err)
	}
	return int(w.ifr.Uint32()), nil
}

// run checks every interval until the interface is gone, when it calls
// lost once and returns, or until stop closes.
func (w *watcher) run(interval time.Duration, lost func(error)) {
	defer close(w.done)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		if ok, err := w.present(); !ok {
			lost(err)
			return
		}
	}
}

// close stops the goroutine, waits for it and closes the socket.
// Idempotent only through the device's Close, which calls it once.
func (w *watcher) close() {
	close(w.stop)
	<-w.done
	unix.Close(w.fd)
}

// checkIface refuses, before the driver sees it, a vdev whose iface=
// argument names no interface in this thread's namespace (the drivers
// report that as EPERM), and a net_af_xdp port on an interface that
// already runs an XDP program, which the driver would fail on or replace.
func checkIface(spec, driver string) error {
	name := devarg(spec, "iface")
	if name == "" || !attaches(driver) {
		return nil
	}
	l, err := netlink.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) || errors.Is(err, unix.ENODEV) {
			return fmt.Errorf("interface %q is not in this thread's network namespace: %w", name, packetio.ErrNoDevice)
		}
		return fmt.Errorf("looking up interface %q: %w", name, err)
	}
	if x := l.Attrs().Xdp; driver == "net_af_xdp" && x != nil && x.Attached {
		return fmt.Errorf("interface %q already runs XDP program %d, which net_af_xdp would have to replace (ip link set dev %s xdp off frees it): %w", name, x.ProgId, name, packetio.ErrBusy)
	}
	return nil
}

// attaches reports whether driver's iface= names an interface that must
// exist (net_tap's names one it creates).
func attaches(driver string) bool {
	switch driver {
	case "net_af_packet", "net_af_xdp", "net_pcap":
		return true
	}
	return false
}

// devarg returns the value of key in a device spec's arguments
// ("net_af_packet0,iface=veth0,qpairs=1"), or "".
func devarg(spec, key string) string {
	_, args, _ := strings.Cut(spec, ",")
	for _, kv := range strings.Split(args, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// errGone is the error every queue reports once the interface is gone.
func errGone(iface string, index uint32, cause error) error {
	return fmt.Errorf("interface %s (index %d) went away (%v): %w", iface, index, cause, packetio.ErrDeviceGone)
}
