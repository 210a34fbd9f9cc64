package cbpf

import (
	"errors"
	"fmt"

	"golang.org/x/net/bpf"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/filter/internal/layout"
)

// Accept is what the program returns for a frame it takes: the snap length,
// larger than any frame, so the kernel keeps the frame whole.
const Accept = 0x40000

// MaxInstructions is the kernel's limit on a classic BPF program
// (BPF_MAXINSNS).
const MaxInstructions = 4096

// Packet types of SKF_AD_PKTTYPE (linux/if_packet.h).
const (
	pktHost      = 0
	pktBroadcast = 1
	pktMulticast = 2
)

// Ether types the compiler tests for; the offsets it reads at are
// filter/internal/layout's, the eBPF blocks' own.
const (
	etherTypeIPv4 = 0x0800
	etherTypeIPv6 = 0x86dd
	etherTypeVLAN = 0x8100
	etherTypeQinQ = 0x88a8
)

// Compile turns f into a classic BPF program that returns Accept for a frame
// f takes and 0 for every other frame. It refuses, wrapping
// packetio.ErrUnsupported, exactly what filter.Steering refuses (an invalid
// filter, one that expands to more than packetio.MaxRules, a rule no packet
// can match, a port on a protocol other than TCP and UDP), so a filter is
// accepted by the packet-socket backend exactly when the XDP backend accepts
// it. The promiscuous filter compiles to a program that takes everything.
func Compile(f packetio.SteeringFilter) ([]bpf.Instruction, error) {
	if !f.Promiscuous && len(f.Match) == 0 {
		return []bpf.Instruction{
			bpf.LoadExtension{Num: bpf.ExtType},
			bpf.JumpIf{Cond: bpf.JumpGreaterThan, Val: pktMulticast, SkipTrue: 1},
			bpf.RetConstant{Val: Accept},
			bpf.RetConstant{Val: 0},
		}, nil
	}
	// The eBPF compiler is the reference for what is refused.
	if _, err := filter.Steering(f, func() ([][6]byte, error) { return nil, errors.New("unreachable") }); err != nil {
		return nil, err
	}
	rules, err := f.Rules()
	if err != nil {
		return nil, err
	}
	if len(rules) == 1 && rules[0].Promiscuous {
		return []bpf.Instruction{bpf.RetConstant{Val: Accept}}, nil
	}
	var a asm
	a.prologue()
	for i, r := range rules {
		next := fmt.Sprintf("r%d", i+1)
		a.rule(r, next)
		a.emit(bpf.RetConstant{Val: Accept})
		a.label(next)
	}
	a.emit(bpf.RetConstant{Val: 0})
	prog, err := a.assemble()
	if err != nil {
		return nil, fmt.Errorf("steering: classic BPF: %v: %w", err, packetio.ErrUnsupported)
	}
	if len(prog) > MaxInstructions {
		return nil, fmt.Errorf("steering: filter needs %d classic BPF instructions, more than the kernel's %d: %w", len(prog), MaxInstructions, packetio.ErrUnsupported)
	}
	return prog, nil
}

// Raw assembles prog into the kernel's form, for SO_ATTACH_FILTER.
func Raw(prog []bpf.Instruction) ([]bpf.RawInstruction, error) {
	return bpf.Assemble(prog)
}

