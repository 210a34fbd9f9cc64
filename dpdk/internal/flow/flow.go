// Package flow compiles packetio steering rules into rte_flow patterns and
// installs them through an Engine, in pure Go. The eal package is the real
// Engine (a thin C translation of Flow into rte_flow items); tests use a
// fake.
//
// Items come in the order rte_flow requires, outermost first: ETH, then VLAN,
// then IPV4 or IPV6, then TCP or UDP. The action is QUEUE for one receive
// queue and RSS over the queues for several. A rule that cannot be expressed
// exactly is refused with packetio.ErrUnsupported, never widened.
package flow

import (
	"errors"
	"fmt"

	"github.com/packetio/packetio"
)

// ItemType is an rte_flow pattern item.
type ItemType uint8

// The item types used. The values are this package's, not DPDK's.
const (
	ItemETH ItemType = iota + 1
	ItemVLAN
	ItemIPv4
	ItemIPv6
	ItemTCP
	ItemUDP
)

var itemNames = [...]string{ItemETH: "eth", ItemVLAN: "vlan", ItemIPv4: "ipv4", ItemIPv6: "ipv6", ItemTCP: "tcp", ItemUDP: "udp"}

// String names the item as testpmd does.
func (t ItemType) String() string {
	if int(t) < len(itemNames) && itemNames[t] != "" {
		return itemNames[t]
	}
	return fmt.Sprintf("item(%d)", uint8(t))
}

// Item is one pattern item with its spec and mask. Only the fields of its
// Type mean anything; a zero mask leaves a field unmatched. Multi-byte
// values are in host order; addresses are bytes in network order (IPv4 in
// the first four).
type Item struct {
	Type ItemType

	DstMAC, DstMACMask       [6]byte // ETH
	EtherType, EtherTypeMask uint16  // ETH, or VLAN's inner type

	TCI, TCIMask uint16 // VLAN

	Src, SrcMask, Dst, DstMask [16]byte // IPV4, IPV6
	Proto, ProtoMask           uint8    // IPV4 next_proto_id, IPV6 proto

	SrcPort, SrcPortMask, DstPort, DstPortMask uint16 // TCP, UDP
}

// Flow is one rte_flow rule: an ingress pattern and a queue or RSS action.
type Flow struct {
	Items []Item
	// Queues are the receive queues matching packets go to: one means the
	// QUEUE action, several mean RSS over them.
	Queues []uint16
}

// RSS reports whether the action spreads over several queues.
func (f Flow) RSS() bool { return len(f.Queues) > 1 }

