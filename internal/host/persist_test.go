package host

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/journal")

// readJournalDir returns the journal files in runDir/journal, parsed.
func readJournalDir(t *testing.T, runDir string) map[string]journalFile {
	t.Helper()
	dir := journalDir(runDir)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]journalFile{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		jf, err := parseJournal(b)
		if err != nil {
			t.Fatalf("%s: %v\n%s", e.Name(), err, b)
		}
		out[e.Name()] = jf
	}
	return out
}

// TestJournalFileBeforeWrite: when the host is written, the original is
// already on disk in this process's file; the entry goes when the original
// is back, and the file with the last entry.
func TestJournalFileBeforeWrite(t *testing.T) {
	root := fakeTree(t, "veth.txt")
	sys := filepath.Join(root, "sys")
	run := t.TempDir()
	self, err := selfOwner()
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	writeFault = func(path, value string) error {
		jf := readJournalDir(t, run)[self.fileName()]
		var rs []string
		for _, r := range jf.Settings {
			rs = append(rs, r.Setting+"="+r.Orig+"->"+r.Value)
		}
		seen = append(seen, fmt.Sprintf("%s=%s with %v", filepath.Base(path), value, rs))
		return nil
	}
	t.Cleanup(func() { writeFault = nil })
	j := Journal{RunDir: run}
	restoreOnCleanup(t, &j)
	if err := TuneNAPI(&j, sys, "veth0", 2, 20*time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if err := j.Restore(); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"napi_defer_hard_irqs=2 with [napi_defer_hard_irqs=0->2]",
		"gro_flush_timeout=20000 with [napi_defer_hard_irqs=0->2 gro_flush_timeout=0->20000]",
		// Restore, newest first; each write happens before its record goes.
		"gro_flush_timeout=0 with [napi_defer_hard_irqs=0->2 gro_flush_timeout=0->20000]",
		"napi_defer_hard_irqs=0 with [napi_defer_hard_irqs=0->2]",
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Fatalf("journal at each write:\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
	if files := readJournalDir(t, run); len(files) != 0 {
		t.Fatalf("journal files left after Restore: %v", files)
	}
	// The last file out takes the journal directory with it; a run
	// directory that is not DefaultRunDir is the caller's and stays.
	if _, err := os.Stat(journalDir(run)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the emptied journal directory is still there: %v", err)
	}
	if _, err := os.Stat(run); err != nil {
		t.Fatalf("the caller's run directory went: %v", err)
	}
}

// TestJournalUnwritableRefuses: a setting whose original cannot be put on
// disk is not changed, and the refusal is an *UnavailableError.
func TestJournalUnwritableRefuses(t *testing.T) {
	root := fakeTree(t, "veth.txt")
	sys := filepath.Join(root, "sys")
	run := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(run, nil, 0o600); err != nil { // a file where a directory must be
		t.Fatal(err)
	}
	j := Journal{RunDir: run}
	restoreOnCleanup(t, &j)
	err := TuneNAPI(&j, sys, "veth0", 2, 20*time.Microsecond)
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "cannot be recorded on disk") {
		t.Fatalf("TuneNAPI with no journal directory = %v; want ErrUnavailable saying why", err)
	}
	wantNAPI(t, sys, "veth0", 0, 0)
	if heldCount() != 0 {
		t.Fatalf("registry holds %d", heldCount())
	}
}

func TestStatStart(t *testing.T) {
	tests := []struct {
		line string
		want uint64
		ok   bool
	}{
		{"1234 (go test) S 1 1234 1234 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 1000 100 18446744073709551615", 98765, true},
		{"1234 (a) b) (c) S 1 1234 1234 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 42 1000", 42, true},
		{"1234 (short) S 1 2", 0, false},
		{"no parens", 0, false},
	}
	for _, tt := range tests {
		got, err := statStart(tt.line)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("statStart(%q) = %d, %v; want %d ok=%v", tt.line, got, err, tt.want, tt.ok)
		}
	}
	self, err := selfOwner()
	if err != nil || self.PID != os.Getpid() || self.Start == 0 || self.PIDNS == 0 || self.Boot == "" {
		t.Fatalf("selfOwner = %+v, %v", self, err)
	}
}

// writeFakeJournal writes a journal file for o in runDir.
func writeFakeJournal(t *testing.T, runDir string, o owner, rs ...record) {
	t.Helper()
	if err := writeJournalFile(journalDir(runDir), journalFile{Version: journalVersion, owner: o, Settings: rs}); err != nil {
		t.Fatal(err)
	}
}

