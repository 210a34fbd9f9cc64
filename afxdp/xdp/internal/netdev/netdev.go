// Package netdev asks the kernel what a network device can do for XDP and
// AF_XDP, through the "netdev" generic-netlink family (Linux 6.3 and later).
//
// The answer decides things up front that would otherwise be found out by a
// trial bind: whether zero-copy is on offer, whether multi-buffer zero-copy
// is (xdp-zc-max-segs > 1), which receive metadata kfuncs the driver
// implements and which transmit metadata the socket may request.
//
// Decode is a pure function over the attribute bytes of a reply, so it is
// tested on golden bytes and fuzzed; Query is the socket around it.
//
// # Why a second netlink library
//
// The rest of packetio speaks rtnetlink through github.com/vishvananda/netlink
// (links, addresses, namespaces), which has typed calls for those and none
// for the netdev family: a query through it would be hand-built requests
// over its low-level nl package. This package needs the opposite, a generic
// netlink socket with family resolution and an attribute decoder, which
// github.com/mdlayher/netlink and genetlink are. The two never share a
// socket, and this package is the only importer of the second.
package netdev

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/mdlayher/netlink"
)

// XDP feature bits, reported in Features.XDP (enum netdev_xdp_act in the
// kernel's uapi/linux/netdev.h).
const (
	// XDPBasic: the driver runs XDP programs (XDP_PASS, XDP_DROP,
	// XDP_ABORTED, XDP_TX).
	XDPBasic = 0x1
	// XDPRedirect: the driver supports XDP_REDIRECT, which AF_XDP needs in
	// native mode.
	XDPRedirect = 0x2
	// XDPNdoXmit: the device can be the target of a redirect.
	XDPNdoXmit = 0x4
	// XDPZeroCopy: the driver supports AF_XDP zero-copy.
	XDPZeroCopy = 0x8
	// XDPHWOffload: the device runs XDP programs in hardware.
	XDPHWOffload = 0x10
	// XDPRxSG: the driver hands multi-buffer (scatter-gather) frames to XDP.
	XDPRxSG = 0x20
	// XDPNdoXmitSG: the device accepts multi-buffer frames as a redirect
	// target.
	XDPNdoXmitSG = 0x40
)

// Receive metadata bits, reported in Features.RxMetadata: the
// bpf_xdp_metadata_rx_* kfuncs the driver implements (enum
// netdev_xdp_rx_metadata).
const (
	// RxMetaTimestamp: bpf_xdp_metadata_rx_timestamp returns a hardware
	// receive timestamp.
	RxMetaTimestamp = 0x1
	// RxMetaHash: bpf_xdp_metadata_rx_hash returns the RSS hash.
	RxMetaHash = 0x2
	// RxMetaVLANTag: bpf_xdp_metadata_rx_vlan_tag returns a stripped VLAN
	// tag.
	RxMetaVLANTag = 0x4
)

// AF_XDP transmit metadata bits, reported in Features.XSK (enum
// netdev_xsk_flags).
const (
	// XSKTxTimestamp: the driver records a hardware transmit timestamp
	// when the descriptor's metadata asks for one.
	XSKTxTimestamp = 0x1
	// XSKTxChecksum: the driver offloads an L4 checksum requested in the
	// descriptor's metadata.
	XSKTxChecksum = 0x2
	// XSKTxLaunchTime: the driver honours a launch time in the metadata
	// (FIFO order).
	XSKTxLaunchTime = 0x4
)

// The generic-netlink family, its command and its attributes
// (uapi/linux/netdev.h).
const (
	familyName    = "netdev"
	familyVersion = 1

	cmdDevGet = 1

	attrIfindex       = 1
	attrXDPFeatures   = 3
	attrXDPZCMaxSegs  = 4
	attrRxMetadata    = 5
	attrXSKFeatures   = 6
	attrTypeFlagsMask = 0x3fff // attribute type without NLA_F_NESTED and NLA_F_NET_BYTEORDER
)

// Features is what the kernel reports for one device.
type Features struct {
	// Ifindex is the interface index the reply is about.
	Ifindex int
	// XDP is the set of XDP* bits.
	XDP uint64
	// ZCMaxSegs is the most buffers a zero-copy multi-buffer frame may
	// span; 0 when the kernel did not report it (no zero-copy).
	ZCMaxSegs uint32
	// RxMetadata is the set of RxMeta* bits.
	RxMetadata uint64
	// XSK is the set of XSK* bits.
	XSK uint64
}

// ZeroCopy reports whether the driver supports AF_XDP zero-copy.
func (f Features) ZeroCopy() bool { return f.XDP&XDPZeroCopy != 0 }

// RxSG reports whether the driver hands multi-buffer frames to XDP.
func (f Features) RxSG() bool { return f.XDP&XDPRxSG != 0 }

// RxTimestamp reports whether the driver gives hardware receive timestamps
// to XDP programs.
func (f Features) RxTimestamp() bool { return f.RxMetadata&RxMetaTimestamp != 0 }

// RxVLANTag reports whether the driver gives stripped VLAN tags to XDP
// programs.
func (f Features) RxVLANTag() bool { return f.RxMetadata&RxMetaVLANTag != 0 }

