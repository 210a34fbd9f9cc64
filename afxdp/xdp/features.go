package xdp

import (
	"fmt"
	"net"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp/xdp/internal/netdev"
)

// XSKFeatures is what the kernel reports a device can do for XDP and AF_XDP
// (the netdev generic-netlink family, Linux 6.3+): XDP actions, zero-copy
// and its multi-buffer segment limit, the receive metadata kfuncs the
// driver implements, and the transmit metadata requests it honours.
type XSKFeatures = netdev.Features

// QueryXSKFeatures asks the kernel about the interface named ifname, in the
// network namespace of the calling thread. A kernel without the netdev
// family gives an error; Open then finds out by trying.
func QueryXSKFeatures(ifname string) (XSKFeatures, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return XSKFeatures{}, packetio.NewOpError("features", "afxdp", ifname, packetio.NoQueue, fmt.Errorf("%w: %w", packetio.ErrNoDevice, err))
	}
	f, err := netdev.Query(ifi.Index)
	if err != nil {
		return XSKFeatures{}, packetio.NewOpError("features", "afxdp", ifname, packetio.NoQueue, err)
	}
	return f, nil
}

// devFeatures is what Open knows of the device: the kernel's answer, or
// nothing (then every feature is tried rather than assumed).
type devFeatures struct {
	netdev.Features
	known bool
	err   error
}

func queryFeatures(ifindex int) devFeatures {
	f, err := netdev.Query(ifindex)
	return devFeatures{Features: f, known: err == nil, err: err}
}

// zeroCopyPossible: where the kernel says no, a zero-copy bind is not even
// tried.
func (d devFeatures) zeroCopyPossible() bool { return !d.known || d.ZeroCopy() }

func (d devFeatures) rxTimestamp() bool { return d.known && d.RxTimestamp() }
func (d devFeatures) rxVLANTag() bool   { return d.known && d.RxVLANTag() }

func (d devFeatures) String() string {
	if !d.known {
		return fmt.Sprintf("unknown (%v)", d.err)
	}
	return d.Features.String()
}
