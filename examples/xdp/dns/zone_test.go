package main

import (
	"bytes"
	"encoding/binary"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/packetio/packetio/examples/xdp/dns/dnsmsg"
)

var update = flag.Bool("update", false, "rewrite the golden packets in testdata/")

func demo(t testing.TB) *Zone {
	t.Helper()
	z, err := ParseZone(demoZone, 300)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// TestParseZone: names are case-insensitive and repeatable, families sort
// themselves into A and AAAA, ancestors exist empty, and what is not a name
// or an address is refused.
func TestParseZone(t *testing.T) {
	z, err := ParseZone(" WWW.example.test=192.0.2.1, www.example.test.=2001:db8::1,www.example.test=::ffff:192.0.2.2 ,", 60)
	if err != nil {
		t.Fatal(err)
	}
	if got := z.Addrs("www.example.test", false); !slices.Equal(got, []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")}) {
		t.Errorf("A: %v", got)
	}
	if got := z.Addrs("Www.Example.Test.", true); !slices.Equal(got, []netip.Addr{netip.MustParseAddr("2001:db8::1")}) {
		t.Errorf("AAAA: %v", got)
	}
	for _, ent := range []string{"example.test.", "test."} {
		if e := z.names[string(must(dnsmsg.ParseName(ent)))]; e == nil || len(e.a)+len(e.aaaa) != 0 {
			t.Errorf("%s is not an empty non-terminal", ent)
		}
	}
	if got := z.Names(); !slices.Equal(got, []string{"www.example.test."}) {
		t.Errorf("names %v", got)
	}
	for _, bad := range []string{"", ",", "www.example.test", "=192.0.2.1", ".=192.0.2.1", "www..test=192.0.2.1",
		"www.example.test=192.0.2", "www.example.test=fe80::1%eth0", "bad name=192.0.2.1"} {
		if _, err := ParseZone(bad, 60); err == nil {
			t.Errorf("zone %q accepted", bad)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// golden is one query of testdata/ and what its answer must say, checked
// through dnsmessage, a parser this program shares nothing with.
type golden struct {
	file    string
	build   func() []byte
	rcode   dnsmessage.RCode // header RCODE
	ext     uint8            // OPT extended RCODE bits
	aa      bool
	answers []string // the data of the answers, in order
	drop    bool     // no answer at all
	edns    bool     // the answer carries an OPT record
	noQ     bool     // the answer has no question section
}

// query builds a query the way Go's resolver does, with dnsmessage.
func query(name string, typ dnsmessage.Type, class dnsmessage.Class, opcode dnsmessage.OpCode, edns bool) []byte {
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 0x5ca1, RecursionDesired: true, OpCode: opcode})
	b.EnableCompression()
	_ = b.StartQuestions()
	_ = b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: class})
	if edns {
		_ = b.StartAdditionals()
		var rh dnsmessage.ResourceHeader
		_ = rh.SetEDNS0(1232, dnsmessage.RCodeSuccess, false)
		_ = b.OPTResource(rh, dnsmessage.OPTResource{})
	}
	return must(b.Finish())
}