// TestRecoverFake: recovery of journal files on fake trees, one case per
// outcome. A dead owner is this process's PID with another start time (a
// reused PID), a live one this process itself.
func TestRecoverFake(t *testing.T) {
	self, err := selfOwner()
	if err != nil {
		t.Fatal(err)
	}
	dead := self
	dead.Start++
	otherNS, otherBoot := self, dead
	otherNS.PIDNS++
	otherBoot.Boot = "00000000-0000-0000-0000-000000000000"
	tests := []struct {
		name    string
		owner   owner
		setup   func(sys, proc string) // before recovery
		dryRun  bool
		want    []string // the recoveries, as String gives them, with NAPI for the sysfs tree
		napi    string   // napi_defer_hard_irqs afterwards
		irq     string   // smp_affinity_list of irq 38 afterwards
		keep    bool     // the file stays
		failure bool
	}{
		{
			name: "restores", owner: dead, napi: "0", irq: "0-1",
			want: []string{
				"restored smp_affinity_list of irq 38 to 0-1, left by dead process PID",
				"restored napi_defer_hard_irqs on veth0 to 0, left by dead process PID",
			},
		},
		{
			name: "dry run", owner: dead, dryRun: true, napi: "7", irq: "1", keep: true,
			want: []string{
				"would restore smp_affinity_list of irq 38 from 1 to 0-1, left by dead process PID",
				"would restore napi_defer_hard_irqs on veth0 from 7 to 0, left by dead process PID",
			},
		},
		{
			name: "changed since", owner: dead, napi: "3", irq: "0-1",
			setup: func(sys, _ string) { writeSetting(t, filepath.Join(sys, "class/net/veth0/napi_defer_hard_irqs"), "3") },
			want: []string{
				"restored smp_affinity_list of irq 38 to 0-1, left by dead process PID",
				"left napi_defer_hard_irqs on veth0 at 3: changed since dead process PID set it to 7 (original 0)",
			},
		},
		{
			name: "killed before the write", owner: dead, napi: "0", irq: "0-1",
			setup: func(sys, _ string) { writeSetting(t, filepath.Join(sys, "class/net/veth0/napi_defer_hard_irqs"), "0") },
			want: []string{
				"restored smp_affinity_list of irq 38 to 0-1, left by dead process PID",
				"napi_defer_hard_irqs on veth0 already back at 0, left by dead process PID",
			},
		},
		{
			name: "interface gone", owner: dead, irq: "0-1",
			setup: func(sys, _ string) { os.RemoveAll(filepath.Join(sys, "class/net/veth0")) },
			want: []string{
				"restored smp_affinity_list of irq 38 to 0-1, left by dead process PID",
				"dropped napi_defer_hard_irqs on veth0 (original 0), left by dead process PID: the interface is gone",
			},
		},
		{
			name: "interface replaced", owner: dead, napi: "7", irq: "0-1",
			setup: func(sys, _ string) { writeSetting(t, filepath.Join(sys, "class/net/veth0/ifindex"), "12") },
			want: []string{
				"restored smp_affinity_list of irq 38 to 0-1, left by dead process PID",
				"dropped napi_defer_hard_irqs on veth0 (original 0), left by dead process PID: the interface now has index 12, not 5: another device of the same name",
			},
		},
		{
			name: "live owner", owner: self, napi: "7", irq: "1", keep: true,
			want: []string{
				"napi_defer_hard_irqs on veth0 held at 7 by live process PID (original 0)",
				"smp_affinity_list of irq 38 held at 1 by live process PID (original 0-1)",
			},
		},
		{
			name: "another PID namespace", owner: otherNS, napi: "7", irq: "1", keep: true,
			want: []string{
				"napi_defer_hard_irqs on veth0 held at 7 by live process PID (original 0): the owner counts PIDs in another PID namespace (NS), so whether it runs cannot be told from here",
				"smp_affinity_list of irq 38 held at 1 by live process PID (original 0-1): the owner counts PIDs in another PID namespace (NS), so whether it runs cannot be told from here",
			},
		},
		{
			name: "earlier boot", owner: otherBoot, napi: "7", irq: "1",
			want: []string{
				"dropped smp_affinity_list of irq 38 (original 0-1), left by dead process PID: the journal is from an earlier boot, which reset the setting",
				"dropped napi_defer_hard_irqs on veth0 (original 0), left by dead process PID: the journal is from an earlier boot, which reset the setting",
			},
		},
		{
			name: "write fails", owner: dead, napi: "0", irq: "1", keep: true, failure: true,
			setup: func(_, proc string) {
				writeFault = func(path, _ string) error {
					if strings.HasSuffix(path, "smp_affinity_list") {
						return errors.New("injected")
					}
					return nil
				}
			},
			want: []string{
				"could not restore smp_affinity_list of irq 38 to 0-1, left by dead process PID: host: smp_affinity_list of irq 38: write PROC/irq/38/smp_affinity_list: injected",
				"restored napi_defer_hard_irqs on veth0 to 0, left by dead process PID",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Cleanup(func() { writeFault = nil })
			root := fakeTree(t, "veth.txt")
			sys, proc := filepath.Join(root, "sys"), filepath.Join(root, "proc")
			napiPath := filepath.Join(sys, "class/net/veth0/napi_defer_hard_irqs")
			irqPath := filepath.Join(proc, "irq/38/smp_affinity_list")
			writeSetting(t, filepath.Join(sys, "class/net/veth0/ifindex"), "5")
			writeSetting(t, napiPath, "7")
			writeSetting(t, irqPath, "1")
			run := t.TempDir()
			writeFakeJournal(t, run, tt.owner,
				record{Kind: kindSysfs, Netns: 1, Root: sys, Iface: "veth0", Ifindex: 5, Setting: DeferIRQsFile, Orig: "0", Value: "7"},
				record{Kind: kindIRQ, Root: proc, Iface: "irq 38", Setting: "smp_affinity_list", Orig: "0-1", Value: "1"},
			)
			if tt.setup != nil {
				tt.setup(sys, proc)
			}
			got, err := Recover(run, tt.dryRun)
			if err != nil {
				t.Fatal(err)
			}
			var lines []string
			failed := false
			for _, r := range got {
				s := strings.ReplaceAll(r.String(), proc, "PROC")
				s = strings.ReplaceAll(s, fmt.Sprint(tt.owner.PIDNS), "NS")
				lines = append(lines, strings.ReplaceAll(s, fmt.Sprint(tt.owner.PID), "PID"))
				failed = failed || r.Action == Failed
			}
			if strings.Join(lines, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("recoveries:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(tt.want, "\n"))
			}
			if failed != tt.failure {
				t.Fatalf("a failure reported: %v, want %v", failed, tt.failure)
			}
			if tt.napi != "" {
				if v := readTrim(t, napiPath); v != tt.napi {
					t.Errorf("napi_defer_hard_irqs = %s, want %s", v, tt.napi)
				}
			}
			if v := readTrim(t, irqPath); v != tt.irq {
				t.Errorf("smp_affinity_list = %s, want %s", v, tt.irq)
			}
			files := readJournalDir(t, run)
			if len(files) != 0 != tt.keep {
				t.Fatalf("journal files after recovery: %v; want kept %v", files, tt.keep)
			}
			if tt.failure {
				// Only the failed record is kept, for another try.
				jf := files[tt.owner.fileName()]
				if len(jf.Settings) != 1 || jf.Settings[0].Kind != kindIRQ {
					t.Fatalf("kept %+v; want the interrupt's record only", jf.Settings)
				}
			}
		})
	}
}

func writeSetting(t *testing.T, path, v string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(v+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRecoverBadFiles: a file recovery cannot read is reported and left for
// inspection; the others are still recovered.
func TestRecoverBadFiles(t *testing.T) {
	run := t.TempDir()
	dir := journalDir(run)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"notes.txt":      "hello",
		"1-2.json":       "{",
		"3-4.json":       `{"version":1,"pid":5,"start":6,"pidns":1,"boot":"","settings":[]}`,
		"7-8.json":       `{"version":2,"pid":7,"start":8,"pidns":1,"boot":"","settings":[]}`,
		".9-10.json.tmp": "partial",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Recover(run, false)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, r := range got {
		if r.Action != Failed {
			t.Errorf("%v: action %v, want failed", r, r.Action)
		}
		lines = append(lines, strings.ReplaceAll(r.String(), dir, "DIR"))
	}
	want := []string{
		"could not recover journal file DIR/1-2.json: journal file: unexpected EOF; left for inspection",
		"could not recover journal file DIR/3-4.json: the file names process 3-4, its contents 5-6; left for inspection",
		"could not recover journal file DIR/7-8.json: journal file: version 2 (this build reads 1); left for inspection",
		"could not recover journal file DIR/notes.txt: not a journal file name; left for inspection",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("recoveries:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 4 {
		t.Fatalf("%d files left, want the 4 bad ones (the dead owner's temporary file removed)", len(left))
	}
}

// TestParseJournalGolden parses every testdata/journal/*.json and compares
// what it reads, or its refusal, with the .golden file beside it.
func TestParseJournalGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/journal/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := describeJournal(b)
			golden := strings.TrimSuffix(f, ".json") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Fatalf("got\n%s\nwant\n%s", got, want)
			}
		})
	}
}

