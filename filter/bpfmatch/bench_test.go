package bpfmatch

import (
	"testing"

	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/filter/bpfmatch/bpfmatchtest"
)

func BenchmarkCompile(b *testing.B) {
	insns := corpusProgram(b, "tcp port 22 and not src host 192.0.2.1")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile("ssh", insns); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClassify runs frames through a translated libpcap program in the
// kernel (BPF_PROG_TEST_RUN, one syscall per frame).
func BenchmarkClassify(b *testing.B) {
	m := Match("ssh", corpusProgram(b, "tcp port 22"))
	c := bpfmatchtest.Classifier(b, filter.Program{Matches: []filter.Match{m}})
	frames := bpfmatchtest.Frames()
	i := 0
	for b.Loop() {
		if _, err := c.Match(frames[i%len(frames)].Data); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
