package host

import (
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// ErrUnavailable marks a setting this host cannot change: the file or flag
// does not exist, sysfs is read-only, permission is missing, the driver's
// interrupts are not recognised. It is a reason to show in Info and go on
// untuned, never a reason to fail Open. Errors wrapping it are
// *UnavailableError.
var ErrUnavailable = errors.New("not available on this host")

// ErrConflict is wrapped by the error returned when another journal in this
// process already holds a setting at a different value. Nothing is changed.
var ErrConflict = errors.New("held at another value by another fleet in this process")

// UnavailableError says why a setting was left alone.
type UnavailableError struct {
	// What names the setting, as in Change.What.
	What string
	// Reason says why, in words for an Info line.
	Reason string
	// Err is the underlying error, if any.
	Err error
}

// Error returns "host: <what>: <reason>".
func (e *UnavailableError) Error() string {
	s := "host: " + e.What + ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrUnavailable and the underlying error.
func (e *UnavailableError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrUnavailable}
	}
	return []error{ErrUnavailable, e.Err}
}

func unavailable(what, reason string, err error) error {
	return &UnavailableError{What: what, Reason: reason, Err: err}
}

// Change is one setting a journal holds changed.
type Change struct {
	// What names the setting and where it is, as in
	// "napi_defer_hard_irqs on veth0".
	What string
	// From is the value found before the first fleet changed it.
	From string
	// To is the value in force while the journal holds it.
	To string
}

// String returns "<what>: <from> -> <to>".
func (c Change) String() string { return c.What + ": " + c.From + " -> " + c.To }

// Journal records the host settings one fleet changed, so they are put back
// in reverse order on Close or when Open fails halfway. The zero Journal is
// ready to use; its methods are safe from any goroutine.
//
// Settings are shared through a process-wide registry keyed by network
// namespace, filesystem root, interface and setting: the first journal to
// ask for a value saves the original and writes; a second asking for the
// same value only takes a reference, and one asking for another value is
// refused with ErrConflict; the last to let go writes the original back.
//
// The journal is kept on disk too, so a process killed with its settings
// changed does not leave them changed for good: before every write to the
// host the original value is recorded, durably, in a file of this process
// under RunDir/journal/ (see Recover), and the record goes when the
// original is written back. A setting whose original cannot be recorded is
// not changed: the acquiring call returns an *UnavailableError.
type Journal struct {
	// RunDir is the run directory the journal file is kept under; empty
	// means DefaultRunDir. Set it before the first use.
	RunDir string

	mu    sync.Mutex
	steps []*step
}

// step is one reference a journal holds.
type step struct {
	change Change
	entry  *entry
}

// key identifies one setting on the host.
type key struct {
	// kind says how the setting is reached: kindSysfs, kindIRQ,
	// kindPrivFlag (a test's own kind for in-memory settings).
	kind string
	// netns is the inode of the network namespace the setting belongs to,
	// 0 for host-wide settings such as interrupt affinity.
	netns uint64
	// root is the filesystem root the setting is reached through ("/sys",
	// "/proc", or a fake tree in tests; "ethtool" for ioctls). Two roots
	// are two hosts as far as the registry is concerned.
	root string
	// iface is the interface (or "irq N").
	iface string
	// ifindex is the interface index the setting was found on, 0 when
	// not known; a recovery leaves alone an interface of the same name
	// with another index.
	ifindex int
	// setting names the file or flag.
	setting string
}

// record is the journal file record of the setting k names.
func (k key) record() record {
	return record{Kind: k.kind, Netns: k.netns, Root: k.root, Iface: k.iface, Ifindex: k.ifindex, Setting: k.setting}
}

// key is the registry key of the setting r names.
func (r record) key() key {
	return key{kind: r.Kind, netns: r.Netns, root: r.Root, iface: r.Iface, ifindex: r.Ifindex, setting: r.Setting}
}

// handle reaches one setting: it stays open while the setting is held, so
// the original can be written back from any goroutine, in whatever
// namespace the caller of Restore happens to be.
type handle interface {
	read() (string, error)
	write(v string) error
	close() error
}

