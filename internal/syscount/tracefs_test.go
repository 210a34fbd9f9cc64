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
// decimal number it spells (surrounding space allowed) or an error naming
// the file; a number that fits 64 bits is never refused.
func FuzzTracepointID(f *testing.F) {
	for _, seed := range []string{"443\n", "0", " 17 ", "", "sys_enter", "-1", "+5", "18446744073709551616", "0018", "12\x0034"} {
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
		num := strings.TrimSpace(content)
		digits := num != "" && strings.Trim(num, "0123456789") == ""
		significant := strings.TrimLeft(num, "0")
		switch {
		case err != nil && !strings.Contains(err.Error(), path):
			t.Errorf("id file %q: %v, an error not naming %s", content, err, path)
		case err != nil && digits && len(significant) < 20: // fewer than 20 digits always fit
			t.Errorf("id file %q: %v, a number refused", content, err)
		case err == nil && (!digits || significant != strings.TrimLeft(strconv.FormatUint(id, 10), "0")):
			t.Errorf("id file %q: %d, not the number it spells", content, id)
		}
	})
}
