package host

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// memSetting is an in-memory setting that logs every write.
type memSetting struct {
	name     string
	value    string
	failNext error // returned by the next write, once
	log      *[]string
	mu       *sync.Mutex
	closed   bool
}

func (m *memSetting) read() (string, error) { return m.value, nil }

func (m *memSetting) write(v string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	*m.log = append(*m.log, m.name+"="+v)
	if err := m.failNext; err != nil {
		m.failNext = nil
		return err
	}
	m.value = v
	return nil
}

func (m *memSetting) close() error { m.closed = true; return nil }

func memKey(name string) key {
	return key{kind: "mem", root: "mem:" + name, iface: "test", setting: name}
}

func acquireMem(t *testing.T, j *Journal, m *memSetting, value string) bool {
	t.Helper()
	changed, err := j.acquire(memKey(m.name), m.name+" on test", value, func() (handle, error) { return m, nil })
	if err != nil {
		t.Fatalf("acquire %s=%s: %v", m.name, value, err)
	}
	return changed
}

func newMem(log *[]string, mu *sync.Mutex, name, value string) *memSetting {
	return &memSetting{name: name, value: value, log: log, mu: mu}
}

func TestChangeString(t *testing.T) {
	c := Change{What: "napi_defer_hard_irqs on veth0", From: "0", To: "2"}
	if got, want := c.String(), "napi_defer_hard_irqs on veth0: 0 -> 2"; got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
}

// TestRestoreReverseOrder: three settings are put back newest first, a
// failing step does not stop the others, its error is in the joined result,
// and a second Restore does nothing.
func TestRestoreReverseOrder(t *testing.T) {
	var log []string
	var mu sync.Mutex
	a, b, c := newMem(&log, &mu, "a", "1"), newMem(&log, &mu, "b", "1"), newMem(&log, &mu, "c", "1")
	j := Journal{RunDir: t.TempDir()}
	restoreOnCleanup(t, &j)
	for _, m := range []*memSetting{a, b, c} {
		if !acquireMem(t, &j, m, "9") {
			t.Fatalf("%s: the first acquirer did not write", m.name)
		}
	}
	if got := fmt.Sprint(j.Changes()); got != "[a on test: 1 -> 9 b on test: 1 -> 9 c on test: 1 -> 9]" {
		t.Fatalf("Changes = %s", got)
	}
	log = nil
	b.failNext = errors.New("injected")
	err := j.Restore()
	if err == nil || !strings.Contains(err.Error(), "restore b on test to 1") || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("Restore = %v; want the failure of b, with context", err)
	}
	if got, want := strings.Join(log, " "), "c=1 b=1 a=1"; got != want {
		t.Fatalf("restore writes %q, want %q (newest first, every step attempted)", got, want)
	}
	if a.value != "1" || c.value != "1" || !a.closed || !b.closed || !c.closed {
		t.Fatalf("after Restore a=%s c=%s, closed %v %v %v", a.value, c.value, a.closed, b.closed, c.closed)
	}
	log = nil
	if err := j.Restore(); err != nil || len(log) != 0 {
		t.Fatalf("second Restore = %v with writes %v; want nil and none", err, log)
	}
	if len(j.Changes()) != 0 {
		t.Fatalf("Changes after Restore = %v", j.Changes())
	}
	if n := heldCount(); n != 0 {
		t.Fatalf("registry still holds %d settings", n)
	}
}

// TestRefcountTwoJournals: the first journal saves and writes, a second
// asking for the same value only takes a reference, one asking for another
// value is refused and changes nothing, and only the last release restores.
func TestRefcountTwoJournals(t *testing.T) {
	var log []string
	var mu sync.Mutex
	m := newMem(&log, &mu, "n", "0")
	d := t.TempDir()
	j1, j2, j3 := Journal{RunDir: d}, Journal{RunDir: d}, Journal{RunDir: d}
	restoreOnCleanup(t, &j1)
	restoreOnCleanup(t, &j2)
	restoreOnCleanup(t, &j3)
	if !acquireMem(t, &j1, m, "2") {
		t.Fatal("first acquire did not write")
	}
	if acquireMem(t, &j2, m, "2") {
		t.Fatal("second acquire of the same value wrote again")
	}
	_, err := j3.acquire(memKey("n"), "n on test", "5", func() (handle, error) {
		t.Fatal("a refused acquire opened the setting")
		return nil, nil
	})
	if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "n on test is 2") {
		t.Fatalf("conflicting acquire = %v; want ErrConflict naming the held value", err)
	}
	if len(j3.Changes()) != 0 {
		t.Fatalf("refused journal holds %v", j3.Changes())
	}
	if got := fmt.Sprint(j2.Changes()); got != "[n on test: 0 -> 2]" {
		t.Fatalf("second journal Changes = %s; want the original as From", got)
	}
	if err := j1.Restore(); err != nil {
		t.Fatal(err)
	}
	if m.value != "2" {
		t.Fatalf("value %s after the first of two released; want it still 2", m.value)
	}
	if err := j2.Restore(); err != nil {
		t.Fatal(err)
	}
	if m.value != "0" || !m.closed {
		t.Fatalf("value %s (closed %v) after the last release; want 0, closed", m.value, m.closed)
	}
	if got, want := strings.Join(log, " "), "n=2 n=0"; got != want {
		t.Fatalf("writes %q, want %q", got, want)
	}
}

