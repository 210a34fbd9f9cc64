package xdp

import (
	"fmt"
	"net/netip"
	"sort"

	"github.com/vishvananda/netlink"

	"github.com/packetio/packetio/filter"
)

// localPrefixes returns the host addresses of the link and of every link
// whose parent it is (VLAN and macvlan children, where a management address
// often lives), as /32 and /128 prefixes, in the network namespace of the
// calling thread.
func localPrefixes(ifindex int) ([]netip.Prefix, error) {
	links, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	seen := map[netip.Prefix]bool{}
	for _, l := range links {
		a := l.Attrs()
		if a.Index != ifindex && a.ParentIndex != ifindex {
			continue
		}
		addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
		if err != nil {
			return nil, fmt.Errorf("addresses of %s: %w", a.Name, err)
		}
		for _, ad := range addrs {
			if ad.IPNet == nil {
				continue
			}
			if ip, ok := netip.AddrFromSlice(ad.IP); ok {
				// Link-local addresses count too: SSH over
				// fe80:: must survive.
				ip = ip.Unmap()
				seen[netip.PrefixFrom(ip, ip.BitLen())] = true
			}
		}
	}
	out := make([]netip.Prefix, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr().Less(out[j].Addr()) })
	if len(out) > filter.MaxManagementPrefixes {
		return nil, fmt.Errorf("%d local addresses, more than the %d WithKeepManagement scopes", len(out), filter.MaxManagementPrefixes)
	}
	return out, nil
}
