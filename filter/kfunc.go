package filter

import (
	"fmt"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// Kfuncs are the kernel BTF ids of the XDP metadata kfuncs, 0 where the
// kernel has none. A program calling them must be bound to one device
// (BPF_F_XDP_DEV_BOUND_ONLY), so only native attaches use them.
type Kfuncs struct {
	// Timestamp is bpf_xdp_metadata_rx_timestamp(ctx, *u64).
	Timestamp int32
	// VLANTag is bpf_xdp_metadata_rx_vlan_tag(ctx, *__be16, *u16).
	VLANTag int32
}

// call is the instruction calling kfunc id from vmlinux (BTF object 0).
func (k Kfuncs) call(id int32) asm.Instruction {
	return asm.Instruction{
		OpCode:   asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call),
		Src:      asm.PseudoKfuncCall,
		Constant: int64(id),
	}
}

// LookupKfuncs finds the metadata kfuncs in the running kernel's BTF
// (which cilium/ebpf reads once per process and caches).
func LookupKfuncs() (Kfuncs, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return Kfuncs{}, fmt.Errorf("kernel BTF: %w", err)
	}
	id := func(name string) int32 {
		var fn *btf.Func
		if spec.TypeByName(name, &fn) != nil {
			return 0
		}
		tid, err := spec.TypeID(fn)
		if err != nil {
			return 0
		}
		return int32(tid)
	}
	return Kfuncs{Timestamp: id("bpf_xdp_metadata_rx_timestamp"), VLANTag: id("bpf_xdp_metadata_rx_vlan_tag")}, nil
}
