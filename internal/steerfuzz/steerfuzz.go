// Package steerfuzz is what the steering compilers' differential tests
// share: a small vocabulary of match values (small, so that random filters
// match some frames), the frames every filter is tried on, the decoder of
// fuzz bytes into a SteeringFilter, and a pacer for program loads. The
// eBPF compiler (afxdp) and the classic-BPF one (filter/cbpf) are checked
// over the same frames and filters this way.
package steerfuzz

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/google/gopacket/layers"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/testframe"
)

// The vocabulary. Frames below use the same values, near misses included.
func macs() [][6]byte  { return [][6]byte{{0x02, 0, 0, 0, 0, 0x0b}, {0x02, 0, 0, 0, 0, 0x0c}} }
func vlans() []uint16  { return []uint16{5, 100} }
func ethers() []uint16 { return []uint16{0x0800, 0x86dd, 0x88b5} }
func protos() []uint8  { return []uint8{6, 17, 47} }
func ports() []uint16  { return []uint16{53, 9000} }
func prefixes() []netip.Prefix {
	return []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("10.0.0.1/32"),
		netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("2001:db8::2/128"),
	}
}

// Frames builds the frames every filter is tried on: both families, TCP,
// UDP and GRE with ports of the vocabulary and off it, one and two tags
// (802.1Q and QinQ), another MAC, IPv4 options, a later fragment, source
// and destination addresses just off the prefixes, a custom EtherType
// tagged and untagged, and ARP.
func Frames(t testing.TB) [][]byte {
	var specs []testframe.Spec
	for _, v6 := range []bool{false, true} {
		for _, proto := range []layers.IPProtocol{layers.IPProtocolTCP, layers.IPProtocolUDP, 47} {
			for _, p := range [][2]uint16{{53, 9000}, {9000, 53}, {1, 2}} {
				specs = append(specs, testframe.Spec{V6: v6, Proto: proto, SPort: p[0], DPort: p[1]})
			}
		}
		specs = append(specs,
			testframe.Spec{V6: v6, DPort: 53, VLAN: []uint16{5}},
			testframe.Spec{V6: v6, DPort: 9000, VLAN: []uint16{100}, QinQ: true},
			testframe.Spec{V6: v6, DPort: 53, VLAN: []uint16{100, 5}},
			testframe.Spec{V6: v6, DPort: 53, DstMAC: macs()[1][:]},
		)
	}
	specs = append(specs,
		testframe.Spec{DPort: 53, IPOpts: true},
		testframe.Spec{DPort: 53, FragOff: 10},
		testframe.Spec{Src: "11.0.0.1", Dst: "10.0.0.1", DPort: 9000},
		testframe.Spec{V6: true, Src: "2001:db9::1", Dst: "2001:db8::2", DPort: 9000},
		testframe.Spec{Ether: 0x88b5},
		testframe.Spec{Ether: 0x88b5, VLAN: []uint16{5}},
		testframe.Spec{Ether: layers.EthernetTypeARP},
	)
	out := make([][]byte, len(specs))
	for i, s := range specs {
		out[i] = s.Build(t)
	}
	return out
}

// Filter builds a filter from fuzz bytes: each byte pair picks a match kind
// and a value from the vocabulary, up to six matches. With promiscuous, a
// ninth kind sets or clears Promiscuous (which the compilers must refuse
// beside a match).
func Filter(data []byte, promiscuous bool) packetio.SteeringFilter {
	kinds := byte(8)
	if promiscuous {
		kinds = 9
	}
	macs, vlans, ethers, protos, ports, pfx := macs(), vlans(), ethers(), protos(), ports(), prefixes()
	var f packetio.SteeringFilter
	for i := 0; i+1 < len(data) && len(f.Match) < 6; i += 2 {
		v := int(data[i+1])
		switch data[i] % kinds {
		case 0:
			f.Match = append(f.Match, packetio.MatchDstMAC(macs[v%len(macs)]))
		case 1:
			f.Match = append(f.Match, packetio.MatchVLAN(vlans[v%len(vlans)]))
		case 2:
			f.Match = append(f.Match, packetio.MatchEtherType(ethers[v%len(ethers)]))
		case 3:
			f.Match = append(f.Match, packetio.MatchIPProto(protos[v%len(protos)]))
		case 4:
			f.Match = append(f.Match, packetio.MatchSrcIP(pfx[v%len(pfx)]))
		case 5:
			f.Match = append(f.Match, packetio.MatchDstIP(pfx[v%len(pfx)]))
		case 6:
			f.Match = append(f.Match, packetio.MatchDstPort(protos[v%2], ports[(v/2)%2])...)
		case 7:
			f.Match = append(f.Match, packetio.MatchSrcPort(protos[v%2], ports[(v/2)%2])...)
		case 8:
			f.Promiscuous = v%2 == 0
		}
	}
	return f
}

// Pacer keeps program loads at 50 a second at most: a flood of loads once
// wedged this machine's BPF allocator. Its zero value is ready; share one
// per test binary.
type Pacer struct {
	mu   sync.Mutex
	last time.Time
}

// Wait sleeps until 20 ms have passed since the previous Wait returned.
func (p *Pacer) Wait() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d := 20*time.Millisecond - time.Since(p.last); d > 0 {
		time.Sleep(d)
	}
	p.last = time.Now()
}
