package dstmac

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/cilium/ebpf/asm"

	"github.com/packetio/packetio/examples/xdp/customfilter/internal/matchtest"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/testframe"
)

// high has the top bit set in every byte, so the word a little-endian
// host loads from its first four bytes has its top bit set (and a
// big-endian one's too).
var high = [6]byte{0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff}

func to(t *testing.T, mac []byte, s testframe.Spec) []byte {
	s.DstMAC = net.HardwareAddr(mac)
	return s.Build(t)
}

func cases(t *testing.T, mac [6]byte) []matchtest.Case {
	m := mac[:]
	swapped := []byte{m[5], m[4], m[3], m[2], m[1], m[0]}
	last := append([]byte(nil), m...)
	last[5] ^= 1
	first := append([]byte(nil), m...)
	first[0] ^= 0x80
	word := append([]byte(nil), m...)
	word[2] ^= 1 // in the 32-bit word
	halves := []byte{m[4], m[5], m[0], m[1], m[2], m[3]}
	return []matchtest.Case{
		matchtest.Hit("to it, IPv4", to(t, m, testframe.Spec{})),
		matchtest.Hit("to it, IPv6", to(t, m, testframe.Spec{V6: true})),
		matchtest.Hit("to it, tagged", to(t, m, testframe.Spec{VLAN: []uint16{5}})),
		matchtest.Hit("to it, header only", to(t, m, testframe.Spec{})[:14]),
		matchtest.Miss("byte order reversed", to(t, swapped, testframe.Spec{})),
		matchtest.Miss("last byte differs", to(t, last, testframe.Spec{})),
		matchtest.Miss("first byte's top bit differs", to(t, first, testframe.Spec{})),
		matchtest.Miss("third byte differs", to(t, word, testframe.Spec{})),
		matchtest.Miss("halves swapped", to(t, halves, testframe.Spec{})),
		matchtest.Miss("from it, not to it", testframe.Spec{SrcMAC: net.HardwareAddr(m), DstMAC: net.HardwareAddr{0x02, 0x11, 0x22, 0x33, 0x44, 0x55}}.Build(t)),
		matchtest.Miss("broadcast", to(t, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, testframe.Spec{})),
	}
}

// TestMatch: an address whose bytes all have their top bit set, and one
// whose have none, each match frames sent to them in any family, tagged or
// not, and no near miss: reversed bytes, one bit off in either word, the
// halves swapped, the address as the source, broadcast.
func TestMatch(t *testing.T) {
	for _, mac := range [][6]byte{high, {0x02, 0, 0, 0, 0, 0x0b}, {0x02, 0x42, 0x0a, 0x63, 0x00, 0x01}} {
		matchtest.Run(t, Match(mac), cases(t, mac))
	}
}

// TestTableCatchesA64BitCompare: the same block with a 64-bit compare of
// the first word takes nothing sent to the high-bit address, and the table
// says so.
func TestTableCatchesA64BitCompare(t *testing.T) {
	broken := filter.NewMatch("ether-dst with a 64-bit compare", func(env filter.MatchEnv) (asm.Instructions, error) {
		return append(env.Bounds(env.Data, 6),
			asm.LoadMem(asm.R1, env.Data, 0, asm.Word),
			asm.JNE.Imm(asm.R1, NetWord([4]byte(high[0:4])), env.Next), // sign-extended
			asm.LoadMem(asm.R1, env.Data, 4, asm.Half),
			asm.JEq.Imm(asm.R1, filter.NetShort(binary.BigEndian.Uint16(high[4:6])), env.Redirect),
		), nil
	})
	wrong := matchtest.Misses(t, broken, cases(t, high))
	if len(wrong) == 0 {
		t.Fatal("the 64-bit compare passed every case: the table cannot tell")
	}
	t.Logf("the 64-bit compare gets %d cases wrong: %v", len(wrong), wrong)
}

// TestNetWord: the immediate is the load's view of the bytes.
func TestNetWord(t *testing.T) {
	b := [4]byte{0xaa, 0xbb, 0xcc, 0xdd}
	if got := uint32(NetWord(b)); got != binary.NativeEndian.Uint32(b[:]) {
		t.Fatalf("NetWord = %#x", got)
	}
}
