// Package xdpbtf describes an XDP entry point in BTF: a global function
// int name(struct xdp_md *ctx). The kernel needs that description to let
// one program replace a function of another (freplace, what libxdp's
// dispatcher is built on): it compares the two prototypes, down to the
// name of the context struct. Every program packetio builds carries it on
// its first instruction.
package xdpbtf

import (
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
)

// Func returns the BTF of int name(struct xdp_md *ctx), global linkage.
func Func(name string) *btf.Func {
	u32 := &btf.Int{Name: "__u32", Size: 4}
	member := func(n string, i int) btf.Member {
		return btf.Member{Name: n, Type: u32, Offset: btf.Bits(32 * i)}
	}
	md := &btf.Struct{Name: "xdp_md", Size: 24, Members: []btf.Member{
		member("data", 0), member("data_end", 1), member("data_meta", 2),
		member("ingress_ifindex", 3), member("rx_queue_index", 4), member("egress_ifindex", 5),
	}}
	proto := &btf.FuncProto{
		Return: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed},
		Params: []btf.FuncParam{{Name: "ctx", Type: &btf.Pointer{Target: md}}},
	}
	return &btf.Func{Name: name, Type: proto, Linkage: btf.GlobalFunc}
}

// Mark puts Func(name) on the first instruction of insns (in place) and
// names the instruction's symbol name, the way a compiler marks a
// function's entry. An empty insns is left alone.
func Mark(insns asm.Instructions, name string) asm.Instructions {
	if len(insns) == 0 {
		return insns
	}
	first := btf.WithFuncMetadata(insns[0], Func(name))
	if first.Symbol() == "" {
		first = first.WithSymbol(name)
	}
	insns[0] = first
	return insns
}
