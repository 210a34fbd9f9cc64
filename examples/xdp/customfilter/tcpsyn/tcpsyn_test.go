package tcpsyn

import (
	"testing"

	"github.com/cilium/ebpf/asm"
	"github.com/google/gopacket/layers"

	"github.com/packetio/packetio/examples/xdp/customfilter/internal/matchtest"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/testframe"
)

func tcp(flags string, mod func(*testframe.Spec)) testframe.Spec {
	s := testframe.Spec{Proto: layers.IPProtocolTCP, SPort: 40000, DPort: 443, TCPFlags: flags}
	if mod != nil {
		mod(&s)
	}
	return s
}

func cases(t *testing.T) []matchtest.Case {
	b := func(s testframe.Spec) []byte { return s.Build(t) }
	v6 := func(s *testframe.Spec) { s.V6 = true }
	tagged := func(s *testframe.Spec) { s.VLAN = []uint16{9} }
	opts := func(s *testframe.Spec) { s.IPOpts = true }
	syn := b(tcp("S", nil))
	// A UDP datagram with 0x02 where a TCP header has its flags: the
	// 14th byte after the UDP header, in the payload.
	udp := b(testframe.Spec{SPort: 40000, DPort: 443, Payload: []byte{5: 0x02, 6: 0}})
	cut := append([]byte(nil), syn[:14+20+13]...)
	return []matchtest.Case{
		matchtest.Hit("SYN, IPv4", syn),
		matchtest.Hit("SYN, IPv6", b(tcp("S", v6))),
		matchtest.Hit("SYN, tagged", b(tcp("S", tagged))),
		matchtest.Hit("SYN, tagged IPv6", b(tcp("S", func(s *testframe.Spec) { v6(s); tagged(s) }))),
		matchtest.Hit("SYN, IPv4 header with options", b(tcp("S", opts))),
		matchtest.Miss("SYN-ACK", b(tcp("SA", nil))),
		matchtest.Miss("SYN-ACK, IPv6", b(tcp("SA", v6))),
		matchtest.Miss("ACK", b(tcp("A", nil))),
		matchtest.Miss("no flags", b(tcp("", nil))),
		matchtest.Miss("SYN, later fragment", b(tcp("S", func(s *testframe.Spec) { s.FragOff = 8 }))),
		matchtest.Miss("UDP, 0x02 at the flags' place", udp),
		matchtest.Miss("SYN under two tags (one is skipped)", b(tcp("S", func(s *testframe.Spec) { s.VLAN = []uint16{1, 2} }))),
		matchtest.Miss("SYN cut before its flags", cut),
		matchtest.Miss("ARP", b(testframe.Spec{Ether: layers.EthernetTypeARP})),
	}
}

// TestMatch: SYNs match in both families, tagged or not, behind IPv4
// options (the IHL is followed); SYN-ACKs, ACKs, a later fragment, UDP with
// the right byte in the right place, a frame cut short and non-IP do not.
func TestMatch(t *testing.T) {
	matchtest.Run(t, Match(), cases(t))
}

// TestPorts: with ports, a SYN to another port is a near miss, as is one
// from the port, and ports in the wrong byte order.
func TestPorts(t *testing.T) {
	b := func(s testframe.Spec) []byte { return s.Build(t) }
	matchtest.Run(t, Match(443, 8443), []matchtest.Case{
		matchtest.Hit("SYN to 443", b(tcp("S", nil))),
		matchtest.Hit("SYN to 8443, IPv6", b(tcp("S", func(s *testframe.Spec) { s.V6, s.DPort = true, 8443 }))),
		matchtest.Hit("SYN to 443 behind IPv4 options", b(tcp("S", func(s *testframe.Spec) { s.IPOpts = true }))),
		matchtest.Miss("SYN to 80", b(tcp("S", func(s *testframe.Spec) { s.DPort = 80 }))),
		matchtest.Miss("SYN from 443", b(tcp("S", func(s *testframe.Spec) { s.SPort, s.DPort = 443, 50000 }))),
		matchtest.Miss("SYN to 0xbb01 (443 byte-swapped)", b(tcp("S", func(s *testframe.Spec) { s.DPort = 0xbb01 }))),
		matchtest.Miss("SYN-ACK to 443", b(tcp("SA", nil))),
	})
}

// TestTableCatchesAFixedHeaderAndAMissingACKTest: a block that assumes a
// 20-byte IPv4 header and tests SYN alone misses the SYN behind options
// and takes SYN-ACKs, and the table says so.
func TestTableCatchesAFixedHeaderAndAMissingACKTest(t *testing.T) {
	broken := filter.NewMatch("syn, fixed offsets, no ACK test", func(env filter.MatchEnv) (asm.Instructions, error) {
		_, base := env.FrameBase()
		return append(env.Bounds(base, 14+20+14),
			asm.LoadMem(asm.R1, base, 12, asm.Half),
			asm.JNE.Imm(asm.R1, filter.NetShort(0x0800), env.Next),
			asm.LoadMem(asm.R1, base, 23, asm.Byte),
			asm.JNE.Imm(asm.R1, 6, env.Next),
			asm.LoadMem(asm.R1, base, 34+13, asm.Byte),
			asm.And.Imm(asm.R1, flagSYN),
			asm.JNE.Imm(asm.R1, 0, env.Redirect),
		), nil
	})
	wrong := matchtest.Misses(t, broken, cases(t))
	want := map[string]bool{"SYN, IPv4 header with options": true, "SYN-ACK": true}
	for _, w := range wrong {
		delete(want, w)
	}
	if len(want) > 0 {
		t.Fatalf("the broken match got %v wrong, but not %v", wrong, want)
	}
	t.Logf("the broken match gets %d cases wrong: %v", len(wrong), wrong)
}