// TestAcquireSameValueWritesNothing: a setting already at the asked value
// is held (so a second fleet shares it) but never written.
func TestAcquireSameValueWritesNothing(t *testing.T) {
	var log []string
	var mu sync.Mutex
	m := newMem(&log, &mu, "same", "2")
	j := Journal{RunDir: t.TempDir()}
	if acquireMem(t, &j, m, "2") {
		t.Fatal("acquire of the current value reported a change")
	}
	if len(j.Changes()) != 0 {
		t.Fatalf("Changes = %v; want none", j.Changes())
	}
	if err := j.Restore(); err != nil {
		t.Fatal(err)
	}
	if len(log) != 0 {
		t.Fatalf("writes %v; want none", log)
	}
}

// TestAcquireWriteFails: a first write that fails leaves nothing held.
func TestAcquireWriteFails(t *testing.T) {
	var log []string
	var mu sync.Mutex
	m := newMem(&log, &mu, "wf", "0")
	m.failNext = errors.New("injected")
	j := Journal{RunDir: t.TempDir()}
	if _, err := j.acquire(memKey("wf"), "wf on test", "1", func() (handle, error) { return m, nil }); err == nil {
		t.Fatal("acquire succeeded past a failed write")
	}
	if !m.closed || heldCount() != 0 || len(j.Changes()) != 0 {
		t.Fatalf("after a failed write: closed %v, registry %d, changes %v", m.closed, heldCount(), j.Changes())
	}
}

// TestRollback: rolling back to a mark releases only what came after it.
func TestRollback(t *testing.T) {
	var log []string
	var mu sync.Mutex
	a, b, c := newMem(&log, &mu, "ra", "0"), newMem(&log, &mu, "rb", "0"), newMem(&log, &mu, "rc", "0")
	j := Journal{RunDir: t.TempDir()}
	restoreOnCleanup(t, &j)
	acquireMem(t, &j, a, "1")
	mark := j.mark()
	acquireMem(t, &j, b, "1")
	acquireMem(t, &j, c, "1")
	if err := j.rollback(mark); err != nil {
		t.Fatal(err)
	}
	if a.value != "1" || b.value != "0" || c.value != "0" {
		t.Fatalf("after rollback a=%s b=%s c=%s; want 1 0 0", a.value, b.value, c.value)
	}
	if got := fmt.Sprint(j.Changes()); got != "[ra on test: 0 -> 1]" {
		t.Fatalf("Changes = %s", got)
	}
}

// TestJournalConcurrent exercises the registry from many goroutines under
// the race detector: every journal shares one value, and the last release
// restores it.
func TestJournalConcurrent(t *testing.T) {
	var log []string
	var mu sync.Mutex
	m := newMem(&log, &mu, "conc", "0")
	var wg sync.WaitGroup
	journals := make([]Journal, 16)
	d := t.TempDir()
	for i := range journals {
		journals[i].RunDir = d
	}
	errs := make(chan error, len(journals))
	for i := range journals {
		wg.Add(1)
		go func(j *Journal) {
			defer wg.Done()
			if _, err := j.acquire(memKey("conc"), "conc on test", "3", func() (handle, error) { return m, nil }); err != nil {
				errs <- err
				return
			}
			_ = j.Changes()
			errs <- j.Restore()
		}(&journals[i])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if m.value != "0" || heldCount() != 0 {
		t.Fatalf("after every journal let go: value %s, registry %d", m.value, heldCount())
	}
}

func TestUnavailableError(t *testing.T) {
	inner := errors.New("inner")
	err := fmt.Errorf("wrapped: %w", unavailable("x on y", "because", inner))
	var u *UnavailableError
	if !errors.As(err, &u) || !errors.Is(err, ErrUnavailable) || !errors.Is(err, inner) {
		t.Fatalf("%v does not match *UnavailableError, ErrUnavailable and its cause", err)
	}
	if u.Reason != "because" || u.What != "x on y" {
		t.Fatalf("fields %+v", u)
	}
	if got := unavailable("x", "r", nil).Error(); got != "host: x: r" {
		t.Fatalf("Error = %q", got)
	}
}
