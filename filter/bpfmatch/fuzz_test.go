package bpfmatch

import (
	"encoding/hex"
	"math/rand/v2"
	"testing"

	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/filter/bpfmatch/bpfmatchtest"
	"github.com/packetio/packetio/internal/testenv"
)

// FuzzDifferential builds a classic program and a packet from the fuzz
// input, translates the program, and runs the packet (and a sample of the
// frame corpus) through the reference VM and the kernel: any disagreement
// is a failure, and so is a program the generator makes that Compile
// refuses or the verifier rejects.
//
// Every input loads a BPF program, so inputs go through
// bpfmatchtest.WaitLoad (at most 100 loads a second): run it with
// -parallel 1, for example
//
//	go test -run XXX -fuzz FuzzDifferential -fuzztime 30s -parallel 1 ./filter/bpfmatch/
func FuzzDifferential(f *testing.F) {
	testenv.NeedBPF(f)
	r := rand.New(rand.NewPCG(7, 7))
	for range 16 {
		b := make([]byte, 40+r.IntN(160))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add(make([]byte, 64))
	var sample []bpfmatchtest.Frame
	all := bpfmatchtest.Frames()
	for i := 0; i < len(all); i += len(all) / 16 {
		sample = append(sample, all[i])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &source{data: data}
		insns := randomProgram(s)
		packet := append([]byte(nil), data[min(s.pos, len(data)):]...)
		for len(packet) < 14 {
			packet = append(packet, 0)
		}
		if len(packet) > 1500 {
			packet = packet[:1500]
		}
		m, err := Compile("fuzz", insns)
		if err != nil {
			t.Fatalf("Compile refused a valid program: %v%s", err, listing(insns))
		}
		oracle, err := bpfmatchtest.NewOracle(insns)
		if err != nil {
			t.Fatalf("%v%s", err, listing(insns))
		}
		c, err := bpfmatchtest.LoadClassifier(t, filter.Program{Matches: []filter.Match{m}})
		if err != nil {
			if filter.IsVerifierError(err) {
				t.Fatalf("the verifier refused the translation: %+v%s", err, listing(insns))
			}
			t.Fatalf("load: %v", err)
		}
		defer c.Close()
		frames := append([]bpfmatchtest.Frame{{Name: "fuzz packet", Data: packet}}, sample...)
		for _, fr := range frames {
			want, err := oracle.Match(fr.Data)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Match(fr.Data)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%s: kernel %v, reference VM %v%s\n\tpacket %s", fr.Name, got, want, listing(insns), hex.EncodeToString(fr.Data))
			}
		}
	})
}
