package afpacket

import (
	"errors"
	"fmt"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/numa"
)

// allocFrames makes the region: Go memory, or memory bound to the node
// WithNUMANode names or the NIC reports (internal/numa).
func (d *Device) allocFrames() error {
	cfg := d.cfg
	root := cfg.sysRoot
	if root == "" {
		root = "/sys"
	}
	node, err := numa.Choose(root, d.name, d.ifindex, cfg.numaWant)
	switch {
	case errors.Is(err, numa.ErrBadNode):
		return fmt.Errorf("%w: WithNUMANode(%d): %v", packetio.ErrInvalid, cfg.numaWant, err)
	case err != nil:
		return fmt.Errorf("%w: WithNUMANode(%d): %v", packetio.ErrUnsupported, cfg.numaWant, err)
	case node == numa.Unset:
		d.reg = newRegion(allocRegion(cfg.frames*cfg.frameSize), cfg.frameSize)
		return nil
	}
	mem, err := numa.Alloc(cfg.frames*cfg.frameSize, node)
	if err != nil {
		return fmt.Errorf("frame region on NUMA node %d: %w", node, err)
	}
	d.reg = newRegion(mem, cfg.frameSize)
	d.numaBound, d.numaNode = true, node
	return nil
}

// releaseFrames gives a bound region's pages back (its address range stays
// mapped: see numa.Release); Go memory is left to the collector.
func (d *Device) releaseFrames() {
	if d.numaBound && d.reg != nil {
		numa.Release(d.reg.mem)
	}
}
