package host

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// DefaultRunDir is where a Journal keeps its file when Journal.RunDir is
// empty: the files are in DefaultRunDir/journal/.
const DefaultRunDir = "/run/packetio"

// journalVersion is the version of the on-disk format this package writes
// and reads.
const journalVersion = 1

// maxJournalFile bounds what is read of one journal file.
const maxJournalFile = 1 << 20

// The kinds of setting a journal file records; each says how to reach the
// setting again from another process.
const (
	// kindSysfs is <root>/class/net/<iface>/<setting>, in network
	// namespace netns when root is /sys.
	kindSysfs = "sysfs"
	// kindIRQ is <root>/irq/<n>/smp_affinity_list, host-wide; iface is
	// "irq <n>".
	kindIRQ = "irq"
	// kindPrivFlag is a driver private flag of iface in network namespace
	// netns, through SIOCETHTOOL; setting is "priv-flag <name>".
	kindPrivFlag = "privflag"
)

// privFlagPrefix starts the setting name of a private flag.
const privFlagPrefix = "priv-flag "

// owner identifies a process across PID reuse: its PID, its start time
// (field 22 of /proc/<pid>/stat, in clock ticks after boot), the PID
// namespace the PID is counted in and the boot it ran in.
type owner struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
	PIDNS uint64 `json:"pidns"`
	Boot  string `json:"boot"`
}

// fileName is the journal file name of the owner: "<pid>-<start>.json".
func (o owner) fileName() string {
	return strconv.Itoa(o.PID) + "-" + strconv.FormatUint(o.Start, 10) + ".json"
}

// record is one setting in a journal file: where it is (the registry key),
// the value found before the owner changed it, and the value the owner
// wrote.
type record struct {
	Kind    string `json:"kind"`
	Netns   uint64 `json:"netns,omitempty"`
	Root    string `json:"root"`
	Iface   string `json:"iface"`
	Ifindex int    `json:"ifindex,omitempty"`
	Setting string `json:"setting"`
	Orig    string `json:"orig"`
	Value   string `json:"value"`
}

// what names the record's setting as a Change does.
func (r record) what() string {
	switch r.Kind {
	case kindIRQ:
		return r.Setting + " of " + r.Iface
	case kindPrivFlag:
		return "private flag " + strings.TrimPrefix(r.Setting, privFlagPrefix) + " on " + r.Iface
	}
	return r.Setting + " on " + r.Iface
}

// journalFile is the on-disk journal of one process.
type journalFile struct {
	Version int `json:"version"`
	owner
	// Settings are in the order they were changed, oldest first.
	Settings []record `json:"settings"`
}

// selfOwner identifies the calling process.
func selfOwner() (owner, error) {
	o, err := procOwner(os.Getpid())
	if err != nil {
		return owner{}, err
	}
	if o.PIDNS, err = nsInode("/proc/self/ns/pid"); err != nil {
		return owner{}, err
	}
	o.Boot, err = bootID()
	return o, err
}

// procOwner reads the start time of process pid, as this process's PID
// namespace numbers it. A process that does not exist gives an error
// matching os.ErrNotExist.
func procOwner(pid int) (owner, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return owner{}, err
	}
	start, err := statStart(string(b))
	if err != nil {
		return owner{}, fmt.Errorf("host: /proc/%d/stat: %w", pid, err)
	}
	return owner{PID: pid, Start: start}, nil
}

// statStart returns field 22 (starttime) of a /proc/<pid>/stat line. The
// command name, field 2, is in parentheses and may hold spaces and
// parentheses itself, so the fields are counted after the last ')'.
func statStart(stat string) (uint64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("no command name")
	}
	fields := strings.Fields(stat[i+1:]) // fields 3, 4, ...
	if len(fields) < 20 {
		return 0, fmt.Errorf("%d fields", len(fields)+2)
	}
	return strconv.ParseUint(fields[22-3], 10, 64)
}

// nsInode returns the inode of a namespace file.
func nsInode(path string) (uint64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("host: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("host: %s: no inode", path)
	}
	return st.Ino, nil
}

