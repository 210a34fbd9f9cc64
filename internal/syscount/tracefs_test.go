package syscount

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBadTracefs: without the tracepoint, or with an id that is not a
// number, the error says what is missing or names the file.
func TestBadTracefs(t *testing.T) {
	garbled := t.TempDir()
	dir := filepath.Join(garbled, "events", "raw_syscalls", "sys_enter")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "id"), []byte("sys_enter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		roots []string
		want  []string
	}{
		{"no tracefs", []string{t.TempDir()}, []string{"no tracepoint raw_syscalls:sys_enter", "tracefs"}},
		{"no roots", nil, []string{"no tracepoint raw_syscalls:sys_enter"}},
		{"id not a number", []string{garbled}, []string{filepath.Join(dir, "id"), "invalid syntax"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := forThread(tc.roots)
			if err == nil {
				c.Close()
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
