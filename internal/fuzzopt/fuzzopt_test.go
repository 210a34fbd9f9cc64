package fuzzopt

import "testing"

// TestInput: a named interface, selectors, both value widths, and short
// tails that end the input without reading past it.
func TestInput(t *testing.T) {
	in := New([]byte{0x83, 'a', 'b', 'c', 14, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 2})
	if got := in.Name("def"); got != "abc" {
		t.Fatalf("Name = %q, want abc", got)
	}
	if got := in.Kind(11); got != 3 {
		t.Fatalf("Kind(11) = %d, want 3", got)
	}
	if got := in.Int32(); got != 1 {
		t.Fatalf("Int32 = %d, want 1", got)
	}
	if got := in.Int64(); got != -1 {
		t.Fatalf("Int64 = %d, want -1", got)
	}
	if got := in.Int32(); got != 0 || !in.More() {
		t.Fatalf("Int32 on 2 bytes = %d (more %v), want 0 and the bytes kept", got, in.More())
	}
	if got := in.Int64(); got != 0 || in.More() {
		t.Fatalf("Int64 on 2 bytes = %d (more %v), want 0 and the input ended", got, in.More())
	}
	for _, tc := range []struct {
		b    []byte
		want string
	}{{nil, "def"}, {[]byte{0x05}, "def"}, {[]byte{0x9f, 'x'}, "x"}} {
		if got := New(tc.b).Name("def"); got != tc.want {
			t.Errorf("Name(% x) = %q, want %q", tc.b, got, tc.want)
		}
	}
	if New(nil).Kind(3) != 0 {
		t.Error("Kind on nothing is not 0")
	}
}
