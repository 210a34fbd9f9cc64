package libxdp

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/packetio/packetio/internal/xdpbtf"
)

// Probe asks the kernel whether it takes freplace programs, which every
// dispatcher slot is: it loads a one-function XDP program and an
// extension of it, and closes both. It returns nil where the kernel takes
// them, an error wrapping ErrNoFreplace where it refuses them outright,
// and any other failure as it is. It changes nothing on the host.
func Probe() error {
	const name = "pio_probe"
	target, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: name, Type: ebpf.XDP, License: "GPL",
		Instructions: xdpbtf.Mark(asm.Instructions{asm.Mov.Imm(asm.R0, xdpPass), asm.Return()}, name)})
	if err != nil {
		return fmt.Errorf("load the probe's target: %w", err)
	}
	defer target.Close()
	ext, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: name, Type: ebpf.Extension, License: "GPL",
		AttachTarget: target, AttachTo: name,
		Instructions: xdpbtf.Mark(asm.Instructions{asm.Mov.Imm(asm.R0, xdpPass), asm.Return()}, name)})
	if err != nil {
		return noFreplace("load an extension of an XDP program", err)
	}
	return ext.Close()
}
