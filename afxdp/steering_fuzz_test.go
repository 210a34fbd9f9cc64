package afxdp_test

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf/rlimit"
	"github.com/google/gopacket/layers"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/testframe"
)

// The steering compiler is checked against a reference written in plain Go
// from the packetio contract: for random filters over a small vocabulary
// (so that matches happen) and a fixed set of frames covering both
// families, tags, IPv4 options and fragments, the kernel's verdict on the
// compiled program must be the reference's.

var (
	fuzzMACs   = [][6]byte{{0x02, 0, 0, 0, 0, 0x0b}, {0x02, 0, 0, 0, 0, 0x0c}}
	fuzzVLANs  = []uint16{5, 100}
	fuzzEthers = []uint16{0x0800, 0x86dd, 0x88b5}
	fuzzProtos = []uint8{6, 17, 47}
	fuzzPorts  = []uint16{53, 9000}
	fuzzPfx    = []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("10.0.0.1/32"),
		netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("2001:db8::2/128"),
	}
)

// fuzzFrames are the frames every filter is tried on.
func fuzzFrames(t testing.TB) [][]byte {
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
			testframe.Spec{V6: v6, DPort: 53, DstMAC: fuzzMACs[1][:]},
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

// filterFrom builds a filter from fuzz bytes: each byte pair picks a kind
// and a value from the vocabulary.
func filterFrom(data []byte) packetio.SteeringFilter {
	var f packetio.SteeringFilter
	for i := 0; i+1 < len(data) && len(f.Match) < 6; i += 2 {
		v := int(data[i+1])
		switch data[i] % 8 {
		case 0:
			f.Match = append(f.Match, packetio.MatchDstMAC(fuzzMACs[v%len(fuzzMACs)]))
		case 1:
			f.Match = append(f.Match, packetio.MatchVLAN(fuzzVLANs[v%len(fuzzVLANs)]))
		case 2:
			f.Match = append(f.Match, packetio.MatchEtherType(fuzzEthers[v%len(fuzzEthers)]))
		case 3:
			f.Match = append(f.Match, packetio.MatchIPProto(fuzzProtos[v%len(fuzzProtos)]))
		case 4:
			f.Match = append(f.Match, packetio.MatchSrcIP(fuzzPfx[v%len(fuzzPfx)]))
		case 5:
			f.Match = append(f.Match, packetio.MatchDstIP(fuzzPfx[v%len(fuzzPfx)]))
		case 6:
			f.Match = append(f.Match, packetio.MatchDstPort(fuzzProtos[v%2], fuzzPorts[(v/2)%2])...)
		case 7:
			f.Match = append(f.Match, packetio.MatchSrcPort(fuzzProtos[v%2], fuzzPorts[(v/2)%2])...)
		}
	}
	return f
}

// parsed is what the reference reads of a frame.
type parsed struct {
	dst          [6]byte
	vlan         int // outer tag's ID, -1 untagged
	ether        uint16
	proto        int // -1 not IP
	src, dstIP   netip.Addr
	sport, dport int // -1 without an L4 header
	v4, v6       bool
}

func parse(b []byte) parsed {
	p := parsed{vlan: -1, proto: -1, sport: -1, dport: -1}
	copy(p.dst[:], b)
	off := 12
	et := binary.BigEndian.Uint16(b[off:])
	if et == 0x8100 || et == 0x88a8 {
		p.vlan = int(binary.BigEndian.Uint16(b[14:]) & 0x0fff)
		off += 4
		et = binary.BigEndian.Uint16(b[off:])
	}
	p.ether = et
	l3 := b[off+2:]
	switch et {
	case 0x0800:
		if len(l3) < 20 {
			return p
		}
		p.v4, p.proto = true, int(l3[9])
		p.src, _ = netip.AddrFromSlice(l3[12:16])
		p.dstIP, _ = netip.AddrFromSlice(l3[16:20])
		ihl := int(l3[0]&0x0f) * 4
		if binary.BigEndian.Uint16(l3[6:])&0x1fff == 0 && len(l3) >= ihl+4 {
			p.sport, p.dport = int(binary.BigEndian.Uint16(l3[ihl:])), int(binary.BigEndian.Uint16(l3[ihl+2:]))
		}
	case 0x86dd:
		if len(l3) < 40 {
			return p
		}
		p.v6, p.proto = true, int(l3[6])
		p.src, _ = netip.AddrFromSlice(l3[8:24])
		p.dstIP, _ = netip.AddrFromSlice(l3[24:40])
		if len(l3) >= 44 {
			p.sport, p.dport = int(binary.BigEndian.Uint16(l3[40:])), int(binary.BigEndian.Uint16(l3[42:]))
		}
	}
	return p
}

// reference decides a frame from the filter's rules, in plain Go.
func reference(rules []packetio.Rule, b []byte) bool {
	p := parse(b)
	for _, r := range rules {
		if r.Promiscuous {
			return true
		}
		ok := true
		ok = ok && (!r.MACSet || p.dst == r.MAC)
		ok = ok && (!r.VLANSet || p.vlan == int(r.VLAN))
		ok = ok && (r.EtherType == 0 || p.ether == r.EtherType)
		ok = ok && (!r.IPProtoSet || p.proto == int(r.IPProto))
		ok = ok && (!r.SrcPrefix.IsValid() || p.src.IsValid() && r.SrcPrefix.Contains(p.src))
		ok = ok && (!r.DstPrefix.IsValid() || p.dstIP.IsValid() && r.DstPrefix.Contains(p.dstIP))
		ok = ok && (!r.SrcPortSet || p.sport == int(r.SrcPort))
		ok = ok && (!r.DstPortSet || p.dport == int(r.DstPort))
		if ok {
			return true
		}
	}
	return false
}

// loadPace keeps program loads well under the rate that once wedged this
// kernel's BPF allocator.
var (
	paceMu   sync.Mutex
	lastLoad time.Time
)

func paced() {
	paceMu.Lock()
	defer paceMu.Unlock()
	if d := 20*time.Millisecond - time.Since(lastLoad); d > 0 {
		time.Sleep(d)
	}
	lastLoad = time.Now()
}

func checkFilter(t *testing.T, frames [][]byte, f packetio.SteeringFilter) {
	rules, err := f.Rules()
	if err != nil {
		return // refused by the contract itself
	}
	m, err := afxdp.SteeringMatch(f)
	if err != nil {
		return // refused by the compiler, which is allowed to refuse
	}
	paced()
	c, err := filter.NewClassifier(filter.Program{Matches: []filter.Match{m}})
	if err != nil {
		t.Fatalf("%v: the compiled program does not load: %v", f, err)
	}
	defer c.Close()
	for i, b := range frames {
		got, err := c.Match(b)
		if err != nil {
			t.Fatal(err)
		}
		if want := reference(rules, b); got != want {
			t.Fatalf("filter %q (%s), frame %d: the program says %v, the reference %v", f, m, i, got, want)
		}
	}
}

// TestSteeringAgainstReference runs a fixed set of filters.
func TestSteeringAgainstReference(t *testing.T) {
	testenv.NeedBPF(t)
	_ = rlimit.RemoveMemlock()
	frames := fuzzFrames(t)
	for _, seed := range fuzzSeeds {
		checkFilter(t, frames, filterFrom(seed))
	}
}

var fuzzSeeds = [][]byte{
	{6, 1}, {7, 0}, {6, 0, 6, 3}, {1, 0, 6, 1}, {4, 0, 5, 2}, {0, 0, 3, 2}, {2, 0, 1, 1},
	{3, 1, 4, 3}, {5, 3, 6, 2}, {2, 2, 0, 1}, {1, 1, 2, 1, 3, 0}, {4, 1, 5, 0, 6, 1, 7, 0},
}

// FuzzSteering compares the compiled steering program with the reference
// for fuzzed filters (run with -parallel 1: every input loads a program,
// paced to 50 a second).
func FuzzSteering(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	var frames [][]byte
	f.Fuzz(func(t *testing.T, data []byte) {
		testenv.NeedBPF(t)
		_ = rlimit.RemoveMemlock()
		if frames == nil {
			frames = fuzzFrames(t)
		}
		checkFilter(t, frames, filterFrom(data))
	})
}
