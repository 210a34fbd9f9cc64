package vxlanvni

import (
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/google/gopacket/layers"

	"github.com/packetio/packetio/examples/xdp/customfilter/internal/frames"
	"github.com/packetio/packetio/examples/xdp/customfilter/internal/matchtest"
	"github.com/packetio/packetio/filter"
)

func vx(t *testing.T, s frames.Spec) []byte {
	t.Helper()
	b, err := frames.VXLAN(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func cases(t *testing.T, vni uint32) []matchtest.Case {
	good := vx(t, frames.Spec{VNI: vni})
	swapped := vni>>16 | vni&0xff00 | (vni&0xff)<<16
	// The VNI one byte late: bytes 5-7 hold it, the high byte in the
	// reserved one.
	late := []byte{0x08, 0, 0, 0, 0, byte(vni >> 16), byte(vni >> 8), byte(vni)}
	reserved := []byte{0x08, 0, 0, 0, byte(vni >> 16), byte(vni >> 8), byte(vni), 0xff}
	return []matchtest.Case{
		matchtest.Hit("IPv4", good),
		matchtest.Hit("IPv6", vx(t, frames.Spec{VNI: vni, V6: true})),
		matchtest.Hit("tagged", vx(t, frames.Spec{VNI: vni, VLAN: []uint16{30}})),
		matchtest.Hit("tagged IPv6", vx(t, frames.Spec{VNI: vni, V6: true, VLAN: []uint16{30}})),
		matchtest.Hit("IPv4 header with options", vx(t, frames.Spec{VNI: vni, IPOpts: true})),
		matchtest.Hit("reserved byte set (ignored)", vx(t, frames.Spec{Header: reserved})),
		matchtest.Miss("VNI byte-swapped", vx(t, frames.Spec{VNI: swapped})),
		matchtest.Miss("VNI + 1", vx(t, frames.Spec{VNI: (vni + 1) & 0xffffff})),
		matchtest.Miss("VNI with its top bit flipped", vx(t, frames.Spec{VNI: vni ^ 0x800000})),
		matchtest.Miss("VNI one byte late", vx(t, frames.Spec{Header: late})),
		matchtest.Miss("I flag clear", vx(t, frames.Spec{VNI: vni, NoIFlag: true})),
		matchtest.Miss("UDP port 4790", vx(t, frames.Spec{VNI: vni, DPort: 4790})),
		matchtest.Miss("UDP port 0xb512 (4789 byte-swapped)", vx(t, frames.Spec{VNI: vni, DPort: 0xb512})),
		matchtest.Miss("TCP to 4789", vx(t, frames.Spec{VNI: vni, Proto: layers.IPProtocolTCP})),
		matchtest.Miss("later fragment", vx(t, frames.Spec{VNI: vni, FragOff: 100})),
		matchtest.Miss("two tags (one is skipped)", vx(t, frames.Spec{VNI: vni, VLAN: []uint16{1, 2}})),
		matchtest.Miss("cut inside the VNI", good[:14+20+8+6]),
		matchtest.Miss("cut before the VXLAN header", good[:14+20+8]),
	}
}

// TestMatch: VNI 0xabcdef (its high byte's top bit set) and a VNI with
// high bits only in its last byte match in both families, tagged or not,
// behind IPv4 options, with the reserved byte set; the near misses (the VNI
// byte-swapped, off by one, with a flipped bit, a byte late, without the I
// flag, on the wrong port or port byte order, over TCP, in a later
// fragment, under two tags, cut short) do not.
func TestMatch(t *testing.T) {
	for _, vni := range []uint32{0xabcdef, 0x0000ff, 0x800001} {
		matchtest.Run(t, Match(vni), cases(t, vni))
	}
}

// TestTableCatchesAHostOrderCompare: the VNI compared without converting
// it to the load's byte order takes nothing it should, and the table says
// so.
func TestTableCatchesAHostOrderCompare(t *testing.T) {
	var vni uint32 = 0xabcdef
	broken := filter.NewMatch("vxlan vni in host order", func(env filter.MatchEnv) (asm.Instructions, error) {
		_, base := env.FrameBase()
		return append(env.Bounds(base, 14+20+8+8),
			asm.LoadMem(asm.R1, base, 36, asm.Half),
			asm.JNE.Imm(asm.R1, filter.NetShort(Port), env.Next),
			asm.LoadMem(asm.R1, base, 42+4, asm.Word),
			asm.And.Imm32(asm.R1, -256),                                // 0xffffff00, as if the load were big-endian
			asm.JEq.Imm32(asm.R1, int32(uint32(vni)<<8), env.Redirect), // the VNI as written
		), nil
	})
	wrong := matchtest.Misses(t, broken, cases(t, vni))
	if len(wrong) == 0 {
		t.Fatal("the host-order compare passed every case: the table cannot tell")
	}
	t.Logf("the host-order compare gets %d cases wrong: %v", len(wrong), wrong)
}

// TestRefusesAWideVNI: a VNI over 24 bits is an error in the match.
func TestRefusesAWideVNI(t *testing.T) {
	if Match(0x1000000).Err() == nil || Match(0xffffff).Err() != nil {
		t.Fatal("24-bit limit not enforced")
	}
}
