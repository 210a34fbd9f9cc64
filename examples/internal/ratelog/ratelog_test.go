package ratelog

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestLimiter: the first message is printed, the next ones within the
// interval are counted, and the count rides on the next printed line.
func TestLimiter(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf, time.Hour)
	for i := range 5 {
		l.Printf("error %d", i)
	}
	if got := buf.String(); got != "error 0\n" {
		t.Fatalf("printed %q", got)
	}
	if l.Suppressed() != 4 {
		t.Fatalf("suppressed %d, want 4", l.Suppressed())
	}
	l.Every = 0
	l.Printf("again")
	if !strings.Contains(buf.String(), "again (and 4 more since the last)") {
		t.Fatalf("printed %q", buf.String())
	}
}
