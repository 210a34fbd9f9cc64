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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio/internal/testenv"
	"github.com/packetio/packetio/internal/trafficgen"
)

// hostState is what the sweep must leave as it found it.
type hostState struct {
	links    []string // interfaces of the test's own namespace
	bpf      int      // BPF objects this process holds
	children []int    // processes whose parent is this one
}

func hostNow(t *testing.T) hostState {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var h hostState
	for _, i := range ifs {
		h.links = append(h.links, i.Name)
	}
	slices.Sort(h.links)
	fds, _ := filepath.Glob("/proc/self/fd/*")
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && strings.HasPrefix(l, "anon_inode:bpf") {
			h.bpf++
		}
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	me := strconv.Itoa(os.Getpid())
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue
		}
		s := string(b)
		// pid (comm) state ppid ...
		if i := strings.LastIndexByte(s, ')'); i >= 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 1 && f[1] == me {
				pid, _ := strconv.Atoi(strings.Fields(s)[0])
				h.children = append(h.children, pid)
			}
		}
	}
	return h
}

// checkClean fails unless the host is as it was: the same interfaces, no
// BPF program, link or map still held, no testpmd left running, no
// testpmd runtime folders of this process.
func checkClean(t *testing.T, before hostState) {
	t.Helper()
	after := hostNow(t)
	if !slices.Equal(before.links, after.links) {
		t.Errorf("interfaces before %v, after %v", before.links, after.links)
	}
	if after.bpf > before.bpf {
		t.Errorf("%d BPF objects held before, %d after", before.bpf, after.bpf)
	}
	if len(after.children) > len(before.children) {
		t.Errorf("child processes before %v, after %v", before.children, after.children)
	}
	if left, _ := filepath.Glob(filepath.Join(dpdkRunDir, testpmdPrefix()+"*")); len(left) > 0 {
		t.Errorf("testpmd runtime folders left: %v", left)
	}
}

func tiny(dir string) options {
	return options{backends: []string{"afpacket", "afxdp"}, columns: []string{colKernel, colAfpacket, colAfxdp}, loops: loops, queues: []int{1}, passes: 1, sizes: []int{64}, flows: 8, batch: 64,
		warmup: 100 * time.Millisecond, window: 400 * time.Millisecond, feeder: feederLive, rewrite: rewriteRoute, steer: steerFilter, write: writeFrame, out: dir}
}

// rows returns the table's data rows.
func rows(table string) []string {
	var out []string
	for _, l := range strings.Split(table, "\n") {
		if strings.HasPrefix(l, "| transmit") || strings.HasPrefix(l, "| receive") || strings.HasPrefix(l, "| forward") {
			out = append(out, l)
		}
	}
	return out
}

