package host

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// The two NAPI files in /sys/class/net/<if>/.
const (
	// DeferIRQsFile holds how many empty NAPI polls may pass before the
	// device's hard interrupt is re-enabled.
	DeferIRQsFile = "napi_defer_hard_irqs"
	// FlushTimeoutFile holds the GRO flush timeout in nanoseconds, which
	// is also the timer that ends a deferral.
	FlushTimeoutFile = "gro_flush_timeout"
)

// TuneNAPI sets napi_defer_hard_irqs to deferIRQs and gro_flush_timeout to
// flush on ifname, as seen through the sysfs at sysRoot ("/sys", or the
// root InNetnsSysfs hands over), recording both in j. If the second write
// fails the first is rolled back, so the interface is left as it was.
//
// An interface this sysfs does not show, missing files, a read-only sysfs
// or missing permission give an *UnavailableError (errors.Is
// ErrUnavailable) whose Reason is meant for Info; another fleet holding
// different values gives ErrConflict. Either way nothing is changed.
func TuneNAPI(j *Journal, sysRoot, ifname string, deferIRQs int, flush time.Duration) error {
	if !safeName(ifname) {
		return fmt.Errorf("host: NAPI: bad interface name %q", ifname)
	}
	if deferIRQs < 0 || deferIRQs > math.MaxInt32 {
		return fmt.Errorf("host: NAPI on %s: napi_defer_hard_irqs %d is outside 0-%d", ifname, deferIRQs, math.MaxInt32)
	}
	if flush < 0 {
		return fmt.Errorf("host: NAPI on %s: negative gro_flush_timeout %v", ifname, flush)
	}
	dir := filepath.Join(sysRoot, "class/net", ifname)
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return unavailable("NAPI on "+ifname, "the interface is not in "+filepath.Join(sysRoot, "class/net")+" (another network namespace's sysfs?)", err)
		}
		return fmt.Errorf("host: NAPI on %s: %w", ifname, err)
	}
	ns, err := netnsID()
	if err != nil {
		return err
	}
	root := absRoot(sysRoot)
	ifindex := readIfindex(dir)
	mark := j.mark()
	for _, s := range []struct {
		file, value string
	}{
		{DeferIRQsFile, strconv.Itoa(deferIRQs)},
		{FlushTimeoutFile, strconv.FormatInt(flush.Nanoseconds(), 10)},
	} {
		what := s.file + " on " + ifname
		path := filepath.Join(dir, s.file)
		k := key{kind: kindSysfs, netns: ns, root: root, iface: ifname, ifindex: ifindex, setting: s.file}
		if _, err := j.acquire(k, what, s.value, func() (handle, error) { return openFile(what, path) }); err != nil {
			if rerr := j.rollback(mark); rerr != nil {
				return errors.Join(err, fmt.Errorf("host: roll back NAPI on %s: %w", ifname, rerr))
			}
			return err
		}
	}
	return nil
}

// readIfindex returns the interface index in <dir>/ifindex, or 0.
func readIfindex(dir string) int {
	s, err := readFile(filepath.Join(dir, "ifindex"))
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// absRoot makes a settings root absolute, so a journal file names the
// same place to any process.
func absRoot(root string) string {
	if a, err := filepath.Abs(root); err == nil {
		return a
	}
	return filepath.Clean(root)
}

// ReadNAPI returns the current NAPI settings of ifname as seen through the
// sysfs at sysRoot.
func ReadNAPI(sysRoot, ifname string) (deferIRQs int, flush time.Duration, err error) {
	if !safeName(ifname) {
		return 0, 0, fmt.Errorf("host: NAPI: bad interface name %q", ifname)
	}
	dir := filepath.Join(sysRoot, "class/net", ifname)
	d, err := readFile(filepath.Join(dir, DeferIRQsFile))
	if err != nil {
		return 0, 0, classify(DeferIRQsFile+" on "+ifname, err)
	}
	f, err := readFile(filepath.Join(dir, FlushTimeoutFile))
	if err != nil {
		return 0, 0, classify(FlushTimeoutFile+" on "+ifname, err)
	}
	if deferIRQs, err = strconv.Atoi(d); err != nil {
		return 0, 0, fmt.Errorf("host: %s on %s: %w", DeferIRQsFile, ifname, err)
	}
	ns, err := strconv.ParseInt(f, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("host: %s on %s: %w", FlushTimeoutFile, ifname, err)
	}
	return deferIRQs, time.Duration(ns), nil
}