// describeJournal is what the golden files hold: the owner and one line
// per setting, or the refusal.
func describeJournal(b []byte) string {
	jf, err := parseJournal(b)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	s := fmt.Sprintf("owner %s boot %q pidns %d\n", jf.fileName(), jf.Boot, jf.PIDNS)
	for _, r := range jf.Settings {
		s += fmt.Sprintf("%s: %s -> %s [%s netns %d root %s ifindex %d]\n", r.what(), r.Orig, r.Value, r.Kind, r.Netns, r.Root, r.Ifindex)
	}
	return s
}

// FuzzParseJournal: parsing never panics, and whatever it accepts survives
// being written and read again unchanged, with names recovery can use.
func FuzzParseJournal(f *testing.F) {
	files, _ := filepath.Glob("testdata/journal/*.json")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		jf, err := parseJournal(b)
		if err != nil {
			return
		}
		for _, r := range jf.Settings {
			if r.Kind != kindPrivFlag && !cleanAbs(r.Root) {
				t.Fatalf("accepted root %q", r.Root)
			}
			if r.Kind != kindIRQ && !safeName(r.Iface) {
				t.Fatalf("accepted interface %q", r.Iface)
			}
		}
		again, err := json.Marshal(jf)
		if err != nil {
			t.Fatal(err)
		}
		jf2, err := parseJournal(again)
		if err != nil {
			t.Fatalf("re-reading %s: %v", again, err)
		}
		if fmt.Sprint(jf2) != fmt.Sprint(jf) {
			t.Fatalf("round trip changed %+v into %+v", jf, jf2)
		}
	})
}