// TxChecksum reports whether the driver offloads checksums asked for in
// AF_XDP transmit metadata.
func (f Features) TxChecksum() bool { return f.XSK&XSKTxChecksum != 0 }

// TxTimestamp reports whether the driver records transmit timestamps asked
// for in AF_XDP transmit metadata.
func (f Features) TxTimestamp() bool { return f.XSK&XSKTxTimestamp != 0 }

// LaunchTime reports whether the driver honours a launch time in AF_XDP
// transmit metadata.
func (f Features) LaunchTime() bool { return f.XSK&XSKTxLaunchTime != 0 }

var (
	xdpNames = []string{"basic", "redirect", "ndo-xmit", "xsk-zerocopy", "hw-offload", "rx-sg", "ndo-xmit-sg"}
	rxNames  = []string{"timestamp", "hash", "vlan-tag"}
	xskNames = []string{"tx-timestamp", "tx-checksum", "tx-launch-time-fifo"}
)

// String gives the three sets by their kernel names, for Info lines, as in
// "xdp basic,redirect,rx-sg; rx-meta timestamp,hash,vlan-tag; xsk none".
// A reported zero-copy segment limit follows the XDP set; bits this package
// has no name for are shown in hex.
func (f Features) String() string {
	var b strings.Builder
	b.WriteString("xdp ")
	b.WriteString(bitNames(f.XDP, xdpNames))
	if f.ZCMaxSegs != 0 {
		fmt.Fprintf(&b, " zc-max-segs=%d", f.ZCMaxSegs)
	}
	b.WriteString("; rx-meta ")
	b.WriteString(bitNames(f.RxMetadata, rxNames))
	b.WriteString("; xsk ")
	b.WriteString(bitNames(f.XSK, xskNames))
	return b.String()
}

// bitNames lists the names of the set bits of v, lowest first, with any
// unnamed remainder in hex, or "none".
func bitNames(v uint64, names []string) string {
	if v == 0 {
		return "none"
	}
	var parts []string
	for i, n := range names {
		if v&(1<<i) != 0 {
			parts = append(parts, n)
			v &^= 1 << i
		}
	}
	if v != 0 {
		parts = append(parts, fmt.Sprintf("%#x", v))
	}
	return strings.Join(parts, ",")
}

// Decode reads the attributes of a NETDEV_CMD_DEV_GET reply (the bytes after
// the generic-netlink header). Attributes it does not know are skipped, as a
// newer kernel may add some; a known attribute of the wrong size, a
// malformed attribute or a reply without an interface index is an error.
// Integers are in host byte order, as netlink sends them.
func Decode(b []byte) (Features, error) {
	var f Features
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return Features{}, fmt.Errorf("netdev: decode reply: %w", err)
	}
	ad.ByteOrder = binary.NativeEndian
	haveIndex := false
	for ad.Next() {
		switch ad.Type() & attrTypeFlagsMask {
		case attrIfindex:
			v, err := uint32Attr(ad.Bytes(), "ifindex")
			if err != nil {
				return Features{}, err
			}
			if v == 0 || v > 1<<31-1 {
				return Features{}, fmt.Errorf("netdev: decode reply: ifindex %d is out of range", v)
			}
			f.Ifindex, haveIndex = int(v), true
		case attrXDPFeatures:
			if f.XDP, err = uintAttr(ad.Bytes(), "xdp-features"); err != nil {
				return Features{}, err
			}
		case attrXDPZCMaxSegs:
			if f.ZCMaxSegs, err = uint32Attr(ad.Bytes(), "xdp-zc-max-segs"); err != nil {
				return Features{}, err
			}
		case attrRxMetadata:
			if f.RxMetadata, err = uintAttr(ad.Bytes(), "xdp-rx-metadata-features"); err != nil {
				return Features{}, err
			}
		case attrXSKFeatures:
			if f.XSK, err = uintAttr(ad.Bytes(), "xsk-features"); err != nil {
				return Features{}, err
			}
		}
	}
	if err := ad.Err(); err != nil {
		return Features{}, fmt.Errorf("netdev: decode reply: %w", err)
	}
	if !haveIndex {
		return Features{}, errors.New("netdev: decode reply: no ifindex attribute")
	}
	return f, nil
}

// uint32Attr decodes a u32 attribute.
func uint32Attr(b []byte, name string) (uint32, error) {
	if len(b) != 4 {
		return 0, fmt.Errorf("netdev: decode reply: %s is %d bytes, want 4", name, len(b))
	}
	return binary.NativeEndian.Uint32(b), nil
}

// uintAttr decodes a u64 attribute. It also takes 4 bytes, the short form
// the kernel's NLA_UINT type uses for small values.
func uintAttr(b []byte, name string) (uint64, error) {
	switch len(b) {
	case 4:
		return uint64(binary.NativeEndian.Uint32(b)), nil
	case 8:
		return binary.NativeEndian.Uint64(b), nil
	}
	return 0, fmt.Errorf("netdev: decode reply: %s is %d bytes, want 8", name, len(b))
}
