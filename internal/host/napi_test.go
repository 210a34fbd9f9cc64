package host

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func wantNAPI(t *testing.T, sysRoot, ifname string, deferIRQs int, flush time.Duration) {
	t.Helper()
	if err := checkNAPI(sysRoot, ifname, deferIRQs, flush); err != nil {
		t.Fatal(err)
	}
}

// checkNAPI is wantNAPI for code running off the test goroutine (inside
// InNetnsSysfs), where t.Fatal must not be called.
func checkNAPI(sysRoot, ifname string, deferIRQs int, flush time.Duration) error {
	d, f, err := ReadNAPI(sysRoot, ifname)
	if err != nil {
		return fmt.Errorf("ReadNAPI %s: %w", ifname, err)
	}
	if d != deferIRQs || f != flush {
		return fmt.Errorf("%s: napi_defer_hard_irqs=%d gro_flush_timeout=%v; want %d and %v", ifname, d, f, deferIRQs, flush)
	}
	return nil
}

// TestTuneNAPIFake: values before, while held and after Restore, on a fake
// tree, with the journal's account of it.
func TestTuneNAPIFake(t *testing.T) {
	root := fakeTree(t, "veth.txt")
	sys := filepath.Join(root, "sys")
	j := Journal{RunDir: t.TempDir()}
	restoreOnCleanup(t, &j)
	wantNAPI(t, sys, "veth0", 0, 0)
	if err := TuneNAPI(&j, sys, "veth0", 2, 20*time.Microsecond); err != nil {
		t.Fatal(err)
	}
	wantNAPI(t, sys, "veth0", 2, 20*time.Microsecond)
	got := fmt.Sprint(j.Changes())
	if want := "[napi_defer_hard_irqs on veth0: 0 -> 2 gro_flush_timeout on veth0: 0 -> 20000]"; got != want {
		t.Fatalf("Changes = %s\nwant      %s", got, want)
	}
	if err := j.Restore(); err != nil {
		t.Fatal(err)
	}
	wantNAPI(t, sys, "veth0", 0, 0)
	if heldCount() != 0 {
		t.Fatalf("registry holds %d after Restore", heldCount())
	}
}

// TestTuneNAPIRefcount: two fleets on one interface share the values; a
// third asking for others is refused without touching anything, also when
// only its second value differs; the last release restores.
func TestTuneNAPIRefcount(t *testing.T) {
	root := fakeTree(t, "veth.txt")
	sys := filepath.Join(root, "sys")
	d := t.TempDir()
	j1, j2, j3 := Journal{RunDir: d}, Journal{RunDir: d}, Journal{RunDir: d}
	for _, j := range []*Journal{&j1, &j2, &j3} {
		restoreOnCleanup(t, j)
	}
	if err := TuneNAPI(&j1, sys, "veth0", 2, 20*time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if err := TuneNAPI(&j2, sys, "veth0", 2, 20*time.Microsecond); err != nil {
		t.Fatalf("second fleet with the same values: %v", err)
	}
	err := TuneNAPI(&j3, sys, "veth0", 2, 200*time.Microsecond)
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "gro_flush_timeout on veth0 is 20000") {
		t.Fatalf("third fleet with another flush: %v; want ErrConflict", err)
	}
	if len(j3.Changes()) != 0 {
		t.Fatalf("the refused fleet still holds %v (its defer reference was not rolled back)", j3.Changes())
	}
	if err := TuneNAPI(&j3, sys, "veth0", 10, 20*time.Microsecond); !errors.Is(err, ErrConflict) {
		t.Fatalf("third fleet with another defer: %v; want ErrConflict", err)
	}
	wantNAPI(t, sys, "veth0", 2, 20*time.Microsecond)
	if err := j1.Restore(); err != nil {
		t.Fatal(err)
	}
	wantNAPI(t, sys, "veth0", 2, 20*time.Microsecond)
	if err := j2.Restore(); err != nil {
		t.Fatal(err)
	}
	wantNAPI(t, sys, "veth0", 0, 0)
}

