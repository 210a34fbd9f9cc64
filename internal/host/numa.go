package host

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
)

// NICNode is the NUMA node of ifname's device as sysfs reports it
// (<sysRoot>/class/net/<ifname>/device/numa_node), or -1 when it reports
// none: a virtual interface (veth has no device directory), a host
// without NUMA, a malformed file. ifindex guards against the namespace
// trap of sysfs (see InNetnsSysfs): the node is only believed when
// <sysRoot>/class/net/<ifname>/ifindex is ifindex, so an interface of
// the same name in the namespace that mounted /sys is never taken for it.
func NICNode(sysRoot, ifname string, ifindex int) int {
	if !safeName(ifname) {
		return -1
	}
	dir := filepath.Join(sysRoot, "class/net", ifname)
	s, err := readFile(filepath.Join(dir, "ifindex"))
	if err != nil {
		return -1
	}
	if i, err := strconv.Atoi(s); err != nil || i != ifindex {
		return -1
	}
	s, err = readFile(filepath.Join(dir, "device/numa_node"))
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > MaxCPU {
		return -1
	}
	return n
}

// OnlineNodes lists the online NUMA nodes
// (<sysRoot>/devices/system/node/online), ascending. A host built without
// NUMA has no such file: that is an error.
func OnlineNodes(sysRoot string) ([]int, error) {
	s, err := readFile(filepath.Join(sysRoot, "devices/system/node/online"))
	if err != nil {
		return nil, fmt.Errorf("host: read the online NUMA nodes: %w", err)
	}
	l := kernelCPUList(s)
	if len(l) == 0 {
		return nil, errors.New("host: read the online NUMA nodes: none in " + strconv.Quote(s))
	}
	return l, nil
}
