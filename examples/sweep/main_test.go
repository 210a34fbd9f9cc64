package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio/internal/testenv"
)

// links lists the interfaces of the test's own namespace.
func links(t *testing.T) []string {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	slices.Sort(names)
	return names
}

// checkClean fails unless the host is as it was: the same interfaces, no
// testpmd runtime folders of this process.
func checkClean(t *testing.T, before []string) {
	t.Helper()
	if after := links(t); !slices.Equal(before, after) {
		t.Errorf("interfaces before %v, after %v", before, after)
	}
	if left, _ := filepath.Glob(filepath.Join(dpdkRunDir, testpmdPrefix()+"*")); len(left) > 0 {
		t.Errorf("testpmd runtime folders left: %v", left)
	}
}

func tiny(dir string) options {
	return options{backends: []string{"afpacket"}, loops: loops, queues: []int{1}, passes: 1, size: 64, flows: 8, batch: 64,
		warmup: 100 * time.Millisecond, window: 400 * time.Millisecond, out: dir}
}

func TestSweepSmoke(t *testing.T) {
	testenv.NeedRoot(t)
	before := links(t)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := sweepMain(context.Background(), tiny(dir), "sweep -test", &stdout, &stderr)
	t.Logf("stderr:\n%s", stderr.String())
	if code != exitOK {
		t.Fatalf("exit code %d\n%s", code, stdout.String())
	}
	checkClean(t, before)

	table := stdout.String()
	for _, want := range []string{"## packetio sweep, ", "command: `sweep -test`", "fed by afpacket on the peer", "needs BPF",
		"| loop | queues | column | Mpps |", "| transmit | 1 | kernel | ", "| receive | 1 | afpacket | ", "| forward | 1 | afpacket | ",
		"testpmd: column not asked for"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	// Every cell measured: a number and a ratio on each packetio row.
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, "| transmit") || strings.HasPrefix(l, "| receive") || strings.HasPrefix(l, "| forward") {
			if f := strings.Split(l, "|"); len(f) < 6 || strings.TrimSpace(f[4]) == "—" || strings.TrimSpace(f[5]) == "—" {
				t.Errorf("row without a number or ratio: %s", l)
			}
		}
	}
	if md, err := os.ReadFile(filepath.Join(dir, "sweep.md")); err != nil || string(md) != table {
		t.Errorf("sweep.md is not the printed table (%v)", err)
	}
	f, err := os.Open(filepath.Join(dir, "sweep.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1+3*2 {
		t.Fatalf("%d CSV lines, want 7: %q", len(recs), recs)
	}
	for _, r := range recs[1:] {
		if r[5] == "" || r[6] == "" || r[7] == "" {
			t.Errorf("CSV row without mpps, ratio or cores: %q", r)
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, "sweep.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(svg), "</title></rect>"); n != 6 {
		t.Errorf("%d bars in the chart, want 6", n)
	}
}

func TestSweepInterrupted(t *testing.T) {
	testenv.NeedRoot(t)
	before := links(t)
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	o := tiny(t.TempDir())
	o.window = 5 * time.Second
	var stdout, stderr bytes.Buffer
	if code := sweepMain(ctx, o, "sweep", &stdout, &stderr); code != exitInterrupted {
		t.Fatalf("exit code %d, want %d\n%s", code, exitInterrupted, stderr.String())
	}
	checkClean(t, before)
}

func TestSweepTestpmdColumn(t *testing.T) {
	testenv.NeedRoot(t)
	if _, err := exec.LookPath("dpdk-testpmd"); err != nil {
		testenv.CannotRun(t, "dpdk-testpmd is not installed (Debian's dpdk-dev package has it; make test installs it)")
		return
	}
	before := links(t)
	o := tiny(t.TempDir())
	o.loops, o.testpmd, o.backends = []string{loopTx, loopRx}, "dpdk-testpmd", nil
	var stdout, stderr bytes.Buffer
	code := sweepMain(context.Background(), o, "sweep", &stdout, &stderr)
	t.Logf("stderr:\n%s", stderr.String())
	if code != exitOK {
		t.Fatalf("exit code %d\n%s", code, stdout.String())
	}
	checkClean(t, before)
	for _, want := range []string{"| transmit | 1 | testpmd | ", "| receive | 1 | testpmd | "} {
		i := strings.Index(stdout.String(), want)
		if i < 0 || strings.HasPrefix(stdout.String()[i+len(want):], "—") {
			t.Errorf("no testpmd number for %q:\n%s", want, stdout.String())
		}
	}
}
