// Package numa is packetio's one door to memory policy: it binds frame
// memory to a NUMA node (mbind) before its pages are touched, reads the
// policy back (get_mempolicy), and decides which node a backend binds to
// from its option and the NIC (through internal/host's sysfs readers).
//
// The policy is MPOL_BIND with MPOL_F_STATIC_NODES, never MPOL_PREFERRED:
// every page of a bound region is faulted in at open (Populate), so a node
// without room for it fails the open with an error naming the node instead
// of quietly placing the frames elsewhere, and Capabilities.NUMABound can
// say where all of the memory is. MPOL_F_STATIC_NODES keeps the node
// absolute: the NIC's node is a fact of the hardware, so a later change of
// the process's cpuset must not remap it onto another node (it then falls
// back to the local policy rather than to a wrong node).
package numa

import (
	"errors"
	"strconv"
)

// Unset is the node value meaning "follow the NIC": bind to the node the
// NIC reports, and set no policy when it reports none.
const Unset = -1

// MaxNode is the highest node number accepted (the kernel's MAX_NUMNODES
// is at most 1024).
const MaxNode = 1023

// Policy modes and flags of get_mempolicy/mbind (linux/mempolicy.h).
const (
	ModeDefault     = 0
	ModePreferred   = 1
	ModeBind        = 2
	FlagStaticNodes = 1 << 15
)

// ErrBadNode is wrapped by Choose's error for a node that is out of range
// or not online: the backends report it as packetio.ErrInvalid.
var ErrBadNode = errors.New("no such NUMA node")

// ErrNoNUMA is wrapped when the host has no NUMA support
// (/sys/devices/system/node is missing, or mbind answers ENOSYS): the
// backends report it as packetio.ErrUnsupported.
var ErrNoNUMA = errors.New("the host has no NUMA support")

func contains(l []int, n int) bool {
	for _, v := range l {
		if v == n {
			return true
		}
	}
	return false
}

func list(l []int) string {
	s := ""
	for i, v := range l {
		if i > 0 {
			s += ","
		}
		s += strconv.Itoa(v)
	}
	return s
}

// Policy is the memory policy of one address, as get_mempolicy(MPOL_F_ADDR)
// reports it.
type Policy struct {
	Mode  int   // ModeDefault, ModeBind, ... without the flags
	Flags int   // FlagStaticNodes, ...
	Nodes []int // the nodes of the mask, ascending
}

// String is the policy as numactl would write it ("bind=static:0").
func (p Policy) String() string {
	name := map[int]string{ModeDefault: "default", ModePreferred: "preferred", ModeBind: "bind"}[p.Mode]
	if name == "" {
		name = "mode" + strconv.Itoa(p.Mode)
	}
	if p.Mode == ModeDefault {
		return name
	}
	if p.Flags&FlagStaticNodes != 0 {
		name += "=static:"
	} else {
		name += "="
	}
	return name + list(p.Nodes)
}