// bootID returns the kernel's identity of this boot.
func bootID() (string, error) {
	s, err := readFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("host: boot id: %w", err)
	}
	return s, nil
}

// journalDir is the directory of the journal files under a run directory.
func journalDir(runDir string) string {
	if runDir == "" {
		runDir = DefaultRunDir
	}
	return filepath.Join(runDir, "journal")
}

// saveJournal writes the journal file of this process in dir from the
// registry: every held setting recorded in dir whose value differs from its
// original, oldest first. With none, the file is removed. The file is
// replaced atomically and durably (temporary file, fsync, rename, fsync of
// the directory), so a crash leaves the old or the new journal, never half
// of one. The caller holds registry.mu.
func saveJournal(dir string) error {
	var held []*entry
	for _, e := range registry.held {
		if e.dir == dir && e.orig != e.value {
			held = append(held, e)
		}
	}
	slices.SortFunc(held, func(a, b *entry) int { return cmp.Compare(a.seq, b.seq) })
	self, err := selfOwner()
	if err != nil {
		return err
	}
	if len(held) == 0 {
		return removeDurably(dir, self.fileName())
	}
	jf := journalFile{Version: journalVersion, owner: self}
	for _, e := range held {
		r := e.key.record()
		r.Orig, r.Value = e.orig, e.value
		jf.Settings = append(jf.Settings, r)
	}
	return writeJournalFile(dir, jf)
}

// writeJournalFile replaces the journal file of jf's owner in dir.
func writeJournalFile(dir string, jf journalFile) error {
	b, err := json.MarshalIndent(jf, "", "\t")
	if err != nil {
		return fmt.Errorf("host: encode the journal: %w", err)
	}
	return writeDurably(dir, jf.fileName(), append(b, '\n'))
}

// writeDurably replaces dir/name with b: temporary file, fsync, rename,
// fsync of the directory. dir is made (0700) if missing.
func writeDurably(dir, name string, b []byte) error {
	tmp := filepath.Join(dir, "."+name+".tmp")
	var f *os.File
	// Another process may remove the directory, emptied, between our
	// MkdirAll and the create (removeDurably): make it again.
	for try := 0; ; try++ {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("host: journal directory: %w", err)
		}
		var err error
		f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrNotExist) || try == 3 {
			return fmt.Errorf("host: journal: %w", err)
		}
	}
	_, werr := f.Write(b)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("host: journal %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("host: journal: %w", err)
	}
	return syncDir(dir)
}

