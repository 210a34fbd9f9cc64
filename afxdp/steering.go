package afxdp

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
)

// compileSteering turns a filter into one match for the XDP program: the OR
// of its rules, each rule the AND of its conditions. Nothing is widened: a
// condition the program cannot test makes Open fail with ErrUnsupported.
// local gives the interface's own addresses for the zero filter.
func compileSteering(f packetio.SteeringFilter, local func() ([][6]byte, error)) (filter.Match, error) {
	if !f.Promiscuous && len(f.Match) == 0 {
		macs, err := local()
		if err != nil {
			return filter.Match{}, fmt.Errorf("steering: the zero filter means packets addressed to this interface, and its addresses cannot be read (%v): %w", err, packetio.ErrUnsupported)
		}
		ms := make([]filter.Match, len(macs))
		for i, m := range macs {
			ms[i] = filter.MatchDstMAC(m)
		}
		return filter.MatchAny(ms...), nil
	}
	rules, err := f.Rules()
	if err != nil {
		return filter.Match{}, err
	}
	if len(rules) == 1 && rules[0].Promiscuous {
		return filter.MatchAll(), nil
	}
	alts := make([]filter.Match, 0, len(rules))
	for _, r := range rules {
		m, err := compileRule(r)
		if err != nil {
			return filter.Match{}, err
		}
		alts = append(alts, m)
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return filter.MatchAny(alts...), nil
}

// compileRule is one conjunction.
func compileRule(r packetio.Rule) (filter.Match, error) {
	var conds []filter.Match
	if r.MACSet {
		conds = append(conds, filter.MatchDstMAC(r.MAC))
	}
	if r.VLANSet {
		conds = append(conds, filter.MatchVLAN(r.VLAN))
	}
	if r.EtherType != 0 {
		conds = append(conds, filter.MatchEtherType(r.EtherType))
	}
	if err := contradiction(r); err != nil {
		return filter.Match{}, err
	}
	if r.SrcPrefix.IsValid() {
		conds = append(conds, filter.PrefixMatch(r.SrcPrefix, true))
	}
	if r.DstPrefix.IsValid() {
		conds = append(conds, filter.PrefixMatch(r.DstPrefix, false))
	}
	ports := r.SrcPortSet || r.DstPortSet
	if ports && (!r.IPProtoSet || (r.IPProto != packetio.IPProtoTCP && r.IPProto != packetio.IPProtoUDP)) {
		return filter.Match{}, fmt.Errorf("steering: rule %v: ports are matched for TCP and UDP only, not protocol %d: %w", ruleString(r), r.IPProto, packetio.ErrUnsupported)
	}
	switch {
	case ports:
		// The port matches test the protocol too, in both families.
		if r.DstPortSet {
			conds = append(conds, filter.MatchL4Port(r.IPProto, false, r.DstPort))
		}
		if r.SrcPortSet {
			conds = append(conds, filter.MatchL4Port(r.IPProto, true, r.SrcPort))
		}
	case r.IPProtoSet:
		conds = append(conds, filter.MatchAny(filter.MatchIPv4Proto(r.IPProto), filter.MatchIPv6NextHeader(r.IPProto)))
	}
	if len(conds) == 0 {
		return filter.MatchAll(), nil
	}
	if len(conds) == 1 {
		return conds[0], nil
	}
	return filter.MatchAnd(conds...), nil
}

// contradiction refuses a rule no packet can match: conditions of two
// families, or IP conditions on a frame whose EtherType is not IP. Such a
// filter would install a program that takes nothing, silently.
func contradiction(r packetio.Rule) error {
	family := 0 // 4, 6, or -1 for not IP
	need := func(f int, what string) error {
		if family != 0 && family != f {
			return fmt.Errorf("steering: rule %v: %s contradicts the rest of the rule: no packet can match it: %w", ruleString(r), what, packetio.ErrUnsupported)
		}
		family = f
		return nil
	}
	switch r.EtherType {
	case 0:
	case 0x0800:
		family = 4
	case 0x86dd:
		family = 6
	default:
		family = -1
	}
	for _, p := range []netip.Prefix{r.SrcPrefix, r.DstPrefix} {
		if !p.IsValid() {
			continue
		}
		f := 6
		if p.Addr().Unmap().Is4() {
			f = 4
		}
		if err := need(f, "prefix "+p.String()); err != nil {
			return err
		}
	}
	if (r.IPProtoSet || r.SrcPortSet || r.DstPortSet) && family == -1 {
		return fmt.Errorf("steering: rule %v: an IP protocol or port on EtherType %#04x, which is not IP: no packet can match it: %w", ruleString(r), r.EtherType, packetio.ErrUnsupported)
	}
	return nil
}

func ruleString(r packetio.Rule) string {
	var parts []string
	if r.MACSet {
		parts = append(parts, net.HardwareAddr(r.MAC[:]).String())
	}
	if r.VLANSet {
		parts = append(parts, fmt.Sprintf("vlan %d", r.VLAN))
	}
	if r.EtherType != 0 {
		parts = append(parts, fmt.Sprintf("ethertype %#04x", r.EtherType))
	}
	if r.IPProtoSet {
		parts = append(parts, fmt.Sprintf("proto %d", r.IPProto))
	}
	if r.SrcPrefix.IsValid() {
		parts = append(parts, "from "+r.SrcPrefix.String())
	}
	if r.DstPrefix.IsValid() {
		parts = append(parts, "to "+r.DstPrefix.String())
	}
	if r.SrcPortSet {
		parts = append(parts, fmt.Sprintf("src port %d", r.SrcPort))
	}
	if r.DstPortSet {
		parts = append(parts, fmt.Sprintf("port %d", r.DstPort))
	}
	return "(" + strings.Join(parts, " and ") + ")"
}

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
	return compileSteering(f, func() ([][6]byte, error) {
		return nil, fmt.Errorf("no interface to take addresses from")
	})
}