var goldens = []golden{
	{file: "a", build: func() []byte { return query("www.example.test.", dnsmessage.TypeA, dnsmessage.ClassINET, 0, true) },
		aa: true, edns: true, answers: []string{"192.0.2.10", "192.0.2.11"}},
	{file: "aaaa", build: func() []byte { return query("www.example.test.", dnsmessage.TypeAAAA, dnsmessage.ClassINET, 0, true) },
		aa: true, edns: true, answers: []string{"2001:db8::10"}},
	{file: "mixedcase", build: func() []byte { return query("WwW.ExAmPlE.TeSt.", dnsmessage.TypeA, dnsmessage.ClassINET, 0, false) },
		aa: true, answers: []string{"192.0.2.10", "192.0.2.11"}},
	{file: "any", build: func() []byte { return query("www.example.test.", dnsmessage.TypeALL, dnsmessage.ClassINET, 0, false) },
		aa: true, answers: []string{"192.0.2.10", "192.0.2.11", "2001:db8::10"}},
	{file: "nxdomain", build: func() []byte {
		return query("nonexistent.example.test.", dnsmessage.TypeA, dnsmessage.ClassINET, 0, true)
	},
		rcode: dnsmessage.RCodeNameError, aa: true, edns: true},
	{file: "nodata", build: func() []byte {
		return query("v4only.example.test.", dnsmessage.TypeAAAA, dnsmessage.ClassINET, 0, true)
	},
		aa: true, edns: true},
	{file: "nonterminal", build: func() []byte { return query("example.test.", dnsmessage.TypeA, dnsmessage.ClassINET, 0, false) },
		aa: true},
	{file: "mx", build: func() []byte { return query("www.example.test.", dnsmessage.TypeMX, dnsmessage.ClassINET, 0, false) },
		aa: true},
	{file: "chaos", build: func() []byte { return query("version.bind.", dnsmessage.TypeTXT, dnsmessage.ClassCHAOS, 0, false) },
		rcode: dnsmessage.RCodeRefused},
	{file: "axfr", build: func() []byte { return query("example.test.", dnsmessage.TypeAXFR, dnsmessage.ClassINET, 0, false) },
		rcode: dnsmessage.RCodeRefused},
	{file: "status", build: func() []byte { return query("www.example.test.", dnsmessage.TypeA, dnsmessage.ClassINET, 2, false) },
		rcode: dnsmessage.RCodeNotImplemented},
	{file: "ednsversion1", build: func() []byte {
		q := query("www.example.test.", dnsmessage.TypeA, dnsmessage.ClassINET, 0, true)
		q[len(q)-5] = 1 // the OPT TTL's version byte
		return q
	}, ext: 1, edns: true},
	{file: "twoquestions", build: func() []byte {
		q := query("www.example.test.", dnsmessage.TypeA, dnsmessage.ClassINET, 0, false)
		binary.BigEndian.PutUint16(q[4:], 2)
		return append(q, q[12:]...)
	}, rcode: dnsmessage.RCodeFormatError, noQ: true},
	{file: "cutname", build: func() []byte {
		return query("www.example.test.", dnsmessage.TypeA, dnsmessage.ClassINET, 0, false)[:18]
	}, rcode: dnsmessage.RCodeFormatError, noQ: true},
	{file: "response", build: func() []byte {
		q := query("www.example.test.", dnsmessage.TypeA, dnsmessage.ClassINET, 0, false)
		q[2] |= 0x80
		return q
	}, drop: true},
}

// TestGolden: each query in testdata/ gets exactly the answer stored beside
// it (go test -update rewrites both from the table), and that answer,
// read with dnsmessage, says what the table says: the response code, AA,
// the records in order, the question kept as the client wrote it, EDNS
// echoed.
func TestGolden(t *testing.T) {
	z := demo(t)
	for _, g := range goldens {
		qpath := filepath.Join("testdata", g.file+".query")
		rpath := filepath.Join("testdata", g.file+".response")
		if *update {
			must(0, os.WriteFile(qpath, g.build(), 0o644))
		}
		msg, err := os.ReadFile(qpath)
		if err != nil {
			t.Fatalf("%s: %v (go test -update writes it)", g.file, err)
		}
		var q dnsmsg.Query
		out := make([]byte, 1500)
		n, _ := z.Answer(msg, &q, out, nil)
		if *update {
			os.Remove(rpath)
			if n > 0 {
				must(0, os.WriteFile(rpath, out[:n], 0o644))
			}
		}
		if g.drop {
			if n != 0 {
				t.Errorf("%s: answered", g.file)
			}
			if _, err := os.Stat(rpath); err == nil {
				t.Errorf("%s: a golden answer exists for a message that must not be answered", g.file)
			}
			continue
		}
		want, err := os.ReadFile(rpath)
		if err != nil {
			t.Fatalf("%s: %v", g.file, err)
		}
		if !bytes.Equal(out[:n], want) {
			t.Errorf("%s: answer\n%x\nwant\n%x", g.file, out[:n], want)
		}
		checkAnswer(t, g, msg, want)
	}
}

