package numa

import (
	"fmt"

	"github.com/packetio/packetio/internal/host"
)

// Choose returns the node a backend binds its frame memory to, or Unset for
// no binding. want is the caller's option: a node number, which must be
// online (<sysRoot>/devices/system/node/online), or Unset to follow the
// NIC ifname, whose node is read from <sysRoot>/class/net/<ifname>/device
// /numa_node when <sysRoot>/class/net/<ifname>/ifindex is ifindex (a /sys
// mounted in another network namespace shows another interface, or none,
// under that name: then there is no node to follow). ifname "" (a backend
// with no NIC) follows nothing. An NIC that reports -1 (veth, most
// single-node hosts), or a node that is not online, means no binding.
func Choose(sysRoot, ifname string, ifindex, want int) (int, error) {
	if want == Unset {
		if ifname == "" {
			return Unset, nil
		}
		n := host.NICNode(sysRoot, ifname, ifindex)
		if n < 0 {
			return Unset, nil
		}
		if online, err := host.OnlineNodes(sysRoot); err != nil || !contains(online, n) {
			return Unset, nil
		}
		return n, nil
	}
	if want < 0 || want > MaxNode {
		return Unset, fmt.Errorf("NUMA node %d: %w (want 0 to %d, or -1 to follow the NIC)", want, ErrBadNode, MaxNode)
	}
	online, err := host.OnlineNodes(sysRoot)
	if err != nil {
		return Unset, fmt.Errorf("NUMA node %d: %w (%v)", want, ErrNoNUMA, err)
	}
	if !contains(online, want) {
		return Unset, fmt.Errorf("NUMA node %d: %w (online: %s)", want, ErrBadNode, list(online))
	}
	return want, nil
}
