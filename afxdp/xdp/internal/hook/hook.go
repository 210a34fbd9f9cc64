// Package hook is the one door to an interface's XDP hook over rtnetlink:
// what program sits there and how it was attached (Query), and attaching,
// replacing or detaching a program the legacy netlink way (Set), which is
// what the libxdp dispatcher protocol and a replaced foreign program need.
// A program packetio attaches itself goes through a BPF link instead
// (cilium/ebpf's link.AttachXDP), which the kernel removes with its owner.
package hook

import (
	"encoding/binary"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// IFLA_XDP_ATTACHED values: how the program on an interface is attached.
const (
	AttachedNone    = 0
	AttachedDriver  = 1
	AttachedGeneric = 2
	AttachedHW      = 3
	AttachedMulti   = 4 // more than one of the above (one offloaded)
)

// State is what sits on an interface's XDP hook.
type State struct {
	// Attached is one of the Attached* values.
	Attached uint32
	// ProgID is the program's id (0 when none, or AttachedMulti).
	ProgID uint32
}

// Door holds route sockets of one network namespace, so a later call
// (a Close on a thread of another namespace) reaches the same interfaces.
// A nil *Door works in the calling thread's namespace.
type Door struct {
	sock *nl.SocketHandle
	h    *netlink.Handle
}

// OpenDoor opens route sockets in the calling thread's network namespace.
func OpenDoor() (*Door, error) {
	s, err := nl.GetNetlinkSocketAt(netns.None(), netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("open a route socket: %w", err)
	}
	h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("open a route socket: %w", err)
	}
	return &Door{sock: &nl.SocketHandle{Socket: s}, h: h}, nil
}

// Close closes the sockets; a nil Door has none.
func (d *Door) Close() {
	if d == nil {
		return
	}
	d.sock.Close()
	d.h.Close()
}

// Query reads the hook of the interface with index ifindex.
func (d *Door) Query(ifindex int) (State, error) {
	find := netlink.LinkByIndex
	if d != nil {
		find = d.h.LinkByIndex
	}
	lk, err := find(ifindex)
	if err != nil {
		return State{}, fmt.Errorf("look up interface %d: %w", ifindex, err)
	}
	x := lk.Attrs().Xdp
	if x == nil {
		return State{}, nil
	}
	return State{Attached: x.AttachMode, ProgID: x.ProgId}, nil
}

// ModeName names an Attached value as Info reports it.
func ModeName(attached uint32) string {
	switch attached {
	case AttachedNone:
		return "none"
	case AttachedDriver:
		return "native"
	case AttachedGeneric:
		return "generic"
	case AttachedHW:
		return "hardware"
	case AttachedMulti:
		return "multi"
	}
	return "unknown"
}

// ModeFlags are the XDP_FLAGS_*_MODE of an Attached value.
func ModeFlags(attached uint32) int {
	switch attached {
	case AttachedDriver:
		return unix.XDP_FLAGS_DRV_MODE
	case AttachedGeneric:
		return unix.XDP_FLAGS_SKB_MODE
	}
	return 0
}

// Set attaches the program fd (or detaches with -1) to the interface with
// index ifindex the legacy netlink way. With expected >= 0 the kernel acts only if that
// program is the one attached (XDP_FLAGS_REPLACE), so a program that took
// its place meanwhile is never removed.
func (d *Door) Set(ifindex, fd, expected, flags int) error {
	req := nl.NewNetlinkRequest(unix.RTM_SETLINK, unix.NLM_F_ACK)
	if d != nil {
		req.Sockets = map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: d.sock}
	}
	msg := nl.NewIfInfomsg(unix.AF_UNSPEC)
	msg.Index = int32(ifindex)
	req.AddData(msg)
	u32 := func(v int) []byte { return binary.NativeEndian.AppendUint32(nil, uint32(v)) }
	attrs := nl.NewRtAttr(unix.IFLA_XDP|unix.NLA_F_NESTED, nil)
	attrs.AddRtAttr(unix.IFLA_XDP_FD, u32(fd))
	if expected >= 0 {
		flags |= unix.XDP_FLAGS_REPLACE
		attrs.AddRtAttr(unix.IFLA_XDP_EXPECTED_FD, u32(expected))
	}
	if flags != 0 {
		attrs.AddRtAttr(unix.IFLA_XDP_FLAGS, u32(flags))
	}
	req.AddData(attrs)
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}
