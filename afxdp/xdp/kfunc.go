package xdp

import (
	"fmt"
	"sync"

	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// kfuncIDs are the kernel BTF ids of the XDP metadata kfuncs, 0 where the
// kernel has none. A program calling them must be bound to one device
// (BPF_F_XDP_DEV_BOUND_ONLY), so only native attaches use them.
type kfuncIDs struct {
	timestamp int32 // bpf_xdp_metadata_rx_timestamp(ctx, *u64)
	vlanTag   int32 // bpf_xdp_metadata_rx_vlan_tag(ctx, *__be16, *u16)
}

// call is the instruction calling kfunc id from vmlinux (BTF object 0).
func (k kfuncIDs) call(id int32) asm.Instruction {
	return asm.Instruction{
		OpCode:   asm.OpCode(asm.JumpClass).SetJumpOp(asm.Call),
		Src:      asm.PseudoKfuncCall,
		Constant: int64(id),
	}
}

var (
	kfuncOnce sync.Once
	kfuncs    kfuncIDs
	kfuncErr  error
)

// lookupKfuncs finds the metadata kfuncs in the running kernel's BTF, once
// per process.
func lookupKfuncs() (kfuncIDs, error) {
	kfuncOnce.Do(func() {
		spec, err := btf.LoadKernelSpec()
		if err != nil {
			kfuncErr = fmt.Errorf("kernel BTF: %w", err)
			return
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
		kfuncs = kfuncIDs{timestamp: id("bpf_xdp_metadata_rx_timestamp"), vlanTag: id("bpf_xdp_metadata_rx_vlan_tag")}
	})
	return kfuncs, kfuncErr
}