// rule emits the conjunction r: every condition falls to miss when it
// fails, and the code falls through when all hold.
func (a *asm) rule(r packetio.Rule, miss string) {
	if r.MACSet {
		m := r.MAC
		a.lenAtLeast(false, 6, miss)
		a.emit(bpf.LoadAbsolute{Off: 0, Size: 4})
		a.jne(uint32(m[0])<<24|uint32(m[1])<<16|uint32(m[2])<<8|uint32(m[3]), miss)
		a.emit(bpf.LoadAbsolute{Off: 4, Size: 2})
		a.jne(uint32(m[4])<<8|uint32(m[5]), miss)
	}
	if r.VLANSet {
		a.vlan(r.VLAN, miss)
	}
	if r.EtherType != 0 {
		a.lenAtLeast(true, layout.EtherType+2, miss)
		a.etherTypeIs(r.EtherType, miss)
	}
	if r.SrcPrefix.IsValid() {
		a.prefix(r, true, miss)
	}
	if r.DstPrefix.IsValid() {
		a.prefix(r, false, miss)
	}
	switch {
	case r.SrcPortSet || r.DstPortSet:
		if r.DstPortSet {
			a.port(r.IPProto, 2, r.DstPort, miss)
		}
		if r.SrcPortSet {
			a.port(r.IPProto, 0, r.SrcPort, miss)
		}
	case r.IPProtoSet:
		// IPv4 protocol (fragments included) or IPv6 Next Header.
		ok, v6 := a.local("ok"), a.local("v6")
		a.lenAtLeast(true, layout.IPv4Proto+1, v6)
		a.loadBase(layout.EtherType, 2)
		a.jne(etherTypeIPv4, v6)
		a.loadBase(layout.IPv4Proto, 1)
		a.jeq(uint32(r.IPProto), ok)
		a.jump(bpf.Jump{}, miss, "")
		a.label(v6)
		a.lenAtLeast(true, layout.IPv6Next+1, miss)
		a.etherTypeIs(etherTypeIPv6, miss)
		a.loadBase(layout.IPv6Next, 1)
		a.jne(uint32(r.IPProto), miss)
		a.label(ok)
	}
}

// prologue stores the frame base in M[0] and X: 4 when the frame carries
// one 802.1Q or 802.1ad tag, else 0.
func (a *asm) prologue() {
	done, tagged := "base_done", "base_tagged"
	a.emit(bpf.LoadConstant{Dst: bpf.RegX, Val: 0})
	a.emit(bpf.LoadExtension{Num: bpf.ExtLen})
	a.jlt(layout.EtherType+2, done)
	a.emit(bpf.LoadAbsolute{Off: layout.EtherType, Size: 2})
	a.jeq(etherTypeVLAN, tagged)
	a.jne(etherTypeQinQ, done)
	a.label(tagged)
	a.emit(bpf.LoadConstant{Dst: bpf.RegX, Val: 4})
	a.label(done)
	a.emit(bpf.StoreScratch{Src: bpf.RegX, N: 0})
}

// vlan matches VLAN id: the tag in the frame, or the one the kernel
// stripped into the packet's metadata. The priority bits never decide.
func (a *asm) vlan(id uint16, miss string) {
	ok, stripped := a.local("ok"), a.local("stripped")
	a.lenAtLeast(false, 16, stripped)
	a.emit(bpf.LoadScratch{Dst: bpf.RegA, N: 0})
	a.jeq(0, stripped) // no tag in the frame
	a.emit(bpf.LoadAbsolute{Off: 14, Size: 2})
	a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0x0fff})
	a.jeq(uint32(id), ok)
	a.label(stripped)
	a.emit(bpf.LoadExtension{Num: bpf.ExtVLANTagPresent})
	a.jeq(0, miss)
	a.emit(bpf.LoadExtension{Num: bpf.ExtVLANTag})
	a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0x0fff})
	a.jne(uint32(id), miss)
	a.label(ok)
}

// prefix matches the rule's source (src) or destination prefix: the family
// of the prefix, and the address words the mask covers.
func (a *asm) prefix(r packetio.Rule, src bool, miss string) {
	p := r.DstPrefix
	if src {
		p = r.SrcPrefix
	}
	var et uint16
	var off uint32
	words := 1
	if p.Addr().Is4() {
		et, off = etherTypeIPv4, layout.IPv4Dst
		if src {
			off = layout.IPv4Src
		}
	} else {
		et, off, words = etherTypeIPv6, layout.IPv6Dst, 4
		if src {
			off = layout.IPv6Src
		}
	}
	a.lenAtLeast(true, off+uint32(4*words), miss)
	a.etherTypeIs(et, miss)
	addr, bits := p.Addr().AsSlice(), p.Bits()
	for w := range words {
		n := min(max(bits-32*w, 0), 32)
		if n == 0 {
			break
		}
		mask := uint32(0xffffffff) << (32 - n)
		net := uint32(addr[4*w])<<24 | uint32(addr[4*w+1])<<16 | uint32(addr[4*w+2])<<8 | uint32(addr[4*w+3])
		a.loadBase(off+uint32(4*w), 4)
		if mask != 0xffffffff {
			a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: mask})
		}
		a.jne(net&mask, miss)
	}
}

