package xdpbtf_test

import (
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"

	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/xdpbtf"
)

// TestMarkedProgramCarriesItsPrototype loads a marked program and reads
// its BTF back from the kernel: the function is there, global, taking a
// pointer to struct xdp_md, which is what freplace compares.
func TestMarkedProgramCarriesItsPrototype(t *testing.T) {
	testenv.NeedBPF(t)
	insns := xdpbtf.Mark(asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}, "probe_entry")
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "probe_entry", Type: ebpf.XDP, License: "GPL", Instructions: insns})
	if err != nil {
		t.Fatal(err)
	}
	defer prog.Close()
	h, err := prog.Handle()
	if err != nil {
		t.Fatalf("the loaded program has no BTF: %v", err)
	}
	defer h.Close()
	spec, err := h.Spec(nil)
	if err != nil {
		t.Fatal(err)
	}
	var fn *btf.Func
	if err := spec.TypeByName("probe_entry", &fn); err != nil {
		t.Fatalf("function probe_entry not in the program's BTF: %v", err)
	}
	if fn.Linkage != btf.GlobalFunc {
		t.Errorf("linkage %v, want global", fn.Linkage)
	}
	proto := fn.Type.(*btf.FuncProto)
	if len(proto.Params) != 1 {
		t.Fatalf("%d parameters, want 1", len(proto.Params))
	}
	ptr, ok := proto.Params[0].Type.(*btf.Pointer)
	if !ok {
		t.Fatalf("parameter is %T, want a pointer", proto.Params[0].Type)
	}
	if s, ok := ptr.Target.(*btf.Struct); !ok || s.Name != "xdp_md" {
		t.Errorf("parameter points to %v, want struct xdp_md", ptr.Target)
	}
}

func TestMarkEmpty(t *testing.T) {
	if got := xdpbtf.Mark(nil, "x"); len(got) != 0 {
		t.Errorf("Mark(nil) = %v", got)
	}
}
