package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTree lays out testdata fixtures under a fresh temporary directory and
// returns it. A fixture is a list of entries:
//
//	-- path --            a file whose contents are the lines up to the next entry
//	-- path -> target     a symbolic link
//
// Lines before the first entry are comments. Building the tree at run time
// keeps symbolic links out of the repository.
func fakeTree(t *testing.T, fixtures ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, name := range fixtures {
		raw, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		var path string
		var body []string
		flush := func() {
			if path == "" {
				return
			}
			p := filepath.Join(root, path)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			text := strings.Join(body, "\n")
			if text != "" {
				text += "\n"
			}
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			path, body = "", nil
		}
		for _, line := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
			if strings.HasPrefix(line, "-- ") {
				flush()
				head := strings.TrimPrefix(line, "-- ")
				if from, to, ok := strings.Cut(head, " -> "); ok {
					p := filepath.Join(root, from)
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink(to, p); err != nil {
						t.Fatal(err)
					}
					continue
				}
				path = strings.TrimSuffix(head, " --")
				continue
			}
			if path != "" {
				body = append(body, line)
			}
		}
		flush()
	}
	return root
}

// readTrim reads a file of a fake tree.
func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// restoreOnCleanup makes sure a journal is restored even when the test
// fails half way, and that restoring reports no error.
func restoreOnCleanup(t *testing.T, j *Journal) {
	t.Helper()
	t.Cleanup(func() {
		if err := j.Restore(); err != nil {
			t.Errorf("cleanup restore: %v", err)
		}
	})
}

// heldCount returns how many settings the process registry holds.
func heldCount() int {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return len(registry.held)
}
