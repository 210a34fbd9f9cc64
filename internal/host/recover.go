package host

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// RecoveryAction says what a recovery did with one recorded setting.
type RecoveryAction uint8

// What a recovery does with a setting a journal file records.
const (
	// Restored: the setting still held the value its dead owner wrote,
	// and the original was written back.
	Restored RecoveryAction = iota + 1
	// WouldRestore: as Restored, in a dry run that writes nothing.
	WouldRestore
	// AlreadyBack: the setting already holds the original (the owner died
	// between recording and writing, or someone put it back).
	AlreadyBack
	// LeftChanged: the setting holds neither the original nor the owner's
	// value: someone changed it since, and it is left as it is.
	LeftChanged
	// Dropped: the setting is gone (its network namespace, interface or
	// interrupt no longer exists, or the journal is from an earlier boot);
	// its record is dropped.
	Dropped
	// HeldLive: the owner is alive; nothing is touched.
	HeldLive
	// Failed: the setting could not be read or written, or the journal
	// file could not be read; its record is kept for another try.
	Failed
)

// String returns the action in a word.
func (a RecoveryAction) String() string {
	switch a {
	case Restored:
		return "restored"
	case WouldRestore:
		return "would restore"
	case AlreadyBack:
		return "already back"
	case LeftChanged:
		return "left changed"
	case Dropped:
		return "dropped"
	case HeldLive:
		return "held live"
	case Failed:
		return "failed"
	}
	return "RecoveryAction(" + strconv.Itoa(int(a)) + ")"
}

// Recovery is what a recovery did with one setting a journal file records,
// or with a journal file it could not read.
type Recovery struct {
	// Action is what was done.
	Action RecoveryAction
	// What names the setting as a Change does ("napi_defer_hard_irqs on
	// veth0"), or the journal file for a file that could not be read.
	What string
	// PID is the process that changed the setting.
	PID int
	// Orig is the value found before that process changed it, Value the
	// one it wrote, Found the one there now ("" when not read).
	Orig, Value, Found string
	// Note says why a setting was dropped or left.
	Note string
	// Err is the failure of a Failed recovery.
	Err error
}

// String describes the recovery in a line for Info or a terminal, as in
// "restored napi_defer_hard_irqs on veth0 to 0, left by dead process 1234".
func (r Recovery) String() string {
	by := "dead process " + strconv.Itoa(r.PID)
	switch r.Action {
	case Restored:
		return fmt.Sprintf("restored %s to %s, left by %s", r.What, r.Orig, by)
	case WouldRestore:
		return fmt.Sprintf("would restore %s from %s to %s, left by %s", r.What, r.Found, r.Orig, by)
	case AlreadyBack:
		return fmt.Sprintf("%s already back at %s, left by %s", r.What, r.Orig, by)
	case LeftChanged:
		return fmt.Sprintf("left %s at %s: changed since %s set it to %s (original %s)", r.What, r.Found, by, r.Value, r.Orig)
	case Dropped:
		return fmt.Sprintf("dropped %s (original %s), left by %s: %s", r.What, r.Orig, by, r.Note)
	case HeldLive:
		s := fmt.Sprintf("%s held at %s by live process %d (original %s)", r.What, r.Value, r.PID, r.Orig)
		if r.Note != "" {
			s += ": " + r.Note
		}
		return s
	case Failed:
		if r.PID == 0 {
			return fmt.Sprintf("could not recover %s: %v", r.What, r.Err)
		}
		return fmt.Sprintf("could not restore %s to %s, left by %s: %v", r.What, r.Orig, by, r.Err)
	}
	return r.What + ": " + r.Action.String()
}

// Recover puts back what dead processes left changed: it reads every
// journal file under runDir/journal/ (DefaultRunDir when runDir is empty)
// and, for each whose owner is gone (no such process, or a process with
// that PID that started at another time), writes back each recorded
// original, newest first, but only where the setting still holds the value
// that owner wrote; a setting someone changed since is left and reported.
// Settings whose network namespace, interface or interrupt is gone are
// dropped with a note. The file is then removed, or rewritten with the
// records that failed. A live owner's file is never touched; its settings
// are reported as HeldLive. With dryRun nothing is written or removed, and
// what would be restored is WouldRestore.
//
// Every setting gives one Recovery, in order. The error is for the run
// directory itself; failures of single settings or files are Failed
// recoveries.
func Recover(runDir string, dryRun bool) ([]Recovery, error) {
	rc := recoverer{dir: journalDir(runDir), dryRun: dryRun, openEthtool: openEthtool}
	return rc.run()
}

