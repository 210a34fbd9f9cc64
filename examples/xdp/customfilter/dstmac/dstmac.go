// Package dstmac is a custom XDP match for frames sent to one Ethernet
// address: the tutorial for a 32-bit compare.
//
// The first four bytes of the address are read as one 32-bit word. A load
// gives host order, so the value compared is the address's bytes read the
// same way (NetWord), and the compare must be a 32-bit one (Imm32): an eBPF
// immediate is a signed 32-bit number, which a 64-bit compare sign-extends,
// so against a word whose top bit is set (on a little-endian host, the
// fourth byte of the address at 0x80 or above) a 64-bit compare is never
// equal and the match silently takes nothing. filter.MatchDstMAC does the same
// thing built in.
//
//	fleet, err := xdp.Open("eth0", xdp.WithFilter(dstmac.Match(mac)))
package dstmac

import (
	"encoding/binary"
	"net"

	"github.com/cilium/ebpf/asm"

	"github.com/packetio/packetio/filter"
)

// Match matches frames whose Ethernet destination is mac.
func Match(mac [6]byte) filter.Match {
	return filter.NewMatch("ether-dst/"+net.HardwareAddr(mac[:]).String(), func(env filter.MatchEnv) (asm.Instructions, error) {
		// The destination is the first thing in the frame, before any
		// tag: read it from the frame start.
		ins := env.Bounds(env.Data, 6)
		return append(ins,
			asm.LoadMem(asm.R1, env.Data, 0, asm.Word),
			asm.JNE.Imm32(asm.R1, NetWord([4]byte(mac[0:4])), env.Next),
			asm.LoadMem(asm.R1, env.Data, 4, asm.Half),
			asm.JEq.Imm(asm.R1, filter.NetShort(binary.BigEndian.Uint16(mac[4:6])), env.Redirect),
		), nil
	})
}

// NetWord is what a 32-bit load of the four bytes b produces on this host,
// as an immediate for a 32-bit compare (Imm32): the counterpart of
// filter.NetShort for words.
func NetWord(b [4]byte) int32 { return int32(binary.NativeEndian.Uint32(b[:])) }
