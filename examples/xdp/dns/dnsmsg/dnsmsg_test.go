package dnsmsg

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

func wire(t testing.TB, s string) []byte {
	t.Helper()
	w, err := ParseName(s)
	if err != nil {
		t.Fatalf("ParseName(%q): %v", s, err)
	}
	return w
}

// header is a 12-byte header with the given flags and counts.
func header(id, flags, qd, an, ns, ar uint16) []byte {
	b := make([]byte, 12)
	for i, v := range []uint16{id, flags, qd, an, ns, ar} {
		binary.BigEndian.PutUint16(b[2*i:], v)
	}
	return b
}

func question(name []byte, qtype, class uint16) []byte {
	b := append([]byte(nil), name...)
	b = binary.BigEndian.AppendUint16(b, qtype)
	return binary.BigEndian.AppendUint16(b, class)
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// opt is an OPT record: root owner, size, version, DO, and options data.
func opt(size uint16, version uint8, do bool, data []byte) []byte {
	b := []byte{0, 0, TypeOPT}
	b = binary.BigEndian.AppendUint16(b, size)
	ttl := uint32(version) << 16
	if do {
		ttl |= 0x8000
	}
	b = binary.BigEndian.AppendUint32(b, ttl)
	b = binary.BigEndian.AppendUint16(b, uint16(len(data)))
	return append(b, data...)
}

// TestParseQuery: what a server needs is read from well-formed queries,
// with and without EDNS, with records it must step over.
func TestParseQuery(t *testing.T) {
	www := wire(t, "www.Example.test")
	mixed := []byte("\x03WwW\x07ExAmPlE\x04TeSt\x00")
	cookie := []byte{0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8} // option 10, 8 bytes
	for _, tc := range []struct {
		name string
		msg  []byte
		want Query
		qn   []byte
	}{
		{"plain A", cat(header(0x1234, FlagRD, 1, 0, 0, 0), question(www, TypeA, ClassIN)),
			Query{ID: 0x1234, RD: true, QDCount: 1, QType: TypeA, QClass: ClassIN}, www},
		{"case kept", cat(header(7, 0, 1, 0, 0, 0), question(mixed, TypeAAAA, ClassIN)),
			Query{ID: 7, QDCount: 1, QType: TypeAAAA, QClass: ClassIN}, mixed},
		{"EDNS 1232, DO, a cookie", cat(header(1, FlagRD|FlagCD, 1, 0, 0, 1), question(www, TypeAAAA, ClassIN), opt(1232, 0, true, cookie)),
			Query{ID: 1, RD: true, CD: true, QDCount: 1, QType: TypeAAAA, QClass: ClassIN, EDNS: true, UDPSize: 1232, DO: true}, www},
		{"EDNS size below 512 counts as 512", cat(header(1, 0, 1, 0, 0, 1), question(www, TypeA, ClassIN), opt(100, 0, false, nil)),
			Query{ID: 1, QDCount: 1, QType: TypeA, QClass: ClassIN, EDNS: true, UDPSize: 512}, www},
		{"EDNS version 1", cat(header(1, 0, 1, 0, 0, 1), question(www, TypeA, ClassIN), opt(4096, 1, false, nil)),
			Query{ID: 1, QDCount: 1, QType: TypeA, QClass: ClassIN, EDNS: true, UDPSize: 4096, Version: 1}, www},
		{"opcode STATUS", cat(header(9, OpStatus<<11, 1, 0, 0, 0), question(www, TypeA, ClassIN)),
			Query{ID: 9, Opcode: OpStatus, QDCount: 1, QType: TypeA, QClass: ClassIN}, www},
		{"an answer record to step over, owner compressed", cat(header(2, 0, 1, 1, 0, 0), question(www, TypeA, ClassIN),
			[]byte{0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 0, 0, 1}),
			Query{ID: 2, QDCount: 1, QType: TypeA, QClass: ClassIN}, www},
		{"root", cat(header(3, 0, 1, 0, 0, 0), question([]byte{0}, TypeNS, ClassIN)),
			Query{ID: 3, QDCount: 1, QType: TypeNS, QClass: ClassIN}, []byte{0}},
		{"trailing bytes ignored", cat(header(4, 0, 1, 0, 0, 0), question(www, TypeA, ClassIN), []byte{1, 2, 3}),
			Query{ID: 4, QDCount: 1, QType: TypeA, QClass: ClassIN}, www},
	} {
		var q Query
		if err := ParseQuery(tc.msg, &q); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !bytes.Equal(q.Name(), tc.qn) {
			t.Errorf("%s: name %q, want %q", tc.name, q.Name(), tc.qn)
		}
		got := q
		got.name, got.nlen = [MaxName]byte{}, 0
		if got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// TestParseQueryRefuses: every malformed message is an error, of the kind
// that says whether to answer it.
func TestParseQueryRefuses(t *testing.T) {
	www := wire(t, "www.example.test")
	q1 := question(www, TypeA, ClassIN)
	long := make([]byte, 0, 300)
	for range 64 {
		long = append(long, 3, 'a', 'b', 'c')
	}
	long = append(long, 0)
	max := make([]byte, 0, 255)
	for range 127 {
		max = append(max, 1, 'x')
	}
	max = append(max, 0) // 255 bytes: the limit
	over := append([]byte{1, 'y'}, max...)
	for _, tc := range []struct {
		name string
		msg  []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"11 bytes", header(1, 0, 1, 0, 0, 0)[:11], ErrShort},
		{"a response", cat(header(1, FlagQR, 1, 0, 0, 0), q1), ErrResponse},
		{"no question", header(1, 0, 0, 0, 0, 0), ErrCount},
		{"two questions", cat(header(1, 0, 2, 0, 0, 0), q1, q1), ErrCount},
		{"question cut in the name", cat(header(1, 0, 1, 0, 0, 0), www[:5]), ErrFormat},
		{"question cut in the type", cat(header(1, 0, 1, 0, 0, 0), q1[:len(q1)-3]), ErrFormat},
		{"name with no end", cat(header(1, 0, 1, 0, 0, 0), []byte{3, 'a', 'b', 'c'}), ErrFormat},
		{"label type 0x40", cat(header(1, 0, 1, 0, 0, 0), []byte{0x41, 'a', 0}, q1[len(www):]), ErrFormat},
		{"label type 0x80", cat(header(1, 0, 1, 0, 0, 0), []byte{0x81, 'a', 0}, q1[len(www):]), ErrFormat},
		{"name of 256 bytes", cat(header(1, 0, 1, 0, 0, 0), long, q1[len(www):]), ErrFormat},
		{"name of 257 bytes", cat(header(1, 0, 1, 0, 0, 0), over, q1[len(www):]), ErrFormat},
		{"pointer to itself", cat(header(1, 0, 1, 0, 0, 0), []byte{0xc0, 12}, q1[len(www):]), ErrFormat},
		{"pointer forwards", cat(header(1, 0, 1, 0, 0, 0), []byte{0xc0, 14, 0, 0}, q1[len(www):]), ErrFormat},
		{"pointer loop through a label", cat(header(1, 0, 1, 1, 0, 0), q1, []byte{1, 'a', 0xc0, byte(12 + len(q1))}, make([]byte, 10)), ErrFormat},
		{"pointer cut", cat(header(1, 0, 1, 0, 0, 0), []byte{0xc0}), ErrFormat},
		{"record cut", cat(header(1, 0, 1, 1, 0, 0), q1, []byte{0xc0, 12, 0, 1, 0, 1}), ErrFormat},
		{"record data past the end", cat(header(1, 0, 1, 1, 0, 0), q1, []byte{0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 1, 0, 9, 1}), ErrFormat},
		{"records claimed, none there", cat(header(1, 0, 1, 0, 0, 3), q1), ErrFormat},
		{"OPT in the answers", cat(header(1, 0, 1, 1, 0, 0), q1, opt(1232, 0, false, nil)), ErrFormat},
		{"two OPTs", cat(header(1, 0, 1, 0, 0, 2), q1, opt(1232, 0, false, nil), opt(1232, 0, false, nil)), ErrFormat},
		{"OPT not owned by the root", cat(header(1, 0, 1, 0, 0, 1), q1, []byte{1, 'x'}, opt(1232, 0, false, nil)[1:]), ErrFormat},
		{"OPT option cut", cat(header(1, 0, 1, 0, 0, 1), q1, opt(1232, 0, false, []byte{0, 10, 0, 8, 1})), ErrFormat},
		{"OPT option header cut", cat(header(1, 0, 1, 0, 0, 1), q1, opt(1232, 0, false, []byte{0, 10})), ErrFormat},
	} {
		var q Query
		if err := ParseQuery(tc.msg, &q); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// The longest name there may be is read.
	var q Query
	if err := ParseQuery(cat(header(1, 0, 1, 0, 0, 0), max, q1[len(www):]), &q); err != nil || len(q.Name()) != 255 {
		t.Errorf("255-byte name: %v, %d bytes", err, len(q.Name()))
	}
}

// TestAgreesWithDNSMessage: for queries golang.org/x/net/dns/dnsmessage
// builds (an encoder this package shares nothing with), ParseQuery reads
// what dnsmessage's own parser reads.
func TestAgreesWithDNSMessage(t *testing.T) {
	for i, tc := range []struct {
		name  string
		typ   dnsmessage.Type
		class dnsmessage.Class
		edns  uint16
		rd    bool
	}{
		{"www.example.test.", dnsmessage.TypeA, dnsmessage.ClassINET, 1232, true},
		{"WWW.example.TEST.", dnsmessage.TypeAAAA, dnsmessage.ClassINET, 0, true},
		{"a.b.c.d.e.f.g.h.", dnsmessage.TypeMX, dnsmessage.ClassCHAOS, 4096, false},
		{"_sip._udp.example.test.", dnsmessage.TypeSRV, dnsmessage.ClassINET, 512, true},
		{".", dnsmessage.TypeNS, dnsmessage.ClassANY, 0, false},
		{strings.Repeat("x", 63) + "." + strings.Repeat("y", 63) + ".", dnsmessage.TypeTXT, dnsmessage.ClassINET, 1400, true},
	} {
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: uint16(1000 + i), RecursionDesired: tc.rd})
		b.EnableCompression()
		must(t, b.StartQuestions())
		must(t, b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(tc.name), Type: tc.typ, Class: tc.class}))
		if tc.edns != 0 {
			must(t, b.StartAdditionals())
			var rh dnsmessage.ResourceHeader
			must(t, rh.SetEDNS0(int(tc.edns), dnsmessage.RCodeSuccess, false))
			must(t, b.OPTResource(rh, dnsmessage.OPTResource{}))
		}
		msg, err := b.Finish()
		must(t, err)

		var p dnsmessage.Parser
		h, err := p.Start(msg)
		must(t, err)
		dq, err := p.Question()
		must(t, err)

		var q Query
		if err := ParseQuery(msg, &q); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if q.ID != h.ID || q.RD != h.RecursionDesired || q.QType != uint16(dq.Type) || q.QClass != uint16(dq.Class) ||
			q.NameString() != dq.Name.String() || q.EDNS != (tc.edns != 0) || (q.EDNS && int(q.UDPSize) != max(int(tc.edns), 512)) {
			t.Errorf("%s: read %+v (%s), dnsmessage %+v %+v", tc.name, q, q.NameString(), h, dq)
		}
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// parseResponse reads a response with dnsmessage, failing the test if it
// does not parse.
func parseResponse(t testing.TB, b []byte) (dnsmessage.Header, []dnsmessage.Question, []dnsmessage.Resource, []dnsmessage.Resource) {
	t.Helper()
	var p dnsmessage.Parser
	h, err := p.Start(b)
	if err != nil {
		t.Fatalf("response does not parse: %v\n%x", err, b)
	}
	qs, err := p.AllQuestions()
	if err != nil {
		t.Fatalf("questions: %v\n%x", err, b)
	}
	an, err := p.AllAnswers()
	if err != nil {
		t.Fatalf("answers: %v\n%x", err, b)
	}
	if err := p.SkipAllAuthorities(); err != nil {
		t.Fatalf("authorities: %v", err)
	}
	ar, err := p.AllAdditionals()
	if err != nil {
		t.Fatalf("additionals: %v\n%x", err, b)
	}
	return h, qs, an, ar
}

// TestWriteResponse: responses read back through dnsmessage with the
// header, question, answers and OPT record they should have; written over
// the query they answer, they are the same bytes as written elsewhere.
func TestWriteResponse(t *testing.T) {
	mixed := []byte("\x03WwW\x07ExAmPlE\x04TeSt\x00")
	query := cat(header(0xbeef, FlagRD|FlagCD, 1, 0, 0, 1), question(mixed, TypeA, ClassIN), opt(1232, 0, true, nil))
	var q Query
	must(t, ParseQuery(query, &q))
	recs := []Record{{Type: TypeA, TTL: 300, Data: []byte{192, 0, 2, 10}}, {Type: TypeAAAA, TTL: 60, Data: bytes.Repeat([]byte{0x20}, 16)}}
	out := make([]byte, 1500)
	n := WriteResponse(out, &q, Response{RCode: RCodeNoError, Authoritative: true, Question: true, Answers: recs})
	h, qs, an, ar := parseResponse(t, out[:n])
	if h.ID != 0xbeef || !h.Response || !h.Authoritative || !h.RecursionDesired || !h.CheckingDisabled || h.RecursionAvailable || h.Truncated || h.RCode != dnsmessage.RCodeSuccess {
		t.Errorf("header %+v", h)
	}
	if len(qs) != 1 || qs[0].Name.String() != "WwW.ExAmPlE.TeSt." || qs[0].Type != dnsmessage.TypeA {
		t.Errorf("question %+v (the client's case must be kept)", qs)
	}
	if len(an) != 2 || an[0].Header.Name.String() != "WwW.ExAmPlE.TeSt." || an[0].Header.TTL != 300 ||
		an[0].Body.(*dnsmessage.AResource).A != [4]byte{192, 0, 2, 10} || an[1].Body.(*dnsmessage.AAAAResource).AAAA != [16]byte(recs[1].Data) {
		t.Errorf("answers %+v", an)
	}
	if len(ar) != 1 || ar[0].Header.Type != dnsmessage.TypeOPT || ar[0].Header.Class != ServerUDPSize || ar[0].Header.TTL != 0 {
		t.Errorf("additionals %+v", ar)
	}
	// In place, over the query.
	inPlace := make([]byte, 1500)
	copy(inPlace, query)
	var q2 Query
	must(t, ParseQuery(inPlace[:len(query)], &q2))
	if m := WriteResponse(inPlace, &q2, Response{RCode: RCodeNoError, Authoritative: true, Question: true, Answers: recs}); !bytes.Equal(inPlace[:m], out[:n]) {
		t.Errorf("in place:\n%x\nelsewhere:\n%x", inPlace[:m], out[:n])
	}
}

// TestResponseCodes: the error codes read back; BADVERS lands in the OPT
// record's extended bits; FORMERR without a question has none.
func TestResponseCodes(t *testing.T) {
	www := wire(t, "www.example.test")
	edns := cat(header(5, 0, 1, 0, 0, 1), question(www, TypeA, ClassIN), opt(1232, 1, false, nil))
	plain := cat(header(6, OpStatus<<11, 1, 0, 0, 0), question(www, TypeA, ClassCH))
	out := make([]byte, 512)
	for _, tc := range []struct {
		name     string
		query    []byte
		r        Response
		rcode    dnsmessage.RCode
		qd       int
		opcode   int
		extended uint32
	}{
		{"nxdomain", plain, Response{RCode: RCodeNXDomain, Authoritative: true, Question: true}, dnsmessage.RCodeNameError, 1, OpStatus, 0},
		{"refused", plain, Response{RCode: RCodeRefused, Question: true}, dnsmessage.RCodeRefused, 1, OpStatus, 0},
		{"notimp", plain, Response{RCode: RCodeNotImp, Question: true}, dnsmessage.RCodeNotImplemented, 1, OpStatus, 0},
		{"formerr", plain, Response{RCode: RCodeFormErr}, dnsmessage.RCodeFormatError, 0, OpStatus, 0},
		{"badvers", edns, Response{RCode: RCodeBadVers, Question: true}, dnsmessage.RCodeSuccess, 1, 0, 1 << 24},
	} {
		var q Query
		must(t, ParseQuery(tc.query, &q))
		n := WriteResponse(out, &q, tc.r)
		h, qs, an, ar := parseResponse(t, out[:n])
		if h.RCode != tc.rcode || len(qs) != tc.qd || len(an) != 0 || h.Authoritative != tc.r.Authoritative {
			t.Errorf("%s: %+v, %d questions, %d answers", tc.name, h, len(qs), len(an))
		}
		if op := int(binary.BigEndian.Uint16(out[2:])>>11) & 0xf; op != tc.opcode {
			t.Errorf("%s: opcode %d, want %d", tc.name, op, tc.opcode)
		}
		if q.EDNS && (len(ar) != 1 || ar[0].Header.TTL != tc.extended) {
			t.Errorf("%s: OPT %+v", tc.name, ar)
		}
	}
	// BADVERS needs EDNS to say it.
	var q Query
	must(t, ParseQuery(plain, &q))
	if WriteResponse(out, &q, Response{RCode: RCodeBadVers, Question: true}) != 0 {
		t.Error("BADVERS written without an OPT record")
	}
}

// TestTruncation: answers that do not fit what the client can receive (512
// bytes without EDNS, its size with, never over 1232) are left out and TC
// set; a buffer too small for even that gets nothing.
func TestTruncation(t *testing.T) {
	www := wire(t, "www.example.test")
	recs := make([]Record, 40) // 40 * 28 bytes of AAAA: over 1000
	for i := range recs {
		recs[i] = Record{Type: TypeAAAA, TTL: 1, Data: make([]byte, 16)}
	}
	out := make([]byte, 4096)
	for _, tc := range []struct {
		name  string
		query []byte
		recs  int
		tc    bool
	}{
		{"no EDNS, 17 fit", cat(header(1, 0, 1, 0, 0, 0), question(www, TypeAAAA, ClassIN)), 17, false},
		{"no EDNS, 18 do not", cat(header(1, 0, 1, 0, 0, 0), question(www, TypeAAAA, ClassIN)), 18, true},
		{"EDNS 4096, 40 fit 1232", cat(header(1, 0, 1, 0, 0, 1), question(www, TypeAAAA, ClassIN), opt(4096, 0, false, nil)), 40, false},
		{"EDNS 600, 40 do not", cat(header(1, 0, 1, 0, 0, 1), question(www, TypeAAAA, ClassIN), opt(600, 0, false, nil)), 40, true},
	} {
		var q Query
		must(t, ParseQuery(tc.query, &q))
		n := WriteResponse(out, &q, Response{Authoritative: true, Question: true, Answers: recs[:tc.recs]})
		h, _, an, _ := parseResponse(t, out[:n])
		if n > Limit(&q) || h.Truncated != tc.tc || (tc.tc && len(an) != 0) || (!tc.tc && len(an) != tc.recs) {
			t.Errorf("%s: %d bytes, TC %v, %d answers", tc.name, n, h.Truncated, len(an))
		}
	}
	var q Query
	must(t, ParseQuery(cat(header(1, 0, 1, 0, 0, 0), question(www, TypeA, ClassIN)), &q))
	if WriteResponse(out[:20], &q, Response{Question: true}) != 0 {
		t.Error("a response was written into a buffer too small for it")
	}
}

// TestNames: presentation to wire and back, lowercased, with the limits.
func TestNames(t *testing.T) {
	for _, tc := range []struct{ in, out string }{
		{"www.Example.TEST", "www.example.test."},
		{"www.example.test.", "www.example.test."},
		{".", "."},
		{"_dmarc.x-y.example", "_dmarc.x-y.example."},
	} {
		w, err := ParseName(tc.in)
		if err != nil || NameString(w) != tc.out {
			t.Errorf("%q: %q, %v", tc.in, NameString(w), err)
		}
	}
	for _, bad := range []string{"a..b", strings.Repeat("x", 64) + ".test", "sp ace.test", "dot\\.test", strings.Repeat("a.", 128)} {
		if _, err := ParseName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if got := NameString([]byte("\x03a.b\x02\x00\xff\x00")); got != `a\.b.\000\255.` {
		t.Errorf("escaping: %q", got)
	}
	if got := string(Lower(nil, []byte("\x03WwW\x00"))); got != "\x03www\x00" {
		t.Errorf("Lower: %q", got)
	}
}

// TestNoAllocations: reading a query and writing its answer in place
// allocate nothing.
func TestNoAllocations(t *testing.T) {
	query := AppendQuery(nil, 1, wire(t, "www.example.test"), TypeA, 1232)
	buf := make([]byte, 1500)
	recs := []Record{{Type: TypeA, TTL: 1, Data: []byte{1, 2, 3, 4}}}
	var q Query
	n := testing.AllocsPerRun(1000, func() {
		copy(buf, query)
		if ParseQuery(buf[:len(query)], &q) != nil || WriteResponse(buf, &q, Response{Question: true, Answers: recs}) == 0 {
			t.Fatal("failed")
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per query", n)
	}
}
