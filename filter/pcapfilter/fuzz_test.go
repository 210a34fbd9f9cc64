package pcapfilter

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/packetio/packetio/filter/bpfmatch"
	"github.com/packetio/packetio/filter/bpfmatch/bpfmatchtest"
)

// FuzzParse feeds arbitrary text to Compile. It must never panic; an
// error must be an *Error whose column lies within the expression (or one
// past its end); and a program it returns must be one bpfmatch accepts and
// the reference VM runs.
//
//	go test -run XXX -fuzz FuzzParse -fuzztime 30s ./filter/pcapfilter/
func FuzzParse(f *testing.F) {
	for _, tc := range intents {
		f.Add(tc.expr)
	}
	for _, s := range []string{
		"", "(", ")", "((((", "not not not", "ip[", "ip[0:", "ip[0] =", "host ::", "host 1.2.3.4.5",
		"ether host 1:2:3:4:5:6:7", "port 1-2-3", "portrange 5-", "vlan (((1)))", "tcp[tcpflags]&tcp-syn!=0",
		"\\", "\\tcp", "ip proto \\", "len-1 > 2", "0x", "0xffffffffff", "1.2.3.4/", "::/", "ip6 net ::/0",
		"host 10.0.0.1 and (192.0.2.1 or (10.0.0.2))", "-", "- - -", "(5) = (5)", "ip[0] ^ ^ 1", "ip[0] << 31 = 1",
		"ether[4294967295] = 1", "ip[-1] = 1", "src or dst or src", "src and", "dst or src net 10 mask 255.255.0.0",
		strings.Repeat("(", 150) + "ip" + strings.Repeat(")", 150), strings.Repeat("not ", 150) + "ip",
		strings.Repeat("port 1 or ", 300) + "port 2",
	} {
		f.Add(s)
	}
	r := rand.New(rand.NewPCG(9, 9))
	for range 40 {
		b := make([]byte, 48)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		f.Add(generateExpr(b))
	}
	frames := bpfmatchtest.Frames()[:20]
	f.Fuzz(func(t *testing.T, expr string) {
		insns, err := Compile(expr)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%q: %v is not an *Error", expr, err)
			}
			if e.Column < 0 || e.Column > len(expr)+1 || e.Msg == "" || e.Expr != expr {
				t.Fatalf("%q: bad error %+v", expr, e)
			}
			return
		}
		if len(insns) == 0 || len(insns) > bpfmatch.MaxInstructions {
			t.Fatalf("%q: %d instructions", expr, len(insns))
		}
		if _, err := bpfmatch.Compile(expr, insns); err != nil {
			t.Fatalf("%q: bpfmatch refuses the program: %v%s", expr, err, listing(insns))
		}
		o, err := bpfmatchtest.NewOracle(insns)
		if err != nil {
			t.Fatalf("%q: %v%s", expr, err, listing(insns))
		}
		for _, fr := range frames {
			if _, err := o.Match(fr.Data); err != nil {
				t.Fatalf("%q: %v", expr, err)
			}
		}
	})
}
