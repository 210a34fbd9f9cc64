package syscount

import (
	"os"
	"path/filepath"
	"strconv"
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

// FuzzTracepointID: whatever the id file holds, tracepointID returns the
// number it spells (surrounding space allowed) or an error naming the
// file, never another number.
func FuzzTracepointID(f *testing.F) {
	for _, seed := range []string{"443\n", "0", " 17 ", "", "sys_enter", "-1", "18446744073709551616", "12\x0034"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, content string) {
		root := t.TempDir()
		dir := filepath.Join(root, "events", "raw_syscalls", "sys_enter")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "id")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		id, err := tracepointID([]string{root}, "raw_syscalls", "sys_enter")
		want, werr := strconv.ParseUint(strings.TrimSpace(content), 10, 64)
		switch {
		case werr == nil && (err != nil || id != want):
			t.Errorf("id file %q: %d, %v; want %d", content, id, err, want)
		case werr != nil && (err == nil || !strings.Contains(err.Error(), path)):
			t.Errorf("id file %q: %d, %v; want an error naming %s", content, id, err, path)
		}
	})
}