// Recover is Recover for the journal's run directory, as an Open does
// before it changes anything. It never runs a dry run.
func (j *Journal) Recover() ([]Recovery, error) {
	return Recover(j.RunDir, false)
}

// recoverer does one recovery; tests replace openEthtool.
type recoverer struct {
	dir         string
	dryRun      bool
	openEthtool func() (ethtoolIO, error)
	// netns holds the namespaces looked up so far, nil for one found
	// gone: a file records several settings of one namespace.
	netns map[uint64]*os.File
}

// findNetns is findNetns, once per namespace and run.
func (rc *recoverer) findNetns(ino uint64) (*os.File, error) {
	if f, ok := rc.netns[ino]; ok {
		return f, nil
	}
	f, err := findNetns(ino)
	if err != nil {
		return nil, err
	}
	if rc.netns == nil {
		rc.netns = map[uint64]*os.File{}
	}
	rc.netns[ino] = f
	return f, nil
}

func (rc *recoverer) run() ([]Recovery, error) {
	how := unix.LOCK_EX
	if rc.dryRun {
		how = unix.LOCK_SH
	}
	lock, err := lockDir(rc.dir, how)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("host: recover: %w", err)
	}
	defer lock.Close()
	defer func() {
		for _, f := range rc.netns {
			if f != nil {
				f.Close()
			}
		}
	}()
	names, err := lock.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("host: recover: read %s: %w", rc.dir, err)
	}
	slices.Sort(names)
	self, err := selfOwner()
	if err != nil {
		return nil, fmt.Errorf("host: recover: %w", err)
	}
	var out []Recovery
	for _, name := range names {
		if tmp, ok := strings.CutPrefix(name, "."); ok {
			rc.dropTemp(self, name, strings.TrimSuffix(tmp, ".tmp"))
			continue
		}
		out = append(out, rc.file(self, name)...)
	}
	return out, nil
}

// dropTemp removes the temporary file a dead owner left mid-write.
func (rc *recoverer) dropTemp(self owner, name, journal string) {
	pid, start, ok := parseFileName(journal)
	if !ok || rc.dryRun {
		return
	}
	if alive, _ := ownerAlive(self, owner{PID: pid, Start: start, PIDNS: self.PIDNS}); !alive {
		os.Remove(filepath.Join(rc.dir, name))
	}
}

// file recovers one journal file.
func (rc *recoverer) file(self owner, name string) []Recovery {
	path := filepath.Join(rc.dir, name)
	failed := func(err error) []Recovery {
		return []Recovery{{Action: Failed, What: "journal file " + path, Err: fmt.Errorf("%w; left for inspection", err)}}
	}
	pid, start, ok := parseFileName(name)
	if !ok {
		return failed(errors.New("not a journal file name"))
	}
	b, err := readLimited(path)
	if err != nil {
		return failed(err)
	}
	jf, err := parseJournal(b)
	if err != nil {
		return failed(err)
	}
	if jf.PID != pid || jf.Start != start {
		return failed(fmt.Errorf("the file names process %d-%d, its contents %d-%d", pid, start, jf.PID, jf.Start))
	}
	alive, note := ownerAlive(self, jf.owner)
	if alive {
		out := make([]Recovery, 0, len(jf.Settings))
		for _, r := range jf.Settings {
			out = append(out, Recovery{Action: HeldLive, What: r.what(), PID: jf.PID, Orig: r.Orig, Value: r.Value, Note: note})
		}
		return out
	}
	var out []Recovery
	var keep []record
	for i := len(jf.Settings) - 1; i >= 0; i-- {
		r := jf.Settings[i]
		var rec Recovery
		if note != "" {
			rec = Recovery{Action: Dropped, Note: note}
		} else {
			rec = rc.setting(r)
		}
		rec.What, rec.PID, rec.Orig, rec.Value = r.what(), jf.PID, r.Orig, r.Value
		if rec.Action == Failed {
			keep = append([]record{r}, keep...)
		}
		out = append(out, rec)
	}
	if rc.dryRun {
		return out
	}
	var err2 error
	if len(keep) == 0 {
		err2 = removeDurably(rc.dir, name)
	} else {
		jf.Settings = keep
		err2 = writeJournalFile(rc.dir, jf)
	}
	if err2 != nil {
		out = append(out, Recovery{Action: Failed, What: "journal file " + path, Err: err2})
	}
	return out
}

