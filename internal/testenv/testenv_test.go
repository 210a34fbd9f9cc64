package testenv

import "testing"

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
