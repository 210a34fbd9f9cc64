package filter

import (
	"errors"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// ProbeAdjustMeta loads, and unloads, a four-instruction XDP program that
// calls bpf_xdp_adjust_meta, and returns the kernel's refusal when the
// verifier will not let an XDP program call it (a kernel can be built so);
// stamping programs then need Program.StampInFrame. It returns nil when
// the program loads, and when the load fails for any other reason (no
// BPF at all, say), which the real load then reports.
func ProbeAdjustMeta() error {
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.XDP,
		License: programLicense,
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R2, -RxMetadataLen),
			asm.FnXdpAdjustMeta.Call(),
			asm.Mov.Imm(asm.R0, actPass),
			asm.Return(),
		},
	})
	if err == nil {
		p.Close()
		return nil
	}
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) && strings.Contains(ve.Error()+strings.Join(ve.Log, "\n"), "bpf_xdp_adjust_meta") {
		return err
	}
	return nil
}
