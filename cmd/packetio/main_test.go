package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// deadJournal writes the journal of a process that has exited, which set
// napi_defer_hard_irqs of a fake interface from 0 to 2, and returns the
// run directory, the setting file and the dead PID.
func deadJournal(t *testing.T) (run, setting string, pid int) {
	t.Helper()
	root := t.TempDir()
	setting = filepath.Join(root, "class/net/veth0/napi_defer_hard_irqs")
	if err := os.MkdirAll(filepath.Dir(setting), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(setting, []byte("2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid = cmd.Process.Pid
	fi, err := os.Stat("/proc/self/ns/pid")
	if err != nil {
		t.Fatal(err)
	}
	pidns := fi.Sys().(*syscall.Stat_t).Ino
	run = t.TempDir()
	dir := filepath.Join(run, "journal")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	body := fmt.Sprintf(`{"version":1,"pid":%d,"start":1,"pidns":%d,"boot":"","settings":[
		{"kind":"sysfs","netns":1,"root":%q,"iface":"veth0","setting":"napi_defer_hard_irqs","orig":"0","value":"2"}]}`, pid, pidns, root)
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d-1.json", pid)), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return run, setting, pid
}

func TestRestore(t *testing.T) {
	dir, setting, pid := deadJournal(t)
	var out, errOut bytes.Buffer
	if st := run([]string{"restore", "-dir", dir, "-n"}, &out, &errOut); st != 0 {
		t.Fatalf("restore -n: status %d, %s", st, errOut.String())
	}
	want := fmt.Sprintf("(dry run, nothing done) would restore napi_defer_hard_irqs on veth0 from 2 to 0, left by dead process %d\n", pid)
	if out.String() != want {
		t.Fatalf("restore -n printed %q, want %q", out.String(), want)
	}
	if b, _ := os.ReadFile(setting); strings.TrimSpace(string(b)) != "2" {
		t.Fatalf("restore -n changed the setting to %s", b)
	}
	out.Reset()
	if st := run([]string{"restore", "-dir", dir}, &out, &errOut); st != 0 {
		t.Fatalf("restore: status %d, %s", st, errOut.String())
	}
	if want := fmt.Sprintf("restored napi_defer_hard_irqs on veth0 to 0, left by dead process %d\n", pid); out.String() != want {
		t.Fatalf("restore printed %q, want %q", out.String(), want)
	}
	if b, _ := os.ReadFile(setting); strings.TrimSpace(string(b)) != "0" {
		t.Fatalf("setting %s after restore, want 0", b)
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "journal")); len(ents) != 0 {
		t.Fatalf("%d files left in the journal directory", len(ents))
	}
}

func TestRestoreStatus(t *testing.T) {
	bad := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bad, "journal"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "journal", "1-2.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want int
	}{
		{nil, 2},
		{[]string{"restor"}, 2},
		{[]string{"restore", "-x"}, 2},
		{[]string{"restore", "extra"}, 2},
		{[]string{"restore", "-dir", t.TempDir()}, 0}, // nothing to do
		{[]string{"restore", "-dir", bad}, 1},         // an unreadable journal is a failure
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		if st := run(tt.args, &out, &errOut); st != tt.want {
			t.Errorf("%q: status %d, want %d (%s%s)", tt.args, st, tt.want, out.String(), errOut.String())
		}
	}
}
