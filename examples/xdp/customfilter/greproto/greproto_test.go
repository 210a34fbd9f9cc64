package greproto

import (
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/packetio/packetio/examples/xdp/customfilter/internal/frames"
	"github.com/packetio/packetio/examples/xdp/customfilter/internal/matchtest"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/testframe"
)

func gre(t *testing.T, s frames.Spec) []byte {
	t.Helper()
	b, err := frames.GRE(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func cases(t *testing.T) []matchtest.Case {
	good := gre(t, frames.Spec{GREProto: TransparentEthernet})
	// UDP whose destination port is 0x6558: the same two bytes where a
	// GRE header has its protocol, under another IP protocol.
	udp := testframe.Spec{SPort: 0, DPort: TransparentEthernet}.Build(t)
	return []matchtest.Case{
		matchtest.Hit("0x6558", good),
		matchtest.Hit("0x6558, tagged", gre(t, frames.Spec{GREProto: TransparentEthernet, VLAN: []uint16{7}})),
		matchtest.Hit("0x6558 with a key", gre(t, frames.Spec{GREProto: TransparentEthernet, GREKey: true})),
		matchtest.Hit("0x6558 behind IPv4 options", gre(t, frames.Spec{GREProto: TransparentEthernet, IPOpts: true})),
		matchtest.Hit("header only", good[:14+20+4]),
		matchtest.Miss("0x0800 (plain gre)", gre(t, frames.Spec{GREProto: IPv4})),
		matchtest.Miss("0x5865 (byte-swapped)", gre(t, frames.Spec{GREProto: 0x5865})),
		matchtest.Miss("0x6558 over IPv6 (wrong family)", gre(t, frames.Spec{GREProto: TransparentEthernet, V6: true})),
		matchtest.Miss("0x6558, version 1", gre(t, frames.Spec{GREProto: TransparentEthernet, GREVersion: 1})),
		matchtest.Miss("0x6558, later fragment", gre(t, frames.Spec{GREProto: TransparentEthernet, FragOff: 64})),
		matchtest.Miss("UDP to port 0x6558", udp),
		matchtest.Miss("cut inside the GRE header", good[:14+20+3]),
	}
}

// TestMatch: GRE carrying 0x6558 matches tagged or not, with a key, behind
// IPv4 options; another protocol, the byte-swapped one, GRE over IPv6,
// version 1, a later fragment, UDP with the same bytes at the same place
// and a cut header do not.
func TestMatch(t *testing.T) {
	matchtest.Run(t, Match(TransparentEthernet), cases(t))
}

// TestOtherProtocols: Match(0x0800) takes plain gre and not gretap, in the
// same frames.
func TestOtherProtocols(t *testing.T) {
	matchtest.Run(t, Match(IPv4), []matchtest.Case{
		matchtest.Hit("0x0800", gre(t, frames.Spec{GREProto: IPv4})),
		matchtest.Miss("0x6558", gre(t, frames.Spec{GREProto: TransparentEthernet})),
		matchtest.Miss("0x0008 (byte-swapped)", gre(t, frames.Spec{GREProto: 0x0008})),
	})
}

// TestTableCatchesAFixedOffset: a block that reads the protocol at a fixed
// offset, as if IPv4 had no options, and ignores the version, gets cases
// wrong, and the table says so.
func TestTableCatchesAFixedOffset(t *testing.T) {
	broken := filter.NewMatch("gre at a fixed offset", func(env filter.MatchEnv) (asm.Instructions, error) {
		_, base := env.FrameBase()
		return append(env.Bounds(base, 14+20+4),
			asm.LoadMem(asm.R1, base, 23, asm.Byte),
			asm.JNE.Imm(asm.R1, 47, env.Next),
			asm.LoadMem(asm.R1, base, 36, asm.Half),
			asm.JEq.Imm(asm.R1, filter.NetShort(TransparentEthernet), env.Redirect),
		), nil
	})
	wrong := matchtest.Misses(t, broken, cases(t))
	if len(wrong) < 2 {
		t.Fatalf("the broken match got only %v wrong", wrong)
	}
	t.Logf("the broken match gets %d cases wrong: %v", len(wrong), wrong)
}
