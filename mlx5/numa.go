//go:build linux && cgo && mlx5 && (amd64 || arm64)

package mlx5

import (
	"errors"
	"fmt"
	"net"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/numa"
)

// chooseNode resolves the node the region is bound to: WithNUMANode's, or
// the port's PCI device's, or none.
func (o *opener) chooseNode() error {
	o.node = numa.Unset
	ifindex := 0
	if ifc, err := net.InterfaceByName(o.ifname); err == nil {
		ifindex = ifc.Index
	}
	root := o.c.sysRoot
	if root == "" {
		root = "/sys"
	}
	n, err := numa.Choose(root, o.ifname, ifindex, o.c.wantNode())
	switch {
	case errors.Is(err, numa.ErrBadNode):
		return fmt.Errorf("mlx5: WithNUMANode(%d): %v: %w", o.c.numaNode, err, packetio.ErrInvalid)
	case err != nil:
		return fmt.Errorf("mlx5: WithNUMANode(%d): %v: %w", o.c.numaNode, err, packetio.ErrUnsupported)
	}
	o.node = n
	return nil
}
