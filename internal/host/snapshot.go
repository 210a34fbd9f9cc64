package host

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Snapshot is the state of every host setting this package can change, for
// one interface: its NAPI tunables, every interrupt's CPU list, its driver
// private flags, and the calling thread's CPU affinity. Take one before and
// after and Diff them to prove what an Open changed, or that it changed
// nothing.
type Snapshot map[string]string

// TakeSnapshot reads the settings of ifname (sysfs and ethtool in the
// calling thread's network namespace; /proc/irq host-wide). A setting the
// host does not have is recorded as absent, not as an error.
func TakeSnapshot(ifname string) (Snapshot, error) {
	if !safeName(ifname) {
		return nil, fmt.Errorf("host: snapshot: bad interface name %q", ifname)
	}
	s := Snapshot{}
	err := InNetnsSysfs(func(root string) error {
		for _, name := range []string{"napi_defer_hard_irqs", "gro_flush_timeout", "threaded"} {
			s["sysfs "+name] = readOrAbsent(filepath.Join(root, "class/net", ifname, name))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("host: snapshot of %s: %w", ifname, err)
	}
	irqs, _ := filepath.Glob("/proc/irq/*/smp_affinity_list")
	for _, p := range irqs {
		s["irq "+filepath.Base(filepath.Dir(p))] = readOrAbsent(p)
	}
	s["private flags"] = privFlagState(ifname)
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("host: snapshot: the thread's CPU mask: %w", err)
	}
	s["thread affinity"] = formatCPUList(cpusIn(set))
	return s, nil
}

// privFlagState is the private flags of ifname as "name=on,...", "none"
// for a driver without any, or "unreadable: why".
func privFlagState(ifname string) string {
	dev, err := openEthtool()
	if err != nil {
		return "unreadable: " + err.Error()
	}
	defer dev.close()
	names, err := privFlagNames(dev, ifname)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	if len(names) == 0 {
		return "none"
	}
	mask, err := privFlags(dev, ifname)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + onOff(mask&(1<<i) != 0)
	}
	return strings.Join(parts, ",")
}

// readOrAbsent reads a setting file, or says it is absent.
func readOrAbsent(path string) string {
	if _, err := os.Stat(path); err != nil {
		return "absent"
	}
	v, err := readFile(path)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	return v
}

// Diff lists every setting whose value differs between s and later, as
// "name: before -> after", sorted; nil when nothing changed.
func (s Snapshot) Diff(later Snapshot) []string {
	var out []string
	for k, v := range s {
		if w, ok := later[k]; !ok {
			out = append(out, fmt.Sprintf("%s: %s -> gone", k, v))
		} else if w != v {
			out = append(out, fmt.Sprintf("%s: %s -> %s", k, v, w))
		}
	}
	for k, w := range later {
		if _, ok := s[k]; !ok {
			out = append(out, fmt.Sprintf("%s: new -> %s", k, w))
		}
	}
	sort.Strings(out)
	return out
}

// TakeSnapshotIn is TakeSnapshot run through in, which runs a function in
// the interface's network namespace (netns.Host.Do, for one).
func TakeSnapshotIn(in func(func() error) error, ifname string) (Snapshot, error) {
	var s Snapshot
	err := in(func() (err error) {
		s, err = TakeSnapshot(ifname)
		return err
	})
	return s, err
}
