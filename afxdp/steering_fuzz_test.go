package afxdp_test

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/cilium/ebpf/rlimit"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/steerfuzz"
	"github.com/packetio/packetio/internal/testenv"
)

// The steering compiler is checked against a reference written in plain Go
// from the packetio contract: for random filters over a small vocabulary
// (so that matches happen) and a fixed set of frames covering both
// families, tags, IPv4 options and fragments, the kernel's verdict on the
// compiled program must be the reference's.

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
// pacer keeps the program loads of this package's tests at a sane pace.
var pacer steerfuzz.Pacer

func checkFilter(t *testing.T, frames [][]byte, f packetio.SteeringFilter) {
	rules, err := f.Rules()
	if err != nil {
		return // refused by the contract itself
	}
	m, err := afxdp.SteeringMatch(f)
	if err != nil {
		return // refused by the compiler, which is allowed to refuse
	}
	pacer.Wait()
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
	frames := steerfuzz.Frames(t)
	for _, seed := range fuzzSeeds {
		checkFilter(t, frames, steerfuzz.Filter(seed, false))
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
			frames = steerfuzz.Frames(t)
		}
		checkFilter(t, frames, steerfuzz.Filter(data, false))
	})
}
