package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
)

func TestRequired(t *testing.T) {
	t.Setenv(RequiredEnv, "")
	if Required() {
		t.Fatal("Required with the variable empty")
	}
	t.Setenv(RequiredEnv, "1")
	if !Required() {
		t.Fatal("not Required with the variable set")
	}
}

// fakeTB records what CannotRun does without ending the real test.
type fakeTB struct {
	testing.TB
	failed, skipped bool
}

func (f *fakeTB) Helper()               {}
func (f *fakeTB) Fatalf(string, ...any) { f.failed = true }
func (f *fakeTB) Skipf(string, ...any)  { f.skipped = true }

func TestCannotRun(t *testing.T) {
	for _, tc := range []struct {
		env        string
		fail, skip bool
	}{{"", false, true}, {"1", true, false}} {
		t.Setenv(RequiredEnv, tc.env)
		f := &fakeTB{TB: t}
		CannotRun(f, "no %s", "thing")
		if f.failed != tc.fail || f.skipped != tc.skip {
			t.Errorf("env %q: failed=%v skipped=%v", tc.env, f.failed, f.skipped)
		}
	}
}

func TestBPFAllocatorBlocked(t *testing.T) {
	proc := t.TempDir()
	task := func(pid, tid int, state byte, wchan string) {
		dir := filepath.Join(proc, strconv.Itoa(pid), "task", strconv.Itoa(tid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "wchan"), []byte(wchan), 0o644)
		os.WriteFile(filepath.Join(dir, "stat"), []byte(fmt.Sprintf("%d (kworker/0:1 (x)) %c 2 0 0", tid, state)), 0o644)
	}
	task(9, 9, 'D', "bpf_prog_pack_free")
	task(11, 11, 'D', "bpf_prog_pack_free")
	task(20, 21, 'D', "bpf_prog_pack_alloc")
	task(30, 30, 'S', "bpf_prog_pack_free") // asleep, but not stuck
	task(40, 40, 'D', "flush_work")
	if got := bpfAllocatorBlocked(proc); got != 3 {
		t.Fatalf("counted %d blocked tasks, want 3", got)
	}
	if got := bpfAllocatorBlocked(t.TempDir()); got != 0 {
		t.Fatalf("empty /proc: %d", got)
	}
}

// TestLoops: every step runs until Stop, and none runs after it returns.
func TestLoops(t *testing.T) {
	var l Loops
	var a, b, after atomic.Int64
	var stopped atomic.Bool
	for _, n := range []*atomic.Int64{&a, &b} {
		l.Go(func() {
			if stopped.Load() {
				after.Add(1)
			}
			n.Add(1)
		})
	}
	for a.Load() == 0 || b.Load() == 0 {
		runtime.Gosched()
	}
	l.Stop()
	stopped.Store(true)
	na, nb := a.Load(), b.Load()
	l.Stop()
	if a.Load() != na || b.Load() != nb || after.Load() != 0 {
		t.Fatalf("a step ran after Stop returned")
	}
}