// readLimited reads a journal file, refusing one too large to be ours.
func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxJournalFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxJournalFile {
		return nil, fmt.Errorf("larger than %d bytes", maxJournalFile)
	}
	return b, nil
}

// ownerAlive reports whether the process that wrote a journal may still
// run. A note comes with a dead owner whose settings are all to be dropped
// (an earlier boot), or with a live verdict that is only a guess.
func ownerAlive(self, o owner) (alive bool, note string) {
	if o.Boot != "" && self.Boot != "" && o.Boot != self.Boot {
		return false, "the journal is from an earlier boot, which reset the setting"
	}
	if o.PIDNS != self.PIDNS {
		return true, fmt.Sprintf("the owner counts PIDs in another PID namespace (%d), so whether it runs cannot be told from here", o.PIDNS)
	}
	now, err := procOwner(o.PID)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, ""
		}
		return true, "cannot read its /proc entry: " + err.Error()
	}
	return now.Start == o.Start, ""
}

// setting recovers one record of a dead owner: Action, Found, Note and
// Err of the result are set.
func (rc *recoverer) setting(r record) Recovery {
	var rec Recovery
	act := func(h handle) {
		cur, err := h.read()
		if err != nil {
			rec = Recovery{Action: Failed, Err: err}
			return
		}
		rec.Found = cur
		switch {
		case cur == r.Orig:
			rec.Action = AlreadyBack
		case cur != r.Value:
			rec.Action = LeftChanged
		case rc.dryRun:
			rec.Action = WouldRestore
		default:
			if err := h.write(r.Orig); err != nil {
				rec.Action, rec.Err = Failed, err
				return
			}
			rec.Action = Restored
		}
	}
	gone, err := rc.reach(r, act)
	switch {
	case err != nil:
		return Recovery{Action: Failed, Err: err}
	case gone != "":
		return Recovery{Action: Dropped, Note: gone}
	}
	return rec
}

// reach opens the setting r records and hands it to act, in the setting's
// network namespace where it has one. gone says why the setting no longer
// exists; err is a failure to tell.
func (rc *recoverer) reach(r record, act func(handle)) (gone string, err error) {
	what := r.what()
	switch r.Kind {
	case kindIRQ:
		n := strings.TrimPrefix(r.Iface, "irq ")
		return reachFile(what, filepath.Join(r.Root, "irq", n, r.Setting), 0, "", func(h handle) { act(cpuListHandle{h}) })
	case kindSysfs:
		if r.Root != "/sys" {
			// A tree of ordinary files, as the tests make.
			dir := filepath.Join(r.Root, "class/net", r.Iface)
			return reachFile(what, filepath.Join(dir, r.Setting), r.Ifindex, dir, act)
		}
		return rc.inNetnsOf(r.Netns, func(sys string) (string, error) {
			dir := filepath.Join(sys, "class/net", r.Iface)
			return reachFile(what, filepath.Join(dir, r.Setting), r.Ifindex, dir, act)
		})
	case kindPrivFlag:
		return rc.inNetnsOf(r.Netns, func(string) (string, error) {
			return rc.reachPrivFlag(r, act)
		})
	}
	return "", fmt.Errorf("unknown kind %q", r.Kind)
}

// reachFile opens a setting file; ifindex, when not 0, must still be the
// index in <ifdir>/ifindex.
func reachFile(what, path string, ifindex int, ifdir string, act func(handle)) (string, error) {
	if ifindex != 0 {
		if now := readIfindex(ifdir); now != ifindex {
			if now == 0 {
				return "the interface is gone", nil
			}
			return fmt.Sprintf("the interface now has index %d, not %d: another device of the same name", now, ifindex), nil
		}
	}
	h, err := openFile(what, path)
	if errors.Is(err, os.ErrNotExist) {
		return "the setting is gone", nil
	}
	if err != nil {
		return "", err
	}
	defer h.close()
	act(h)
	return "", nil
}