// port matches proto packets of either family whose 16-bit field at l4off
// in the L4 header (0 source, 2 destination) is port. IPv4 reads the header
// length from the packet, so a header with options matches too; a later
// fragment never does. IPv6 needs the protocol as its first Next Header.
// This is filter.MatchL4Port, test for test.
func (a *asm) port(proto uint8, l4off uint32, port uint16, miss string) {
	ok, v6 := a.local("ok"), a.local("v6")
	a.lenAtLeast(true, layout.IPv4L4, v6)
	a.loadBase(layout.EtherType, 2)
	a.jne(etherTypeIPv4, v6)
	a.loadBase(layout.IPv4Proto, 1)
	a.jne(uint32(proto), miss)
	a.loadBase(layout.IPv4Frag, 2)
	a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0x1fff})
	a.jne(0, miss) // a later fragment
	a.loadBase(layout.IPv4VerIHL, 1)
	a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: 0x0f})
	a.jlt(5, miss) // not an IPv4 header
	a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpShiftLeft, Val: 2})
	a.emit(bpf.ALUOpX{Op: bpf.ALUOpAdd}) // base + IHL*4: the L4 header minus 14
	a.emit(bpf.StoreScratch{Src: bpf.RegA, N: 1})
	a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAdd, Val: 14 + l4off + 2})
	a.emit(bpf.TAX{})
	a.emit(bpf.LoadExtension{Num: bpf.ExtLen})
	a.jump(bpf.JumpIfX{Cond: bpf.JumpGreaterOrEqual}, "", miss)
	a.emit(bpf.LoadScratch{Dst: bpf.RegX, N: 1})
	a.emit(bpf.LoadIndirect{Off: 14 + l4off, Size: 2})
	a.emit(bpf.LoadScratch{Dst: bpf.RegX, N: 0})
	a.jne(uint32(port), miss)
	a.jump(bpf.Jump{}, ok, "")
	a.label(v6)
	a.lenAtLeast(true, layout.IPv6L4+l4off+2, miss)
	a.etherTypeIs(etherTypeIPv6, miss)
	a.loadBase(layout.IPv6Next, 1)
	a.jne(uint32(proto), miss)
	a.loadBase(layout.IPv6L4+l4off, 2)
	a.jne(uint32(port), miss)
	a.label(ok)
}

func (a *asm) etherTypeIs(et uint16, miss string) {
	a.loadBase(layout.EtherType, 2)
	a.jne(uint32(et), miss)
}

// loadBase loads size bytes at off from the frame base into A.
func (a *asm) loadBase(off, size uint32) {
	a.emit(bpf.LoadIndirect{Off: off, Size: int(size)})
}

// lenAtLeast jumps to miss unless the frame holds n bytes from the frame
// base (fromBase) or from its start. A load past the end would end the
// whole program with 0, where the eBPF block only fails its own condition.
// It leaves X holding the frame base.
func (a *asm) lenAtLeast(fromBase bool, n uint32, miss string) {
	if fromBase {
		a.emit(bpf.LoadScratch{Dst: bpf.RegA, N: 0})
		a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAdd, Val: n})
		a.emit(bpf.TAX{})
		a.emit(bpf.LoadExtension{Num: bpf.ExtLen})
		a.jump(bpf.JumpIfX{Cond: bpf.JumpGreaterOrEqual}, "", miss)
		a.emit(bpf.LoadScratch{Dst: bpf.RegX, N: 0})
		return
	}
	a.emit(bpf.LoadExtension{Num: bpf.ExtLen})
	a.jlt(n, miss)
}
