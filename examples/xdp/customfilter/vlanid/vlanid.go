// Package vlanid is a custom XDP match for one VLAN ID carried in the
// frame: the outer 802.1Q (TPID 0x8100) or 802.1ad (0x88a8) tag, the
// priority bits ignored.
//
// It differs from filter.MatchVLAN, which also asks the driver for a tag it
// stripped before XDP ran: this one reads only the bytes of the frame, so
// on a NIC that strips tags (most do, unless rx-vlan-offload is off) it sees
// none. It shows a block reading the raw frame (env.Data) rather than the
// frame base, which has the tag skipped already.
//
//	fleet, err := xdp.Open("eth0", xdp.WithFilter(vlanid.Match(100)))
package vlanid

import (
	"fmt"

	"github.com/cilium/ebpf/asm"

	"github.com/packetio/packetio/filter"
)

// Match matches frames whose outer VLAN tag carries id (0-4095). An ID
// above 4095 gives a match that Open refuses.
func Match(id uint16) filter.Match {
	if id > 4095 {
		return filter.MatchError("vlan-id", fmt.Errorf("VLAN ID %d is above 4095", id))
	}
	return filter.NewMatch(fmt.Sprintf("vlan-id/%d", id), func(env filter.MatchEnv) (asm.Instructions, error) {
		// FrameBase has skipped the tag, so read it from the frame
		// start: TPID at 12, TCI at 14. The bounds check covers both.
		tagged := env.Label("tagged")
		ins := env.Bounds(env.Data, 16)
		return append(ins,
			asm.LoadMem(asm.R1, env.Data, 12, asm.Half),
			asm.JEq.Imm(asm.R1, filter.NetShort(0x8100), tagged),
			asm.JNE.Imm(asm.R1, filter.NetShort(0x88a8), env.Next),
			// A 16-bit load is in host order: mask and compare
			// with values converted by NetShort, never raw.
			asm.LoadMem(asm.R1, env.Data, 14, asm.Half).WithSymbol(tagged),
			asm.And.Imm(asm.R1, filter.NetShort(0x0fff)),
			asm.JEq.Imm(asm.R1, filter.NetShort(id), env.Redirect),
		), nil
	})
}