// TestTuneNAPISecondWriteFails: when gro_flush_timeout cannot be written,
// napi_defer_hard_irqs is rolled back and nothing stays held.
func TestTuneNAPISecondWriteFails(t *testing.T) {
	root := fakeTree(t, "veth.txt")
	sys := filepath.Join(root, "sys")
	failFlushWrites(t)
	j := Journal{RunDir: t.TempDir()}
	restoreOnCleanup(t, &j)
	err := TuneNAPI(&j, sys, "veth0", 2, 20*time.Microsecond)
	if err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("TuneNAPI = %v; want the injected failure", err)
	}
	wantNAPI(t, sys, "veth0", 0, 0)
	if len(j.Changes()) != 0 || heldCount() != 0 {
		t.Fatalf("after rollback: changes %v, registry %d", j.Changes(), heldCount())
	}
}

// failFlushWrites makes every write of a gro_flush_timeout value fail (a
// restore of "0" included only when asked).
func failFlushWrites(t *testing.T) {
	t.Helper()
	writeFault = func(path, value string) error {
		if filepath.Base(path) == FlushTimeoutFile && value != "0" {
			return errors.New("injected write failure")
		}
		return nil
	}
	t.Cleanup(func() { writeFault = nil })
}

// TestTuneNAPIUnavailable: missing files, a missing interface and bad
// arguments are reported, never a crash, and hold nothing.
func TestTuneNAPIUnavailable(t *testing.T) {
	root := fakeTree(t, "veth.txt")
	sys := filepath.Join(root, "sys")
	j := Journal{RunDir: t.TempDir()}
	restoreOnCleanup(t, &j)
	tests := []struct {
		ifname string
		reason string
	}{
		{"nonapi0", "no such setting here"},
		{"absent0", "the interface is not in"},
	}
	for _, tt := range tests {
		err := TuneNAPI(&j, sys, tt.ifname, 2, time.Microsecond)
		var u *UnavailableError
		if !errors.As(err, &u) || !errors.Is(err, ErrUnavailable) || !strings.Contains(u.Reason, tt.reason) {
			t.Errorf("%s: %v; want an *UnavailableError saying %q", tt.ifname, err, tt.reason)
		}
	}
	tooMany := int64(math.MaxInt32) + 1 // wraps to negative where int is 32 bits: refused either way
	for _, bad := range []struct {
		ifname string
		d      int
		f      time.Duration
	}{{"../x", 1, 1}, {"", 1, 1}, {"veth0", -1, 1}, {"veth0", 1, -1}, {"veth0", int(tooMany), 1}} {
		if err := TuneNAPI(&j, sys, bad.ifname, bad.d, bad.f); err == nil || errors.Is(err, ErrUnavailable) {
			t.Errorf("TuneNAPI(%q, %d, %v) = %v; want an argument error", bad.ifname, bad.d, bad.f, err)
		}
	}
	if len(j.Changes()) != 0 || heldCount() != 0 {
		t.Fatalf("refusals hold %v (%d)", j.Changes(), heldCount())
	}
}

// TestTuneNAPISeparateRoots: the same interface name under two roots is two
// settings.
func TestTuneNAPISeparateRoots(t *testing.T) {
	a := filepath.Join(fakeTree(t, "veth.txt"), "sys")
	b := filepath.Join(fakeTree(t, "veth.txt"), "sys")
	j := Journal{RunDir: t.TempDir()}
	restoreOnCleanup(t, &j)
	if err := TuneNAPI(&j, a, "veth0", 2, time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if err := TuneNAPI(&j, b, "veth0", 3, 2*time.Microsecond); err != nil {
		t.Fatalf("a second root conflicted with the first: %v", err)
	}
	wantNAPI(t, a, "veth0", 2, time.Microsecond)
	wantNAPI(t, b, "veth0", 3, 2*time.Microsecond)
}