// entry is a held setting.
type entry struct {
	key   key
	what  string
	orig  string
	value string
	refs  int
	h     handle
	// dir is the journal directory the entry is recorded in, seq its
	// place in the order of changes.
	dir string
	seq uint64
}

// registry is the process-wide table of held settings. seq numbers the
// entries in the order they were made.
var registry = struct {
	mu   sync.Mutex
	held map[key]*entry
	seq  uint64
}{held: map[key]*entry{}}

// acquire holds setting k at value for the journal. open is called only by
// the first acquirer. changed reports whether this call wrote anything.
func (j *Journal) acquire(k key, what, value string, open func() (handle, error)) (changed bool, err error) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if e := registry.held[k]; e != nil {
		if e.value != value {
			return false, fmt.Errorf("host: %s is %s for another fleet in this process, refusing %s: %w", what, e.value, value, ErrConflict)
		}
		e.refs++
		j.push(&step{change: Change{What: what, From: e.orig, To: value}, entry: e})
		return false, nil
	}
	h, err := open()
	if err != nil {
		return false, err
	}
	orig, err := h.read()
	if err != nil {
		return false, errors.Join(err, closeErr(what, h))
	}
	registry.seq++
	e := &entry{key: k, what: what, orig: orig, value: value, refs: 1, h: h, dir: journalDir(j.RunDir), seq: registry.seq}
	registry.held[k] = e
	if orig != value {
		// The original goes to disk before the host is touched.
		if err := saveJournal(e.dir); err != nil {
			delete(registry.held, k)
			return false, errors.Join(unavailable(what, "its original value cannot be recorded on disk, so a crash could not put it back", err), closeErr(what, h))
		}
		if err := h.write(value); err != nil {
			delete(registry.held, k)
			return false, errors.Join(err, saveJournal(e.dir), closeErr(what, h))
		}
	}
	j.push(&step{change: Change{What: what, From: orig, To: value}, entry: e})
	return orig != value, nil
}

func closeErr(what string, h handle) error {
	if err := h.close(); err != nil {
		return fmt.Errorf("host: close %s: %w", what, err)
	}
	return nil
}

func (j *Journal) push(s *step) {
	j.mu.Lock()
	j.steps = append(j.steps, s)
	j.mu.Unlock()
}

// release drops one reference; the last one writes the original back.
func release(s *step) error {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	e := s.entry
	e.refs--
	if e.refs > 0 {
		return nil
	}
	if registry.held[e.key] == e {
		delete(registry.held, e.key)
	}
	var err error
	if e.orig != e.value {
		// A device that went away took the setting with it: nothing to
		// put back.
		if werr := e.h.write(e.orig); werr != nil && !errors.Is(werr, unix.ENODEV) {
			err = fmt.Errorf("host: restore %s to %s: %w", e.what, e.orig, werr)
		}
		// The record goes even when the write failed: the error says so
		// now, and a later recovery would find a value it cannot judge.
		if serr := saveJournal(e.dir); serr != nil {
			err = errors.Join(err, fmt.Errorf("host: drop %s from the journal: %w", e.what, serr))
		}
	}
	return errors.Join(err, closeErr(e.what, e.h))
}

// Changes returns the settings the journal holds at a value other than the
// original, in the order they were made.
func (j *Journal) Changes() []Change {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []Change
	for _, s := range j.steps {
		if s.change.From != s.change.To {
			out = append(out, s.change)
		}
	}
	return out
}

// Restore lets go of every setting the journal holds, newest first. Every
// step is attempted even when one fails, and the failures are joined. A
// setting another journal still holds stays as it is until that one lets
// go too. Restore is idempotent, and the journal may be used again after it.
func (j *Journal) Restore() error {
	return j.rollback(0)
}

// mark returns a position to roll back to.
func (j *Journal) mark() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.steps)
}

// rollback releases, newest first, every step after position n.
func (j *Journal) rollback(n int) error {
	j.mu.Lock()
	if n > len(j.steps) {
		n = len(j.steps)
	}
	steps := append([]*step(nil), j.steps[n:]...)
	clear(j.steps[n:])
	j.steps = j.steps[:n]
	j.mu.Unlock()
	var errs []error
	for i := len(steps) - 1; i >= 0; i-- {
		if err := release(steps[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