// checkAnswer reads a response with dnsmessage and checks it against g.
func checkAnswer(t *testing.T, g golden, query, resp []byte) {
	t.Helper()
	var qp dnsmessage.Parser
	qh := must(qp.Start(query))
	var p dnsmessage.Parser
	h, err := p.Start(resp)
	if err != nil {
		t.Fatalf("%s: %v", g.file, err)
	}
	qs := must(p.AllQuestions())
	an := must(p.AllAnswers())
	must(0, p.SkipAllAuthorities())
	ar := must(p.AllAdditionals())
	if h.ID != qh.ID || !h.Response || h.OpCode != qh.OpCode || h.RecursionDesired != qh.RecursionDesired || h.RecursionAvailable ||
		h.Truncated || h.RCode != g.rcode || h.Authoritative != g.aa {
		t.Errorf("%s: header %+v", g.file, h)
	}
	if g.noQ != (len(qs) == 0) {
		t.Errorf("%s: %d questions", g.file, len(qs))
	}
	if len(qs) == 1 {
		wq := must(qp.Question())
		if qs[0] != wq {
			t.Errorf("%s: question %v, asked %v", g.file, qs[0], wq)
		}
	}
	var got []string
	for _, a := range an {
		if a.Header.TTL != 300 || a.Header.Class != dnsmessage.ClassINET || !strings.EqualFold(a.Header.Name.String(), qs[0].Name.String()) {
			t.Errorf("%s: record header %+v", g.file, a.Header)
		}
		switch b := a.Body.(type) {
		case *dnsmessage.AResource:
			got = append(got, netip.AddrFrom4(b.A).String())
		case *dnsmessage.AAAAResource:
			got = append(got, netip.AddrFrom16(b.AAAA).String())
		}
	}
	if !slices.Equal(got, g.answers) {
		t.Errorf("%s: answers %v, want %v", g.file, got, g.answers)
	}
	if g.edns != (len(ar) == 1) {
		t.Errorf("%s: %d additionals", g.file, len(ar))
	}
	if len(ar) == 1 && (ar[0].Header.Type != dnsmessage.TypeOPT || ar[0].Header.Class != dnsmsg.ServerUDPSize || uint8(ar[0].Header.TTL>>24) != g.ext) {
		t.Errorf("%s: OPT %+v", g.file, ar[0].Header)
	}
}

// TestAnswerVerdicts: the verdict the counters see matches the answer.
func TestAnswerVerdicts(t *testing.T) {
	z := demo(t)
	want := map[string]Verdict{"a": Answered, "aaaa": Answered, "mixedcase": Answered, "any": Answered, "nxdomain": NXDomain,
		"nodata": NoData, "nonterminal": NoData, "mx": NoData, "chaos": Refused, "axfr": Refused, "status": NotImp,
		"ednsversion1": BadVers, "twoquestions": FormErr, "cutname": FormErr, "response": Dropped}
	for _, g := range goldens {
		var q dnsmsg.Query
		if _, v := z.Answer(g.build(), &q, make([]byte, 1500), nil); v != want[g.file] {
			t.Errorf("%s: %v, want %v", g.file, v, want[g.file])
		}
	}
	var q dnsmsg.Query
	if n, v := z.Answer(make([]byte, 11), &q, make([]byte, 1500), nil); n != 0 || v != Dropped {
		t.Errorf("11 bytes: %d, %v", n, v)
	}
}

// TestAnswerNoAllocations: a query answered in place allocates nothing.
func TestAnswerNoAllocations(t *testing.T) {
	z := demo(t)
	msg := goldens[0].build()
	buf := make([]byte, 1500)
	recs := make([]dnsmsg.Record, 0, 8)
	var q dnsmsg.Query
	n := testing.AllocsPerRun(1000, func() {
		copy(buf, msg)
		if n, _ := z.Answer(buf[:len(msg)], &q, buf, recs); n == 0 {
			t.Fatal("no answer")
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per answer", n)
	}
}

// FuzzAnswer: whatever arrives, Answer does not panic, writes no more than
// the client may receive, and what it writes parses with dnsmessage.
func FuzzAnswer(f *testing.F) {
	for _, g := range goldens {
		f.Add(g.build())
	}
	z := demo(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		var q dnsmsg.Query
		in := bytes.Clone(msg)
		out := make([]byte, 1500)
		copy(out, in)
		n, v := z.Answer(in[:len(in):len(in)], &q, out, nil)
		if n == 0 {
			if v != Dropped {
				t.Fatalf("verdict %v with no answer", v)
			}
			return
		}
		if n > dnsmsg.Limit(&q) {
			t.Fatalf("%d-byte answer, the client takes %d", n, dnsmsg.Limit(&q))
		}
		var p dnsmessage.Parser
		if _, err := p.Start(out[:n]); err != nil {
			t.Fatalf("answer %x: %v", out[:n], err)
		}
	})
}
