package dnsmsg

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// FuzzParseQuery: no message makes ParseQuery panic or read past what it
// was given; a name it returns is well formed; and the response written for
// whatever it read, in place over the message, parses with dnsmessage, with
// the query's ID and, when there is one, its question.
func FuzzParseQuery(f *testing.F) {
	seeds, _ := filepath.Glob("../testdata/*.query")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err == nil {
			f.Add(b)
		}
	}
	f.Add(AppendQuery(nil, 1, []byte("\x03www\x07example\x04test\x00"), TypeA, 1232))
	f.Add([]byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 0x0c, 0, 1, 0, 1})
	f.Fuzz(func(t *testing.T, msg []byte) {
		// A copy with no room after it: a read past the end would
		// panic here.
		in := bytes.Clone(msg)
		var q Query
		err := ParseQuery(in[:len(in):len(in)], &q)
		if err == ErrShort || err == ErrResponse {
			return
		}
		if err == nil {
			n := q.Name()
			if len(n) == 0 || len(n) > MaxName || n[len(n)-1] != 0 {
				t.Fatalf("name %q", n)
			}
			for i := 0; i < len(n)-1; i += 1 + int(n[i]) {
				if n[i] == 0 || n[i] > MaxLabel {
					t.Fatalf("label length %d in %q", n[i], n)
				}
			}
		}
		r := Response{RCode: RCodeFormErr}
		if err == nil {
			r = Response{RCode: RCodeNoError, Question: true, Authoritative: true,
				Answers: []Record{{Type: TypeA, TTL: 1, Data: []byte{10, 0, 0, 1}}}}
		}
		out := make([]byte, max(len(in), 1500))
		copy(out, in)
		m := WriteResponse(out, &q, r)
		if m == 0 {
			t.Fatalf("no response written for %x (%v)", msg, err)
		}
		if err == nil && dotInLabel(q.Name()) {
			// A label may hold any byte (RFC 2181 11), a dot too, but
			// dnsmessage spells names with dots and refuses those.
			return
		}
		var p dnsmessage.Parser
		h, perr := p.Start(out[:m])
		if perr != nil {
			t.Fatalf("response %x does not parse: %v", out[:m], perr)
		}
		qs, perr := p.AllQuestions()
		if perr != nil || h.ID != q.ID || !h.Response {
			t.Fatalf("response %x: %+v %v", out[:m], h, perr)
		}
		if err == nil && (len(qs) != 1 || uint16(qs[0].Type) != q.QType) {
			t.Fatalf("question %+v, want type %d", qs, q.QType)
		}
	})
}

// dotInLabel reports whether a wire-format name has a '.' byte in a label.
func dotInLabel(n []byte) bool {
	for i := 0; i < len(n) && n[i] != 0; i += 1 + int(n[i]) {
		if bytes.IndexByte(n[i+1:min(i+1+int(n[i]), len(n))], '.') >= 0 {
			return true
		}
	}
	return false
}
