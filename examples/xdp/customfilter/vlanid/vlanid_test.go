package vlanid

import (
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/google/gopacket/layers"

	"github.com/packetio/packetio/examples/xdp/customfilter/internal/matchtest"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/testframe"
)

// cases for Match(0x102): IDs chosen so that a byte-order slip (0x201) and
// a mask that keeps the priority bits both show.
func cases(t *testing.T) []matchtest.Case {
	b := func(s testframe.Spec) []byte { return s.Build(t) }
	untagged := b(testframe.Spec{DPort: 53})
	// An untagged IPv4 frame has 0x45 0x00 where a TCI would be: the
	// "ID" 0x500 a match that forgot to check the TPID would see.
	return []matchtest.Case{
		matchtest.Hit("802.1Q tag 0x102", b(testframe.Spec{VLAN: []uint16{0x102}})),
		matchtest.Hit("802.1ad tag 0x102", b(testframe.Spec{VLAN: []uint16{0x102}, QinQ: true})),
		matchtest.Hit("QinQ, outer 0x102, inner 7", b(testframe.Spec{VLAN: []uint16{0x102, 7}, QinQ: true})),
		matchtest.Hit("IPv6 in tag 0x102", b(testframe.Spec{V6: true, VLAN: []uint16{0x102}})),
		matchtest.Hit("ARP in tag 0x102", b(testframe.Spec{Ether: layers.EthernetTypeARP, VLAN: []uint16{0x102}})),
		matchtest.Miss("untagged", untagged),
		matchtest.Miss("tag 0x201 (byte order slip)", b(testframe.Spec{VLAN: []uint16{0x201}})),
		matchtest.Miss("tag 0x103", b(testframe.Spec{VLAN: []uint16{0x103}})),
		matchtest.Miss("tag 0x002 (high nibble lost)", b(testframe.Spec{VLAN: []uint16{0x002}})),
		matchtest.Miss("QinQ, outer 7, inner 0x102", b(testframe.Spec{VLAN: []uint16{7, 0x102}, QinQ: true})),
		matchtest.Miss("tagged, cut before the TCI", b(testframe.Spec{VLAN: []uint16{0x102}})[:15]),
		matchtest.Miss("header only", untagged[:14]),
	}
}

// TestMatch: the tag's ID decides, in either TPID, whatever the priority
// (testframe tags carry priority 5) and whatever follows the tag; near
// misses (untagged, a byte-swapped ID, another ID, the ID of an inner tag,
// a cut frame) do not match.
func TestMatch(t *testing.T) {
	matchtest.Run(t, Match(0x102), cases(t))
}

// TestUntaggedLooksLikeAnID: Match(0x500) does not take untagged IPv4,
// whose version/IHL byte makes 0x500 of what would be the TCI.
func TestUntaggedLooksLikeAnID(t *testing.T) {
	matchtest.Run(t, Match(0x500), []matchtest.Case{
		matchtest.Miss("untagged IPv4", testframe.Spec{}.Build(t)),
		matchtest.Hit("tag 0x500", testframe.Spec{VLAN: []uint16{0x500}}.Build(t)),
	})
}

// TestTableCatchesAByteOrderSlip: the same block comparing the ID without
// NetShort gets cases wrong, so the table would have caught the slip.
func TestTableCatchesAByteOrderSlip(t *testing.T) {
	broken := filter.NewMatch("vlan-id/0x102 in host order", func(env filter.MatchEnv) (asm.Instructions, error) {
		return append(env.Bounds(env.Data, 16),
			asm.LoadMem(asm.R1, env.Data, 12, asm.Half),
			asm.JNE.Imm(asm.R1, filter.NetShort(0x8100), env.Next),
			asm.LoadMem(asm.R1, env.Data, 14, asm.Half),
			asm.And.Imm(asm.R1, 0x0fff),
			asm.JEq.Imm(asm.R1, 0x102, env.Redirect),
		), nil
	})
	if wrong := matchtest.Misses(t, broken, cases(t)); len(wrong) == 0 {
		t.Fatal("the broken match passed every case: the table cannot tell")
	} else {
		t.Logf("the broken match gets %d cases wrong: %v", len(wrong), wrong)
	}
}

// TestRefusesAnIDAbove4095: the error is in the match, and Open or
// NewClassifier report it without loading anything.
func TestRefusesAnIDAbove4095(t *testing.T) {
	if Match(4096).Err() == nil {
		t.Fatal("VLAN ID 4096 accepted")
	}
	if _, err := filter.NewClassifier(filter.Program{Matches: []filter.Match{Match(4096)}}); err == nil {
		t.Fatal("NewClassifier took VLAN ID 4096")
	}
	if Match(4095).Err() != nil {
		t.Fatal("VLAN ID 4095 refused")
	}
}
