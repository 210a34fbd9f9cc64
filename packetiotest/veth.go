package packetiotest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/host"
	"github.com/packetio/packetio/internal/netns"
)

// VethEnv is a FaultEnv on a veth pair in two throwaway network namespaces,
// for a backend with a kernel interface: open is called inside the first
// namespace with its end's name; the far end is a plain AF_PACKET socket.
// The pair is removed when the test ends. A backend adds Occupy itself
// where something foreign can hold its interface, using Do and Iface.
func VethEnv(t *testing.T, open func(ifname string) (Device, error)) *VethFaultEnv {
	t.Helper()
	p := netns.New(t)
	a, b := p.A, p.B
	e := &VethFaultEnv{Iface: a.Link, Do: a.Do}
	e.Open = func() (d Device, err error) {
		err = a.Do(func() error {
			d, err = open(a.Link)
			return err
		})
		return d, err
	}
	e.Remove = func() error {
		return a.Do(func() error {
			l, err := netlink.LinkByName(a.Link)
			if err != nil {
				return err
			}
			return netlink.LinkDel(l)
		})
	}
	e.SetLink = func(up bool) error {
		return errors.Join(setLink(a, up), setLink(b, up))
	}
	peer, err := newRawPeer(b)
	if err != nil {
		t.Fatalf("peer socket: %v", err)
	}
	t.Cleanup(peer.close)
	e.Peer = peer
	e.Snapshot = func() (map[string]string, error) { return vethSnapshot(a) }
	e.Child = fmt.Sprintf("/proc/%d/fd/%d %s", os.Getpid(), a.NamespaceFD(), a.Link)
	return e
}

// VethFaultEnv is the FaultEnv VethEnv builds, with what a backend needs to
// add its own Occupy.
type VethFaultEnv struct {
	FaultEnv
	// Iface is the device's interface, inside the namespace Do enters.
	Iface string
	// Do runs fn inside the device's network namespace.
	Do func(fn func() error) error
}

func setLink(h *netns.Host, up bool) error {
	return h.Do(func() error {
		l, err := netlink.LinkByName(h.Link)
		if err != nil {
			return err
		}
		if up {
			return netlink.LinkSetUp(l)
		}
		return netlink.LinkSetDown(l)
	})
}

// vethSnapshot is the host settings of h's interface (internal/host's
// snapshot), what XDP program it runs, the interfaces in its namespace and
// the bpffs pins.
func vethSnapshot(h *netns.Host) (map[string]string, error) {
	s, err := host.TakeSnapshotIn(h.Do, h.Link)
	if err != nil {
		return nil, err
	}
	delete(s, "thread affinity") // the calling thread's, not the host's
	err = h.Do(func() error {
		links, err := netlink.LinkList()
		if err != nil {
			return err
		}
		var names []string
		for _, l := range links {
			names = append(names, l.Attrs().Name)
			if l.Attrs().Name == h.Link {
				x := l.Attrs().Xdp
				s["xdp"] = "none"
				if x != nil && x.Attached {
					s["xdp"] = fmt.Sprintf("program %d mode %d", x.ProgId, x.AttachMode)
				}
			}
		}
		sort.Strings(names)
		s["interfaces"] = strings.Join(names, ",")
		return nil
	})
	if err != nil {
		return nil, err
	}
	var pins []string
	filepath.WalkDir("/sys/fs/bpf", func(path string, _ os.DirEntry, err error) error {
		if err == nil {
			pins = append(pins, path)
		}
		return nil
	})
	s["bpffs"] = strings.Join(pins, ",")
	// DPDK's EAL keeps its run files here (--file-prefix); a killed
	// process must not leave any behind.
	var run []string
	filepath.WalkDir("/var/run/dpdk", func(path string, _ os.DirEntry, err error) error {
		if err == nil {
			run = append(run, path)
		}
		return nil
	})
	s["dpdk run files"] = strings.Join(run, ",")
	return s, nil
}

// rawPeer is a packet socket on the far end that sends and counts the
// suite's frames.
type rawPeer struct {
	fd      int
	ifindex int
	buf     []byte
}

func newRawPeer(h *netns.Host) (*rawPeer, error) {
	p := &rawPeer{fd: -1, ifindex: h.Index, buf: make([]byte, 1<<16)}
	err := h.Do(func() error {
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, int(htons(EtherType)))
		if err != nil {
			return err
		}
		p.fd = fd
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(EtherType), Ifindex: h.Index})
	})
	if err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func (p *rawPeer) close() {
	if p.fd >= 0 {
		unix.Close(p.fd)
		p.fd = -1
	}
}

// Send sends n test frames numbered from first.
func (p *rawPeer) Send(first uint32, n int) int {
	to := &unix.SockaddrLinklayer{Protocol: htons(EtherType), Ifindex: p.ifindex, Halen: 6, Addr: [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	frame := make([]byte, frameLen)
	sent := 0
	for i := range n {
		testFrame(frame, first+uint32(i), frameLen)
		if unix.Sendto(p.fd, frame, 0, to) != nil {
			break
		}
		sent++
	}
	return sent
}

// Received returns the sequence numbers of the test frames that arrived.
func (p *rawPeer) Received() []uint32 {
	var seqs []uint32
	for {
		n, from, err := unix.Recvfrom(p.fd, p.buf, 0)
		if err != nil {
			return seqs
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok && ll.Pkttype == unix.PACKET_OUTGOING {
			continue
		}
		if seq, ours, _ := parseTestFrame(p.buf[:n]); ours {
			seqs = append(seqs, seq)
		}
	}
}
