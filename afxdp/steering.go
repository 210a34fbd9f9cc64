package afxdp

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
)

// localMACs returns what the interface receives as its own: its address,
// broadcast, and the multicast addresses it has joined (from
// /proc/thread-self/net/dev_mcast, in the calling thread's namespace). The
// multicast list is taken when Open runs; groups joined later are not
// covered.
func localMACs(ifname string) ([][6]byte, error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, err
	}
	if len(ifi.HardwareAddr) != 6 {
		return nil, fmt.Errorf("%s has no Ethernet address", ifname)
	}
	var own [6]byte
	copy(own[:], ifi.HardwareAddr)
	macs := [][6]byte{own, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}}
	f, err := os.Open("/proc/thread-self/net/dev_mcast")
	if err != nil {
		return nil, fmt.Errorf("the multicast groups of %s: %w", ifname, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// index name refcount global address
		fields := strings.Fields(sc.Text())
		if len(fields) != 5 || fields[1] != ifname {
			continue
		}
		b, err := hex.DecodeString(fields[4])
		if err != nil || len(b) != 6 {
			return nil, fmt.Errorf("dev_mcast line %q: not a MAC", sc.Text())
		}
		var m [6]byte
		copy(m[:], b)
		macs = append(macs, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("the multicast groups of %s: %w", ifname, err)
	}
	if len(macs) > 64 {
		return nil, fmt.Errorf("%s has joined %d multicast groups, more than the 62 the filter takes", ifname, len(macs)-2)
	}
	return macs, nil
}

// SteeringMatch compiles a steering filter into the filter.Match Open installs,
// for testing it with filter.MatchPacket or using it with the datapath
// directly. The zero filter is refused here: it means the addresses of an
// interface, which only Open knows.
func SteeringMatch(f packetio.SteeringFilter) (filter.Match, error) {
	return filter.Steering(f, func() ([][6]byte, error) {
		return nil, fmt.Errorf("no interface to take addresses from")
	})
}

// SteeringMapName is the name SteeringSpec's program refers to its XSKMAP
// by: resolve it with spec.Instructions.AssociateMap(SteeringMapName, m),
// or load the spec in a collection holding a map of that name.
const SteeringMapName = filter.XSKMapName

// SteeringSpec compiles a steering filter into the XDP program Open would
// attach for it, as a value to load yourself: it redirects each matching
// frame into the XSKMAP named SteeringMapName at the frame's receive queue
// (passing it to the kernel where the queue has no socket) and returns
// XDP_PASS for every other frame. Its entry carries the BTF of
// int xsk_filter(struct xdp_md *ctx), so a program of yours can tail-call
// it (from a BPF_MAP_TYPE_PROG_ARRAY) and libxdp can load it as a
// dispatcher slot. Hand the loaded program to WithProgram with the same
// map. The zero filter is refused (it means an interface's addresses,
// which only Open knows), as is any filter WithSteering refuses.
func SteeringSpec(f packetio.SteeringFilter) (*ebpf.ProgramSpec, error) {
	m, err := SteeringMatch(f)
	if err != nil {
		return nil, err
	}
	return filter.Program{Matches: []filter.Match{m}, Verdict: filter.VerdictRedirect}.Spec(0)
}