// TestRecoverPrivFlag: a private flag a dead owner turned off is turned on
// again through SIOCETHTOOL in its namespace (here this one), keeping the
// other flags; one changed since is left; one on a vanished interface is
// dropped.
func TestRecoverPrivFlag(t *testing.T) {
	testenv.NeedRoot(t) // the recovery enters the namespace with a sysfs of its own
	self, err := selfOwner()
	if err != nil {
		t.Fatal(err)
	}
	dead := self
	dead.Start++
	ns, err := nsInode("/proc/thread-self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		iface  string
		flags  uint32 // bit 1 is xdp_tx_mpwqe
		want   string
		wantFl uint32
	}{
		{"restored", "eth1", 0b100, "restored private flag xdp_tx_mpwqe on eth1 to on, left by dead process PID", 0b110},
		{"already back", "eth1", 0b010, "private flag xdp_tx_mpwqe on eth1 already back at on, left by dead process PID", 0b010},
		{"interface gone", "eth9", 0b100, "dropped private flag xdp_tx_mpwqe on eth9 (original on), left by dead process PID: the interface is gone", 0b100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nic := &fakeNIC{ifname: "eth1", names: []string{"rx_cqe_compress", "xdp_tx_mpwqe", "other"}, flags: tt.flags}
			run := t.TempDir()
			writeFakeJournal(t, run, dead, record{Kind: kindPrivFlag, Netns: ns, Root: "ethtool", Iface: tt.iface, Setting: privFlagPrefix + "xdp_tx_mpwqe", Orig: "on", Value: "off"})
			rc := recoverer{dir: journalDir(run), openEthtool: func() (ethtoolIO, error) { return nic, nil }}
			got, err := rc.run()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || strings.ReplaceAll(got[0].String(), fmt.Sprint(dead.PID), "PID") != tt.want {
				t.Fatalf("recoveries %v, want [%s]", got, tt.want)
			}
			if nic.get() != tt.wantFl {
				t.Fatalf("flags %03b, want %03b", nic.flags, tt.wantFl)
			}
			if files := readJournalDir(t, run); len(files) != 0 {
				t.Fatalf("journal files left: %v", files)
			}
		})
	}
}

// BenchmarkRecoverNothing is what every tuned Open pays when no process
// died tuned: a run directory with only a live process's journal in it.
func BenchmarkRecoverNothing(b *testing.B) {
	self, err := selfOwner()
	if err != nil {
		b.Fatal(err)
	}
	run := b.TempDir()
	if err := writeJournalFile(journalDir(run), journalFile{Version: journalVersion, owner: self, Settings: []record{
		{Kind: kindIRQ, Root: "/proc", Iface: "irq 1", Setting: "smp_affinity_list", Orig: "0", Value: "1"},
	}}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Recover(run, false); err != nil {
			b.Fatal(err)
		}
	}
}