// TestSweepSmoke: every loop on the kernel, afpacket and afxdp, fed from
// inside the kernel, with the table, CSV and chart written and the host
// left clean.
func TestSweepSmoke(t *testing.T) {
	testenv.NeedBPF(t)
	dir := t.TempDir()
	table := runSweep(t, tiny(dir), "sweep -test")
	fed := []string{"fed from the peer from inside its kernel", "trafficgen"}
	if refused := trafficgen.Probe(); refused != nil {
		// A circuit feeds instead, and the table says why.
		fed = []string{"fed from the peer from inside its kernel by a circuit (internal/trafficgen.Circuit), since this kernel refuses the generator's live frames (" + refused.Error() + ")"}
	}
	fed = append(fed, "in a process of its own (sweep -run-feeder)") // its sysmon away from the loops
	if cpus := allowedCPUs(); len(cpus) > 1 {
		fed = append(fed, "every thread of it kept off the loops' CPUs ["+strconv.Itoa(cpus[1])+"]")
	}
	for _, want := range append(fed, "## packetio sweep, ", "command: `sweep -test`",
		"| loop | size | queues | column | Mpps | Gbit/s |", "| transmit | 64 | 1 | kernel | ", "| receive | 64 | 1 | afpacket | ", "| forward | 64 | 1 | afpacket | ",
		"| receive | 64 | 1 | afxdp | ", "| forward | 64 | 1 | afxdp | ", "afxdp: one XDP program in native mode", "testpmd: columns not asked for") {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	if strings.Contains(table, "cannot load") {
		t.Errorf("the table still says BPF cannot be loaded:\n%s", table)
	}
	// Every cell measured: a number, a ratio, and for receive and
	// forward an offered rate.
	rs := rows(table)
	if len(rs) != 9 {
		t.Fatalf("%d rows, want 9:\n%s", len(rs), table)
	}
	for _, l := range rs {
		f := strings.Split(l, "|")
		if len(f) < 14 || strings.TrimSpace(f[5]) == "—" || strings.TrimSpace(f[7]) == "—" || strings.TrimSpace(f[11]) == "—" {
			t.Errorf("row without a number, ratio or cores/Mpps: %s", l)
		}
		if !strings.HasPrefix(l, "| transmit") && strings.TrimSpace(f[12]) == "—" {
			t.Errorf("row without an offered rate: %s", l)
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
	if len(recs) != 1+3*3 {
		t.Fatalf("%d CSV lines, want 10: %q", len(recs), recs)
	}
	for _, r := range recs[1:] {
		if r[5] == "" || r[6] == "" || r[7] == "" || r[10] == "" || r[12] == "" {
			t.Errorf("CSV row without mpps, Gbit/s, ratio, cores or cores/Mpps: %q", r)
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, "sweep.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(svg), "</title></rect>"); n != 9 {
		t.Errorf("%d bars in the chart, want 9", n)
	}
}

// runSweep runs the sweep with o as command, fails the test unless it
// measured every cell and left the host as it found it, and returns the
// table it printed.
func runSweep(t *testing.T, o options, command string) string {
	t.Helper()
	before := hostNow(t)
	var stdout, stderr bytes.Buffer
	code := sweepMain(context.Background(), o, command, &stdout, &stderr)
	t.Logf("stderr:\n%s", stderr.String())
	if code != exitOK {
		t.Fatalf("exit code %d\n%s", code, stdout.String())
	}
	checkClean(t, before)
	return stdout.String()
}

// TestSweepAfpacketFeeder: -feeder afpacket, two queues, no GRO needed.
func TestSweepAfpacketFeeder(t *testing.T) {
	testenv.NeedRoot(t)
	o := tiny(t.TempDir())
	o.backends, o.loops, o.queues, o.feeder = []string{"afpacket"}, []string{loopRx}, []int{2}, feederAfpacket
	table := runSweep(t, o, "sweep")
	if !strings.Contains(table, "fed by afpacket on the peer") || len(rows(table)) != 2 {
		t.Errorf("table:\n%s", table)
	}
}

// TestSweepSteerAll: -steer all opens afxdp without a steering filter,
// its receive and forward cells are measured, and the notes say so.
func TestSweepSteerAll(t *testing.T) {
	testenv.NeedBPF(t)
	o := tiny(t.TempDir())
	o.backends, o.columns, o.loops, o.steer = []string{"afxdp"}, []string{colAfxdp}, []string{loopRx, loopFwd}, steerAll
	table := runSweep(t, o, "sweep")
	if rs := rows(table); len(rs) != 2 || !strings.Contains(table, "taking every frame of its queues (-steer all") || strings.Contains(table, "veth steering") {
		t.Errorf("table:\n%s", table)
	}
}

// TestSweepWriteHeaders: -write headers has afpacket's and afxdp's
// transmit loops write the headers only; their cells are measured and the
// notes say so.
func TestSweepWriteHeaders(t *testing.T) {
	testenv.NeedBPF(t)
	o := tiny(t.TempDir())
	o.columns, o.loops, o.write = []string{colAfpacket, colAfxdp}, []string{loopTx}, writeHeaders
	table := runSweep(t, o, "sweep")
	if rs := rows(table); len(rs) != 2 || !strings.Contains(table, "transmit (-write headers): packetio's loops write the Ethernet, IPv4 and UDP headers") {
		t.Errorf("table:\n%s", table)
	}
}

func TestSweepInterrupted(t *testing.T) {
	testenv.NeedBPF(t)
	before := hostNow(t)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	o := tiny(t.TempDir())
	o.loops = []string{loopRx} // interrupted with a feeder running and GRO on
	o.window = 5 * time.Second
	var stdout, stderr bytes.Buffer
	if code := sweepMain(ctx, o, "sweep", &stdout, &stderr); code != exitInterrupted {
		t.Fatalf("exit code %d, want %d\n%s", code, exitInterrupted, stderr.String())
	}
	checkClean(t, before)
}

// TestSweepTestpmdColumns: both testpmd columns on one queue; on two, the
// net_af_xdp one is skipped (a veth has no combined channels), not failed.
func TestSweepTestpmdColumns(t *testing.T) {
	testenv.NeedBPF(t)
	if _, err := exec.LookPath("dpdk-testpmd"); err != nil {
		testenv.CannotRun(t, "dpdk-testpmd is not installed (Debian's dpdk package has it; make test installs it)")
		return
	}
	o := tiny(t.TempDir())
	o.loops, o.queues, o.testpmd, o.backends, o.columns = []string{loopTx, loopRx}, []int{1, 2}, "dpdk-testpmd", nil, []string{colTestpmdPacket, colTestpmdXDP}
	out := runSweep(t, o, "sweep")
	for _, want := range []string{"| transmit | 64 | 1 | testpmd/af_packet | ", "| receive | 64 | 1 | testpmd/af_packet | ", "| transmit | 64 | 1 | testpmd/af_xdp | ",
		"| receive | 64 | 1 | testpmd/af_xdp | ", "| receive | 64 | 2 | testpmd/af_packet | "} {
		i := strings.Index(out, want)
		if i < 0 || strings.HasPrefix(out[i+len(want):], "—") {
			t.Errorf("no testpmd number for %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "| receive | 64 | 2 | testpmd/af_xdp | — | — | — | (reference) | — | — | — | — | skipped: ") {
		t.Errorf("testpmd/af_xdp on two queues not skipped:\n%s", out)
	}
}

// TestMain lets the test binary run a cell (dpdk/af_xdp) and the live
// feeder as the sweep's child processes, as the sweep binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == childFlag {
		os.Exit(childMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == feederFlag {
		os.Exit(feederMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestSweepReferenceColumns: the busy-polling afxdp column and its C twin,
// trafgen, tcpdump and netsniff-ng, at 1514 bytes: every cell measured,
// afxdp+busypoll held against C xsk+busypoll and afpacket against trafgen
// and tcpdump, and the host left clean (no tool left running).
func TestSweepReferenceColumns(t *testing.T) {
	testenv.NeedBPF(t)
	for _, tool := range []string{"cc", "trafgen", "netsniff-ng", "tcpdump", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.CannotRun(t, tool+" is not installed")
			return
		}
	}
	o := tiny(t.TempDir())
	o.loops, o.sizes = []string{loopTx, loopRx}, []int{1514}
	o.columns = []string{colKernel, colAfpacket, colTrafgen, colTcpdump, colNetsniff, colAfxdpBusy, colCxskBusy}
	o.window = 300 * time.Millisecond
	out := runSweep(t, o, "sweep")
	if n := len(rows(out)); n != 11 {
		t.Errorf("%d rows, want 11:\n%s", n, out)
	}
	for _, want := range []string{"| transmit | 1514 | 1 | afpacket | ", "| transmit | 1514 | 1 | trafgen | ", "| receive | 1514 | 1 | tcpdump | ",
		"| receive | 1514 | 1 | netsniff-ng | ", "| receive | 1514 | 1 | afxdp+busypoll | ", "| receive | 1514 | 1 | C xsk+busypoll | ", "| transmit | 1514 | 1 | C xsk+busypoll | "} {
		i := strings.Index(out, want)
		if i < 0 || strings.HasPrefix(out[i+len(want):], "—") {
			t.Errorf("no number for %q:\n%s", want, out)
		}
	}
	for _, l := range rows(out) {
		f := strings.Split(l, "|")
		col, ref, xref := strings.TrimSpace(f[4]), strings.TrimSpace(f[8]), strings.TrimSpace(f[9])
		if want := reference(strings.TrimSpace(f[1]), col); want != "" && (ref != want || xref == "—") {
			t.Errorf("%s: ref %q ×%s, want a ratio to %s", col, ref, xref, want)
		}
	}
}
