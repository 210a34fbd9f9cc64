package bed

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio/internal/netns"
)

// TestRawAcrossAPair: a frame sent on one end's raw socket arrives on the
// other's byte for byte, and a raw socket does not hand back the frames it
// sent itself.
func TestRawAcrossAPair(t *testing.T) {
	p := netns.New(t)
	a, err := OpenRaw(Of(p.A))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenRaw(Of(p.B))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	frame := make([]byte, 100)
	copy(frame, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 1, 0x88, 0xb5, 'b', 'e', 'd'})
	if err := b.Send(frame); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2048)
	for {
		n, err := a.Recv(buf, 2*time.Second)
		if err != nil || n == 0 {
			t.Fatalf("nothing arrived: %d, %v", n, err)
		}
		if bytes.Equal(buf[:n], frame) {
			break
		}
	}
	if n, err := b.Recv(buf, 200*time.Millisecond); err != nil || n != 0 {
		t.Fatalf("the sender read back %d bytes, %v", n, err)
	}
	if err := a.Close(); err != nil || a.Close() != nil {
		t.Fatal("Close is not idempotent")
	}
}

// TestNamedPortRunsInPlace: a named port's Do runs in the caller's
// namespace, and an own pair's ends are reported as such.
func TestNamedPortRunsInPlace(t *testing.T) {
	ran := false
	if err := Named("lo").Do(func() error { ran = true; return nil }); err != nil || !ran {
		t.Fatal("Do did not run")
	}
	p := netns.New(t)
	if got := Of(p.A); got.Name != p.A.Link || got.Host != p.A {
		t.Fatalf("%+v", got)
	}
}

func TestAfterFirstLine(t *testing.T) {
	for _, tc := range []struct {
		writes []string
		want   string
	}{
		{[]string{"first\n", "second\n"}, "first\nMSG\nsecond\n"},
		{[]string{"fi", "rst\nsec", "ond\n"}, "first\nMSG\nsecond\n"},
		{[]string{"no newline"}, "no newline"},
	} {
		var b strings.Builder
		w := AfterFirstLine(&b, "MSG\n")
		for _, s := range tc.writes {
			if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
				t.Fatalf("Write(%q) = %d, %v", s, n, err)
			}
		}
		if b.String() != tc.want {
			t.Errorf("%q: wrote %q, want %q", tc.writes, b.String(), tc.want)
		}
	}
}
