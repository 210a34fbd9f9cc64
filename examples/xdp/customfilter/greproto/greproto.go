// Package greproto is a custom XDP match for GRE over IPv4 carrying one
// protocol: 0x6558 for Ethernet frames (gretap, transparent Ethernet
// bridging), 0x0800 for IPv4 (plain gre), 0x86dd for IPv6, 0x8847 for MPLS.
//
// The protocol type is at bytes 2-3 of the GRE header whatever optional
// fields (checksum, key, sequence number) follow, so no flag has to be
// decoded to find it; only version 0 is GRE as RFC 2784 and 2890 define it
// (version 1 is PPTP's enhanced GRE, whose protocol field means something
// else). The block follows the IPv4 header length and is for IPv4 only: GRE
// over IPv6 is a near miss.
//
//	fleet, err := xdp.Open("eth0", xdp.WithFilter(greproto.Match(0x6558)))
package greproto

import (
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/packetio/packetio/filter"
)

// Protocol types worth knowing.
const (
	TransparentEthernet = 0x6558
	IPv4                = 0x0800
	IPv6                = 0x86dd
)

// Match matches GRE (IPv4 protocol 47, version 0) packets whose protocol
// type is proto. Later IPv4 fragments, which carry no GRE header, never
// match.
func Match(proto uint16) filter.Match {
	return filter.NewMatch(fmt.Sprintf("gre/%#04x", proto), func(env filter.MatchEnv) (asm.Instructions, error) {
		ins, base := env.FrameBase()
		ins = append(ins, env.Bounds(base, 14+20)...)
		ins = append(ins,
			asm.LoadMem(asm.R1, base, 12, asm.Half),
			asm.JNE.Imm(asm.R1, filter.NetShort(0x0800), env.Next),
			asm.LoadMem(asm.R1, base, 14+9, asm.Byte),
			asm.JNE.Imm(asm.R1, 47, env.Next), // GRE
			asm.LoadMem(asm.R1, base, 14+6, asm.Half),
			asm.And.Imm(asm.R1, filter.NetShort(0x1fff)),
			asm.JNE.Imm(asm.R1, 0, env.Next), // a later fragment
			asm.LoadMem(asm.R1, base, 14, asm.Byte),
			asm.And.Imm(asm.R1, 0x0f),
			asm.JLT.Imm(asm.R1, 5, env.Next),
			asm.LSh.Imm(asm.R1, 2),
			// R2+14 is the GRE header.
			asm.Mov.Reg(asm.R2, base),
			asm.Add.Reg(asm.R2, asm.R1),
		)
		ins = append(ins, env.Bounds(asm.R2, 14+4)...)
		return append(ins,
			asm.LoadMem(asm.R1, asm.R2, 14+1, asm.Byte),
			asm.And.Imm(asm.R1, 0x07), // the version
			asm.JNE.Imm(asm.R1, 0, env.Next),
			asm.LoadMem(asm.R1, asm.R2, 14+2, asm.Half),
			asm.JEq.Imm(asm.R1, filter.NetShort(proto), env.Redirect),
		), nil
	})
}
