//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"errors"
	"fmt"
	"slices"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/dpdk/internal/eal"
	"github.com/packetio/packetio/internal/numa"
)

// chooseSocket sets the socket the region, the mempools and the rings are
// reserved on: WithNUMANode's node, or the port's own. It refuses a node
// that is not online, and any node on --no-huge memory, which the EAL
// binds nowhere.
func (ps *portSetup) chooseSocket() error {
	noHuge := slices.Contains(eal.Started(), "--no-huge")
	c := ps.c
	if c.numaSet {
		if noHuge {
			return fmt.Errorf("WithNUMANode(%d): the EAL runs on --no-huge memory, one anonymous mapping it labels socket 0 and binds to no node: %w", c.numaNode, packetio.ErrUnsupported)
		}
		n, err := numa.Choose("/sys", "", 0, c.numaNode)
		switch {
		case errors.Is(err, numa.ErrBadNode):
			return fmt.Errorf("WithNUMANode(%d): %v: %w", c.numaNode, err, packetio.ErrInvalid)
		case err != nil:
			return fmt.Errorf("WithNUMANode(%d): %v: %w", c.numaNode, err, packetio.ErrUnsupported)
		}
		ps.in.Socket = n
	}
	ps.numaBound = !noHuge && ps.in.Socket >= 0
	return nil
}