// String renders the pattern in testpmd's words, for errors and tests.
func (f Flow) String() string {
	s := "pattern"
	for _, it := range f.Items {
		s += " " + it.Type.String()
		switch it.Type {
		case ItemETH:
			if it.DstMACMask != ([6]byte{}) {
				m := it.DstMAC
				s += fmt.Sprintf(" dst is %02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
			}
			if it.EtherTypeMask != 0 {
				s += fmt.Sprintf(" type is 0x%04x", it.EtherType)
			}
		case ItemVLAN:
			s += fmt.Sprintf(" vid is %d", it.TCI)
			if it.EtherTypeMask != 0 {
				s += fmt.Sprintf(" inner_type is 0x%04x", it.EtherType)
			}
		case ItemIPv4, ItemIPv6:
			if it.ProtoMask != 0 {
				s += fmt.Sprintf(" proto is %d", it.Proto)
			}
		case ItemTCP, ItemUDP:
			if it.SrcPortMask != 0 {
				s += fmt.Sprintf(" src is %d", it.SrcPort)
			}
			if it.DstPortMask != 0 {
				s += fmt.Sprintf(" dst is %d", it.DstPort)
			}
		}
		s += " /"
	}
	s += " end actions "
	if f.RSS() {
		s += fmt.Sprintf("rss queues %v", f.Queues)
	} else if len(f.Queues) == 1 {
		s += fmt.Sprintf("queue index %d", f.Queues[0])
	}
	return s + " / end"
}

// Build compiles one rule into flows for the given queues. A rule matching
// a protocol without an address is "IPv4 or IPv6" and becomes two flows.
// defaultMAC, when non-nil, is matched by rules that name no destination
// MAC, so a port shared with the kernel takes only its own unicast.
func Build(r packetio.Rule, queues []uint16, defaultMAC *[6]byte) ([]Flow, error) {
	if len(queues) == 0 {
		return nil, fmt.Errorf("flow: no receive queue to steer to: %w", packetio.ErrUnsupported)
	}
	if r.Promiscuous {
		return nil, fmt.Errorf("flow: a promiscuous rule is a port setting, not a flow: %w", packetio.ErrUnsupported)
	}
	eth := Item{Type: ItemETH}
	if r.MACSet {
		eth.DstMAC, eth.DstMACMask = r.MAC, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	} else if defaultMAC != nil {
		eth.DstMAC, eth.DstMACMask = *defaultMAC, [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	}
	items := []Item{eth}
	typeItem := &items[0]
	if r.VLANSet {
		items = append(items, Item{Type: ItemVLAN, TCI: r.VLAN, TCIMask: 0x0fff})
		typeItem = &items[1]
	}

	ipFields := r.IPProtoSet || r.SrcPrefix.IsValid() || r.DstPrefix.IsValid() || r.SrcPortSet || r.DstPortSet
	if !ipFields {
		if r.EtherType != 0 {
			typeItem.EtherType, typeItem.EtherTypeMask = r.EtherType, 0xffff
		}
		return []Flow{{Items: items, Queues: queues}}, nil
	}

	v4, v6 := true, true
	for _, p := range []struct {
		ok   bool
		is4  bool
		name string
	}{{r.SrcPrefix.IsValid(), r.SrcPrefix.Addr().Is4(), "source"}, {r.DstPrefix.IsValid(), r.DstPrefix.Addr().Is4(), "destination"}} {
		if p.ok {
			v4, v6 = v4 && p.is4, v6 && !p.is4
		}
	}
	switch r.EtherType {
	case 0:
	case 0x0800:
		v6 = false
	case 0x86dd:
		v4 = false
	default:
		return nil, fmt.Errorf("flow: EtherType 0x%04x with IP conditions can match nothing: %w", r.EtherType, packetio.ErrUnsupported)
	}
	if !v4 && !v6 {
		return nil, fmt.Errorf("flow: the rule mixes IPv4 and IPv6 conditions: %w", packetio.ErrUnsupported)
	}
	var l4 *Item
	if r.SrcPortSet || r.DstPortSet {
		l4 = &Item{}
		switch r.IPProto {
		case packetio.IPProtoTCP:
			l4.Type = ItemTCP
		case packetio.IPProtoUDP:
			l4.Type = ItemUDP
		default:
			return nil, fmt.Errorf("flow: ports of IP protocol %d cannot be matched: %w", r.IPProto, packetio.ErrUnsupported)
		}
		if r.SrcPortSet {
			l4.SrcPort, l4.SrcPortMask = r.SrcPort, 0xffff
		}
		if r.DstPortSet {
			l4.DstPort, l4.DstPortMask = r.DstPort, 0xffff
		}
	}
	var flows []Flow
	for _, fam := range []ItemType{ItemIPv4, ItemIPv6} {
		if (fam == ItemIPv4 && !v4) || (fam == ItemIPv6 && !v6) {
			continue
		}
		ip := Item{Type: fam}
		if r.SrcPrefix.IsValid() {
			ip.Src, ip.SrcMask = addrMask(r.SrcPrefix.Addr().AsSlice(), r.SrcPrefix.Bits())
		}
		if r.DstPrefix.IsValid() {
			ip.Dst, ip.DstMask = addrMask(r.DstPrefix.Addr().AsSlice(), r.DstPrefix.Bits())
		}
		if r.IPProtoSet {
			ip.Proto, ip.ProtoMask = r.IPProto, 0xff
		}
		its := append(append([]Item(nil), items...), ip)
		if l4 != nil {
			its = append(its, *l4)
		}
		flows = append(flows, Flow{Items: its, Queues: queues})
	}
	return flows, nil
}

func addrMask(a []byte, bits int) (addr, mask [16]byte) {
	for i := range a {
		b := min(max(bits-8*i, 0), 8)
		mask[i] = byte(0xff << (8 - b))
		addr[i] = a[i] & mask[i]
	}
	return addr, mask
}

// BuildFilter compiles a whole filter: every conjunction of f.Rules(). A
// promiscuous or zero filter compiles to no flows.
func BuildFilter(f packetio.SteeringFilter, queues []uint16, defaultMAC *[6]byte) ([]Flow, error) {
	if f.Promiscuous || len(f.Match) == 0 {
		return nil, f.Validate()
	}
	rules, err := f.Rules()
	if err != nil {
		return nil, err
	}
	var flows []Flow
	for _, r := range rules {
		fl, err := Build(r, queues, defaultMAC)
		if err != nil {
			return nil, err
		}
		flows = append(flows, fl...)
	}
	return flows, nil
}

// Engine is a port's rte_flow API.
type Engine interface {
	// Isolate asks the port to deliver only what flows match, leaving
	// the rest with the kernel. It must be called before configure.
	Isolate() error
	// Validate asks whether the port would install f.
	Validate(f Flow) error
	// Create installs f; the port must be started.
	Create(f Flow) error
	// Flush removes every flow.
	Flush() error
}

// Error is a refusal from the driver: the rte_errno and the rte_flow_error
// type and message.
type Error struct {
	Op      string // "validate", "create", "isolate", "flush"
	Errno   int
	Type    int
	Message string
}

// Error renders the refusal with the driver's reason.
func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "refused with no reason given"
	}
	return fmt.Sprintf("rte_flow_%s: %s (errno %d, error type %d)", e.Op, msg, e.Errno, e.Type)
}

// Install validates every flow, then creates every flow. Any refusal (no
// flow engine at all, an item or action the driver lacks, a validate that
// passed followed by a create that did not) removes what was created and
// returns an error wrapping packetio.ErrUnsupported: the port does not
// steer as asked.
func Install(e Engine, flows []Flow) error {
	for _, f := range flows {
		if err := e.Validate(f); err != nil {
			return refused(f, err)
		}
	}
	for i, f := range flows {
		if err := e.Create(f); err != nil {
			err = refused(f, err)
			if i > 0 {
				if ferr := e.Flush(); ferr != nil {
					err = errors.Join(err, fmt.Errorf("flow: removing the %d flows already created: %w", i, ferr))
				}
			}
			return err
		}
	}
	return nil
}

// Isolate calls e.Isolate and maps a refusal to ErrUnsupported.
func Isolate(e Engine) error {
	if err := e.Isolate(); err != nil {
		return fmt.Errorf("flow: this port cannot leave unmatched traffic with the kernel: %w: %w", packetio.ErrUnsupported, err)
	}
	return nil
}

func refused(f Flow, err error) error {
	return fmt.Errorf("flow: this device will not match %s: %w: %w", f, packetio.ErrUnsupported, err)
}