// removeDurably removes dir/name, if it is there, and syncs dir. The last
// file out takes the directory with it (and DefaultRunDir, when that is
// its parent and empty), so a host where every setting is back keeps
// nothing of packetio's.
func removeDurably(dir, name string) error {
	err := os.Remove(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("host: journal: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	removeEmpty(dir)
	return nil
}

// removeEmpty removes the journal directory if nothing is in it, and the
// default run directory above it likewise; a directory that is not empty
// (another process's journal) stays, which is the expected failure.
func removeEmpty(dir string) {
	if os.Remove(dir) != nil {
		return
	}
	if parent := filepath.Dir(dir); parent == DefaultRunDir {
		os.Remove(parent)
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("host: journal directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("host: sync journal directory %s: %w", dir, err)
	}
	return nil
}

// parseJournal decodes and checks a journal file. Every name and value it
// accepts is one recovery can act on without leaving the setting's
// directory: unknown fields, kinds and settings, names that are not
// interface names and values no kernel writes are refused.
func parseJournal(b []byte) (journalFile, error) {
	if len(b) > maxJournalFile {
		return journalFile{}, fmt.Errorf("journal file of %d bytes (at most %d)", len(b), maxJournalFile)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var jf journalFile
	if err := dec.Decode(&jf); err != nil {
		return journalFile{}, fmt.Errorf("journal file: %w", err)
	}
	if dec.More() {
		return journalFile{}, errors.New("journal file: data after the journal")
	}
	if jf.Version != journalVersion {
		return journalFile{}, fmt.Errorf("journal file: version %d (this build reads %d)", jf.Version, journalVersion)
	}
	if jf.PID <= 0 || jf.PID > 1<<22 || jf.Start == 0 {
		return journalFile{}, fmt.Errorf("journal file: owner pid %d start %d", jf.PID, jf.Start)
	}
	if len(jf.Boot) > 64 || strings.ContainsFunc(jf.Boot, badValueRune) {
		return journalFile{}, fmt.Errorf("journal file: boot id %q", jf.Boot)
	}
	seen := map[key]bool{}
	for i, r := range jf.Settings {
		if err := checkRecord(r); err != nil {
			return journalFile{}, fmt.Errorf("journal file: setting %d: %w", i, err)
		}
		k := r.key()
		if seen[k] {
			return journalFile{}, fmt.Errorf("journal file: setting %d: %s recorded twice", i, r.what())
		}
		seen[k] = true
	}
	return jf, nil
}

func badValueRune(r rune) bool { return r < ' ' || r > '~' }

// checkRecord validates one record for its kind.
func checkRecord(r record) error {
	if r.Ifindex < 0 {
		return fmt.Errorf("ifindex %d", r.Ifindex)
	}
	if r.Orig == r.Value {
		return fmt.Errorf("%s: original and value are both %q", r.what(), r.Value)
	}
	var valueOK func(string) bool
	switch r.Kind {
	case kindSysfs:
		if !safeName(r.Iface) || (r.Setting != DeferIRQsFile && r.Setting != FlushTimeoutFile) {
			return fmt.Errorf("sysfs setting %q of interface %q", r.Setting, r.Iface)
		}
		if !cleanAbs(r.Root) {
			return fmt.Errorf("sysfs root %q", r.Root)
		}
		valueOK = decimal
	case kindIRQ:
		n, ok := strings.CutPrefix(r.Iface, "irq ")
		if !ok || !decimal(n) || r.Setting != "smp_affinity_list" || r.Netns != 0 || r.Ifindex != 0 {
			return fmt.Errorf("interrupt setting %q of %q", r.Setting, r.Iface)
		}
		if !cleanAbs(r.Root) {
			return fmt.Errorf("procfs root %q", r.Root)
		}
		valueOK = cpuListText
	case kindPrivFlag:
		flag, ok := strings.CutPrefix(r.Setting, privFlagPrefix)
		if !ok || flag == "" || len(flag) >= ethGStringLen || strings.ContainsFunc(flag, badValueRune) || !safeName(r.Iface) || r.Root != "ethtool" {
			return fmt.Errorf("private flag setting %q of %q", r.Setting, r.Iface)
		}
		valueOK = func(s string) bool { return s == "on" || s == "off" }
	default:
		return fmt.Errorf("unknown kind %q", r.Kind)
	}
	if !valueOK(r.Orig) || !valueOK(r.Value) {
		return fmt.Errorf("%s: values %q and %q", r.what(), r.Orig, r.Value)
	}
	return nil
}

// cleanAbs reports whether p is an absolute, clean path.
func cleanAbs(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsRune(p, 0)
}

// decimal reports whether s is 1-20 decimal digits.
func decimal(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// cpuListText reports whether s looks like a kernel CPU list.
func cpuListText(s string) bool {
	if s == "" || len(s) > 4096 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && c != ',' && c != '-' {
			return false
		}
	}
	return true
}

// parseFileName returns the owner PID and start time a journal file name
// "<pid>-<start>.json" says.
func parseFileName(name string) (pid int, start uint64, ok bool) {
	base, ok := strings.CutSuffix(name, ".json")
	if !ok {
		return 0, 0, false
	}
	p, s, ok := strings.Cut(base, "-")
	if !ok || !decimal(p) || !decimal(s) {
		return 0, 0, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil {
		return 0, 0, false
	}
	start, err = strconv.ParseUint(s, 10, 64)
	return pid, start, err == nil
}

// lockDir takes an flock on the directory, shared or exclusive, so two
// recoveries never act on one dead process's file at once. The returned
// file releases the lock when closed.
func lockDir(dir string, how int) (*os.File, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(d.Fd()), how)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("host: lock %s: %w", dir, err)
	}
	return d, nil
}
