package pcapfilter

import (
	"fmt"
	"strings"

	"golang.org/x/net/bpf"
)

func listing(insns []bpf.Instruction) string {
	var b strings.Builder
	for i, ins := range insns {
		if raw, ok := ins.(bpf.RawInstruction); ok {
			ins = raw.Disassemble()
		}
		if s, ok := ins.(fmt.Stringer); ok {
			fmt.Fprintf(&b, "\n\t%3d  %s", i, s)
		} else {
			fmt.Fprintf(&b, "\n\t%3d  %#v", i, ins)
		}
	}
	return b.String()
}
