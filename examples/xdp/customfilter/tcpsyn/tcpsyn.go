// Package tcpsyn is a custom XDP match for TCP connection requests: SYN
// set and ACK clear, so the first segment of a handshake and nothing after
// it (a SYN-ACK, the data, a RST). IPv4 and IPv6, tagged or not; with ports,
// only SYNs to one of them.
//
// It shows a block following the IPv4 header length (IHL) rather than
// assuming 20 bytes, which takes a computed packet pointer and its own
// bounds check, and one that handles both families with a label of its own.
//
//	fleet, err := xdp.Open("eth0", xdp.WithFilter(tcpsyn.Match(80, 443)))
package tcpsyn

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/asm"

	"github.com/packetio/packetio/filter"
)

// TCP flag bits, in the 14th byte of the header.
const (
	flagSYN = 0x02
	flagACK = 0x10
)

// Match matches TCP segments with SYN set and ACK clear, to one of ports
// (to any port with none). IPv4 later fragments, which carry no TCP header,
// never match; nor does IPv6 with extension headers before TCP.
func Match(ports ...uint16) filter.Match {
	ports = append([]uint16(nil), ports...)
	name := "tcp-syn"
	if len(ports) > 0 {
		s := make([]string, len(ports))
		for i, p := range ports {
			s[i] = strconv.Itoa(int(p))
		}
		name = fmt.Sprintf("tcp-syn/%s", strings.Join(s, ","))
	}
	return filter.NewMatch(name, func(env filter.MatchEnv) (asm.Instructions, error) {
		ins, base := env.FrameBase() // the frame with one VLAN tag skipped
		v6 := env.Label("v6")
		tcp := env.Label("tcp")

		// IPv4: the header length is in the packet.
		ins = append(ins, env.Bounds(base, 14+20)...)
		ins = append(ins,
			asm.LoadMem(asm.R1, base, 12, asm.Half),
			asm.JNE.Imm(asm.R1, filter.NetShort(0x0800), v6),
			asm.LoadMem(asm.R1, base, 14+9, asm.Byte), // protocol
			asm.JNE.Imm(asm.R1, 6, env.Next),
			asm.LoadMem(asm.R1, base, 14+6, asm.Half), // flags and fragment offset
			asm.And.Imm(asm.R1, filter.NetShort(0x1fff)),
			asm.JNE.Imm(asm.R1, 0, env.Next), // a later fragment: no TCP header
			asm.LoadMem(asm.R1, base, 14, asm.Byte),
			asm.And.Imm(asm.R1, 0x0f),
			asm.JLT.Imm(asm.R1, 5, env.Next), // not a valid header
			asm.LSh.Imm(asm.R1, 2),
			// R2 = base + IHL*4, so the TCP header is at R2+14 as it
			// would be at base+34 with no options.
			asm.Mov.Reg(asm.R2, base),
			asm.Add.Reg(asm.R2, asm.R1),
			asm.Ja.Label(tcp),
		)

		// IPv6: TCP as the first Next Header, at a fixed place.
		b6 := env.Bounds(base, 14+40)
		b6[0] = b6[0].WithSymbol(v6)
		ins = append(ins, b6...)
		ins = append(ins,
			asm.LoadMem(asm.R1, base, 12, asm.Half),
			asm.JNE.Imm(asm.R1, filter.NetShort(0x86dd), env.Next),
			asm.LoadMem(asm.R1, base, 14+6, asm.Byte), // Next Header
			asm.JNE.Imm(asm.R1, 6, env.Next),
			asm.Mov.Reg(asm.R2, base),
			asm.Add.Imm(asm.R2, 40),
		)

		// Both: R2+14 is the TCP header. Prove the 14 bytes read,
		// from R2 itself (the verifier tracks the computed pointer).
		bt := env.Bounds(asm.R2, 14+14)
		bt[0] = bt[0].WithSymbol(tcp)
		ins = append(ins, bt...)
		ins = append(ins,
			asm.LoadMem(asm.R1, asm.R2, 14+13, asm.Byte),
			asm.And.Imm(asm.R1, flagSYN|flagACK),
			asm.JNE.Imm(asm.R1, flagSYN, env.Next),
		)
		if len(ports) == 0 {
			return append(ins, asm.Ja.Label(env.Redirect)), nil
		}
		ins = append(ins, asm.LoadMem(asm.R1, asm.R2, 14+2, asm.Half))
		for _, p := range ports {
			ins = append(ins, asm.JEq.Imm(asm.R1, filter.NetShort(p), env.Redirect))
		}
		return ins, nil
	})
}