// reachPrivFlag opens a private flag through SIOCETHTOOL in the calling
// thread's network namespace.
func (rc *recoverer) reachPrivFlag(r record, act func(handle)) (string, error) {
	flag := strings.TrimPrefix(r.Setting, privFlagPrefix)
	dev, err := rc.openEthtool()
	if err != nil {
		return "", err
	}
	defer dev.close()
	names, err := privFlagNames(dev, r.Iface)
	if errors.Is(err, unix.ENODEV) {
		return "the interface is gone", nil
	}
	if err != nil {
		return "", ethtoolErr(r.what(), err)
	}
	i := slices.Index(names, flag)
	if i < 0 {
		return "the interface has no private flag " + flag + " any more", nil
	}
	act(&privFlagHandle{dev: dev, ifname: r.Iface, what: r.what(), bit: 1 << i})
	return "", nil
}

// inNetnsOf runs fn in the network namespace with inode ino, with a sysfs
// of that namespace. A namespace that no longer exists gives a note.
func (rc *recoverer) inNetnsOf(ino uint64, fn func(sysRoot string) (string, error)) (string, error) {
	f, err := rc.findNetns(ino)
	if err != nil {
		return "", err
	}
	if f == nil {
		return fmt.Sprintf("its network namespace (inode %d) no longer exists", ino), nil
	}
	var gone string
	err = InNetnsSysfsAt(int(f.Fd()), func(sys string) (err error) {
		gone, err = fn(sys)
		return err
	})
	return gone, err
}

// findNetns opens the network namespace with inode ino, wherever a handle
// to it can be found: this thread, /run/netns, the threads and open files
// of every process. It returns nil, nil when there is none, which means the
// namespace is gone (a namespace lives only while something holds it).
func findNetns(ino uint64) (*os.File, error) {
	want := "net:[" + strconv.FormatUint(ino, 10) + "]"
	// Only a link that names the namespace is opened: an open of some
	// other process's descriptor (a FIFO) could block.
	try := func(path string, bindMount bool) *os.File {
		if !bindMount {
			if l, err := os.Readlink(path); err != nil || l != want {
				return nil
			}
		}
		f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			return nil
		}
		var st unix.Stat_t
		if unix.Fstat(int(f.Fd()), &st) != nil || st.Ino != ino || !isNetns(f) {
			f.Close()
			return nil
		}
		return f
	}
	if f := try("/proc/thread-self/ns/net", false); f != nil {
		return f, nil
	}
	for _, dir := range []string{"/run/netns", "/var/run/netns"} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if f := try(filepath.Join(dir, e.Name()), true); f != nil {
				return f, nil
			}
		}
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("host: find network namespace %d: %w", ino, err)
	}
	self := strconv.Itoa(os.Getpid())
	// This process first: a test holds its namespaces by descriptor.
	slices.SortStableFunc(procs, func(a, b os.DirEntry) int {
		return boolInt(b.Name() == self) - boolInt(a.Name() == self)
	})
	for _, p := range procs {
		if !decimal(p.Name()) {
			continue
		}
		base := filepath.Join("/proc", p.Name())
		tasks, _ := os.ReadDir(filepath.Join(base, "task"))
		for _, t := range tasks {
			if f := try(filepath.Join(base, "task", t.Name(), "ns/net"), false); f != nil {
				return f, nil
			}
		}
		fds, _ := os.ReadDir(filepath.Join(base, "fd"))
		for _, d := range fds {
			if f := try(filepath.Join(base, "fd", d.Name()), false); f != nil {
				return f, nil
			}
		}
	}
	return nil, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// isNetns reports whether f is a network namespace file.
func isNetns(f *os.File) bool {
	var fs unix.Statfs_t
	return unix.Fstatfs(int(f.Fd()), &fs) == nil && fs.Type == unix.NSFS_MAGIC
}
