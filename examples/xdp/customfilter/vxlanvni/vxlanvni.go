// Package vxlanvni is a custom XDP match for one VXLAN network: UDP to port
// 4789 whose VXLAN header has the I flag set and the network identifier
// (VNI) asked for in its bytes 4 to 6, over IPv4 (any header length) or
// IPv6, tagged or not.
//
// It shows a block with two paths that join: each family leaves a pointer
// to its UDP header in R2, and one tail reads the UDP and VXLAN headers
// through it after one bounds check. The VNI is compared as a 32-bit word
// with the reserved byte after it masked off, converted to the load's byte
// order and compared with a 32-bit compare (Imm32), so it is right for any
// VNI on any host.
//
//	fleet, err := xdp.Open("eth0", xdp.WithFilter(vxlanvni.Match(0xabcdef)))
package vxlanvni

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/packetio/packetio/filter"
)

// Port is VXLAN's IANA UDP port.
const Port = 4789

// Match matches VXLAN packets of network vni (24 bits). A larger vni gives
// a match that Open refuses.
func Match(vni uint32) filter.Match {
	return MatchPort(Port, vni)
}

// MatchPort is Match on another UDP port (Linux's old default was 8472).
func MatchPort(port uint16, vni uint32) filter.Match {
	if vni > 0xffffff {
		return filter.MatchError("vxlan", fmt.Errorf("VNI %#x does not fit in 24 bits", vni))
	}
	return filter.NewMatch(fmt.Sprintf("vxlan/%d vni %#06x", port, vni), func(env filter.MatchEnv) (asm.Instructions, error) {
		ins, base := env.FrameBase()
		v6 := env.Label("v6")
		udp := env.Label("udp")

		// IPv4, UDP, not a later fragment; R2 = base + IHL*4, so the
		// UDP header is at R2+14.
		ins = append(ins, env.Bounds(base, 14+20)...)
		ins = append(ins,
			asm.LoadMem(asm.R1, base, 12, asm.Half),
			asm.JNE.Imm(asm.R1, filter.NetShort(0x0800), v6),
			asm.LoadMem(asm.R1, base, 14+9, asm.Byte),
			asm.JNE.Imm(asm.R1, 17, env.Next),
			asm.LoadMem(asm.R1, base, 14+6, asm.Half),
			asm.And.Imm(asm.R1, filter.NetShort(0x1fff)),
			asm.JNE.Imm(asm.R1, 0, env.Next),
			asm.LoadMem(asm.R1, base, 14, asm.Byte),
			asm.And.Imm(asm.R1, 0x0f),
			asm.JLT.Imm(asm.R1, 5, env.Next),
			asm.LSh.Imm(asm.R1, 2),
			asm.Mov.Reg(asm.R2, base),
			asm.Add.Reg(asm.R2, asm.R1),
			asm.Ja.Label(udp),
		)

		// IPv6 with UDP as its first Next Header: R2 = base + 40.
		b6 := env.Bounds(base, 14+40)
		b6[0] = b6[0].WithSymbol(v6)
		ins = append(ins, b6...)
		ins = append(ins,
			asm.LoadMem(asm.R1, base, 12, asm.Half),
			asm.JNE.Imm(asm.R1, filter.NetShort(0x86dd), env.Next),
			asm.LoadMem(asm.R1, base, 14+6, asm.Byte),
			asm.JNE.Imm(asm.R1, 17, env.Next),
			asm.Mov.Reg(asm.R2, base),
			asm.Add.Imm(asm.R2, 40),
		)

		// The UDP header (8 bytes) and the VXLAN header (8) from R2+14.
		bu := env.Bounds(asm.R2, 14+8+8)
		bu[0] = bu[0].WithSymbol(udp)
		ins = append(ins, bu...)
		var want [4]byte
		binary.BigEndian.PutUint32(want[:], vni<<8)
		return append(ins,
			asm.LoadMem(asm.R1, asm.R2, 14+2, asm.Half), // destination port
			asm.JNE.Imm(asm.R1, filter.NetShort(port), env.Next),
			asm.LoadMem(asm.R1, asm.R2, 14+8, asm.Byte), // flags
			asm.And.Imm(asm.R1, 0x08),                   // I: the VNI is valid
			asm.JEq.Imm(asm.R1, 0, env.Next),
			// Bytes 4-7: the VNI, then a reserved byte.
			asm.LoadMem(asm.R1, asm.R2, 14+8+4, asm.Word),
			asm.And.Imm32(asm.R1, netWord([4]byte{0xff, 0xff, 0xff, 0})),
			asm.JEq.Imm32(asm.R1, netWord(want), env.Redirect),
		), nil
	})
}

// netWord is what a 32-bit load of the bytes b gives on this host.
func netWord(b [4]byte) int32 { return int32(binary.NativeEndian.Uint32(b[:])) }
