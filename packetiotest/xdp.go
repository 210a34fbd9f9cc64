package packetiotest

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
)

// OccupyXDP is a FaultEnv.Occupy for a backend that attaches an XDP
// program: it attaches an XDP_PASS program named "foreign" to the
// interface the way another tool would (netlink, no BPF link, in whatever
// mode the kernel picks), and returns a check that it is still the program
// attached and its removal.
func (e *VethFaultEnv) OccupyXDP() (intact func() error, release func(), err error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name: "foreign", Type: ebpf.XDP, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}, // XDP_PASS
	})
	if err != nil {
		return nil, nil, err
	}
	info, err := prog.Info()
	if err != nil {
		prog.Close()
		return nil, nil, err
	}
	id, _ := info.ID()
	setXDP := func(fd int) error {
		return e.Do(func() error {
			l, err := netlink.LinkByName(e.Iface)
			if err != nil {
				return err
			}
			return netlink.LinkSetXdpFd(l, fd)
		})
	}
	if err := setXDP(prog.FD()); err != nil {
		prog.Close()
		return nil, nil, err
	}
	intact = func() error {
		var got uint32
		err := e.Do(func() error {
			l, err := netlink.LinkByName(e.Iface)
			if err != nil {
				return err
			}
			if x := l.Attrs().Xdp; x != nil && x.Attached {
				got = x.ProgId
			}
			return nil
		})
		if err == nil && got != uint32(id) {
			err = fmt.Errorf("XDP program %d attached, want the foreign one, %d", got, id)
		}
		return err
	}
	release = func() {
		setXDP(-1)
		prog.Close()
	}
	return intact, release, nil
}
