package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/examples/internal/metrics"
	"github.com/packetio/packetio/examples/internal/testbed"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{1, 1, 100}, 1},
		{[]float64{0, 0}, 0},
	} {
		in := append([]float64(nil), tc.in...)
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
		for i := range in {
			if in[i] != tc.in[i] {
				t.Fatalf("median reordered its input: %v", tc.in)
			}
		}
	}
	if !math.IsNaN(median(nil)) {
		t.Error("median of nothing is a number")
	}
}

func TestRatio(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		a, b, want float64
	}{
		{2, 1, 2},
		{1, 4, 0.25},
		{1, 0, nan},
		{nan, 1, nan},
		{1, nan, nan},
	} {
		got := ratio(tc.a, tc.b)
		if got != tc.want && !(math.IsNaN(got) && math.IsNaN(tc.want)) {
			t.Errorf("ratio(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestSampleOf(t *testing.T) {
	t0 := time.Unix(0, 0)
	a := metrics.Sample{When: t0, CPU: metrics.CPUTime{User: 100, System: 100, Idle: 1000}}
	b := metrics.Sample{When: t0.Add(2 * time.Second), CPU: metrics.CPUTime{User: 200, System: 150, SoftIRQ: 50, Idle: 1200}}
	s := sampleOf(3_000_000, a, b)
	if s.mpps != 1.5 || s.cores != 1 || s.softirq != 0.25 {
		t.Fatalf("sampleOf = %+v", s)
	}
	if (sampleOf(5, b, b) != sample{}) {
		t.Fatal("zero interval gave a rate")
	}
}

// fixture is a small table with every kind of cell: measured, skipped,
// failed, a baseline, a testpmd column.
func fixture() *table {
	nan := math.NaN()
	t := &table{header: header{
		date: "2026-11-30 12:00 UTC", cpu: "Test CPU", kernel: "6.18.0", command: "sweep -passes 3",
		cpus: 2, passes: 3, warmup: "500ms", window: "2s", feeder: "fed by a test feeder",
		notes: []string{"a note"},
	}}
	t.cells = []*cell{
		{loop: loopFwd, size: 64, column: "afpacket", queues: 1, passes: []sample{{0.8, 1.5, 0.7, 0.9}, {0.9, 1.6, 0.8, 0.9}, {0.7, 1.4, 0.6, 0.9}}},
		{loop: loopTx, size: 64, column: colTestpmdPacket, queues: 1, passes: []sample{{0.9, 1, 0.5, nan}}},
		{loop: loopTx, size: 64, column: colTestpmdXDP, queues: 1, passes: []sample{{0.95, 1, 0.5, nan}}},
		{loop: loopTx, size: 64, column: "afpacket", queues: 1, passes: []sample{{1.2, 1, 0.6, nan}, {1.0, 1.2, 0.7, nan}, {1.1, 1.1, 0.65, nan}}},
		{loop: loopTx, size: 64, column: colKernel, queues: 1, passes: []sample{{0.5, 1, 0.5, nan}, {0.55, 1, 0.5, nan}, {0.45, 1, 0.5, nan}}},
		{loop: loopFwd, size: 64, column: colKernel, queues: 1, note: "failed: boom", failed: true},
		{loop: loopRx, size: 64, column: "afpacket", queues: 2, note: "skipped: cannot"},
		{loop: loopRx, size: 64, column: colKernel, queues: 2, passes: []sample{{0.4, 1.2, 0.5, 0.8}}},
		{loop: loopTx, size: 64, column: colTrafgen, queues: 1, passes: []sample{{2.2, 1, 0.3, nan}}},
		{loop: loopTx, size: 64, column: colDpdkPacket, queues: 1, passes: []sample{{0.855, 1, 0.5, nan}}},
		{loop: loopTx, size: 1514, column: colKernel, queues: 1, passes: []sample{{0.4, 1, 0.5, nan}}},
		{loop: loopTx, size: 1514, column: colAfxdp, queues: 1, passes: []sample{{0.5, 0.8, 0.4, nan}}},
		{loop: loopTx, size: 1514, column: colCxsk, queues: 1, note: "skipped: cc not found"},
		{loop: loopTx, size: 9000, column: colKernel, queues: 1, passes: []sample{{0.7, 2, 0.2, nan}, {0.8, 2, 0.2, nan}}},
		{loop: loopTx, size: 9000, column: colAfxdp, queues: 1, passes: []sample{{1.0, 2, 0.3, nan}, {1.1, 2, 0.3, nan}}},
		{loop: loopTx, size: 9000, column: colTestpmdXDP, queues: 1, note: jumboNA(colTestpmdXDP)},
		{loop: loopRx, size: 9000, column: colAfpacket, queues: 1, passes: []sample{{0.4, 2, 0.6, 0.42}}},
	}
	t.order()
	return t
}

func TestOrder(t *testing.T) {
	var got []string
	for _, c := range fixture().cells {
		got = append(got, c.loop+"/"+c.column)
	}
	want := "transmit/kernel transmit/afpacket transmit/trafgen transmit/dpdk/af_packet transmit/testpmd/af_packet transmit/testpmd/af_xdp " +
		"transmit/kernel transmit/afxdp transmit/C xsk transmit/kernel transmit/afxdp transmit/testpmd/af_xdp receive/kernel receive/afpacket receive/afpacket forward/kernel forward/afpacket"
	if strings.Join(got, " ") != want {
		t.Fatalf("order %q\nwant  %q", strings.Join(got, " "), want)
	}
}

func TestSummaries(t *testing.T) {
	tb := fixture()
	sums := tb.summaries()
	check := func(i int, mpps, ratio, cores float64) {
		t.Helper()
		s := sums[i]
		eq := func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) || math.Abs(a-b) < 1e-9 }
		if !eq(s.mpps, mpps) || !eq(s.ratio, ratio) || !eq(s.cores, cores) {
			t.Errorf("%s/%s: mpps %v ratio %v cores %v, want %v %v %v", tb.cells[i].loop, tb.cells[i].column, s.mpps, s.ratio, s.cores, mpps, ratio, cores)
		}
	}
	nan := math.NaN()
	check(0, 0.5, 1, 1)      // the baseline against itself
	check(1, 1.1, 2.2, 1.1)  // medians of each measure
	check(4, 0.9, 1.8, 1)    // one pass
	check(5, 0.95, 1.9, 1)   // the other testpmd column
	check(7, 0.5, 1.25, 0.8) // another size has its own baseline
	check(10, 1.05, 1.4, 2)  // 9000 bytes against the 9000-byte baseline
	check(11, nan, nan, nan) // n/a at 9000 bytes
	check(13, nan, nan, nan) // skipped
	check(16, 0.8, nan, 1.5) // its baseline failed: no ratio
	if !math.IsNaN(sums[4].offered) || sums[16].offered != 0.9 {
		t.Errorf("offered %v, %v", sums[4].offered, sums[16].offered)
	}
	// ×ref: afpacket against trafgen, dpdk against testpmd on its driver;
	// none where the reference has no number or there is no reference.
	for _, tc := range []struct {
		i    int
		ref  string
		want float64
	}{{1, colTrafgen, 0.5}, {3, colTestpmdPacket, 0.95}, {7, colCxsk, nan}, {0, "", nan}, {2, "", nan}} {
		if s := sums[tc.i]; s.ref != tc.ref || !(math.Abs(s.refRatio-tc.want) < 1e-9 || math.IsNaN(s.refRatio) && math.IsNaN(tc.want)) {
			t.Errorf("%s: ref %q ×%v, want %q ×%v", tb.cells[tc.i].column, s.ref, s.refRatio, tc.ref, tc.want)
		}
	}
	if g := sums[7].gbps; math.Abs(g-0.5*1514*8/1000) > 1e-9 {
		t.Errorf("Gbit/s %v", g)
	}
	if g := sums[10].gbps; math.Abs(g-1.05*9000*8/1000) > 1e-9 {
		t.Errorf("jumbo Gbit/s %v", g)
	}
	if p := sums[1].perMpps; math.Abs(p-1) > 1e-9 {
		t.Errorf("cores/Mpps %v", p)
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; got:\n%s", name, got)
	}
}

func TestMarkdownGolden(t *testing.T) {
	var b bytes.Buffer
	if err := fixture().markdown(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "table.md", b.Bytes())
	for _, want := range []string{"| transmit | 64 | 1 | afpacket | 1.100 | 0.56 | 2.20 | trafgen | 0.50 | 1.10 (0.65) | 1.00 | — | 1.200 1.000 1.100 |",
		"| transmit | 64 | 1 | dpdk/af_packet | 0.855 | 0.44 | 1.71 | testpmd/af_packet | 0.95 |", "| transmit | 64 | 1 | trafgen | 2.200 | 1.13 | 4.40 | (reference) | — |",
		"| transmit | 1514 | 1 | afxdp | 0.500 | 6.06 | 1.25 | C xsk | — | 0.80 (0.40) | 1.60 |", "| transmit | 1514 | 1 | C xsk | — | — | — | (reference) | — | — | — | — | skipped: cc not found |",
		"| forward | 64 | 1 | kernel | — | — | — | — | — | — | — | — | failed: boom |", "fed by a test feeder", "`sweep -passes 3`", "Test CPU, 2 CPUs, Linux 6.18.0"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q", want)
		}
	}
}

func TestCSV(t *testing.T) {
	var b bytes.Buffer
	if err := fixture().csv(&b); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 18 || strings.Join(recs[0], ",") != strings.Join(csvHeader, ",") {
		t.Fatalf("csv %q", recs)
	}
	for _, r := range recs {
		if len(r) != len(csvHeader) {
			t.Fatalf("row %q has %d fields", r, len(r))
		}
	}
	if got := strings.Join(recs[2], ","); got != "transmit,64,1,afpacket,3,1.1000,0.563,2.200,trafgen,0.500,1.100,0.650,1.000,,1.2000;1.0000;1.1000," {
		t.Errorf("afpacket row %q", got)
	}
	if got := strings.Join(recs[6], ","); got != "transmit,64,1,testpmd/af_xdp,1,0.9500,0.486,1.900,,,1.000,0.500,1.053,,0.9500," {
		t.Errorf("testpmd/af_xdp row %q", got)
	}
	if got := strings.Join(recs[16], ","); got != "forward,64,1,kernel,0,,,,,,,,,,,failed: boom" {
		t.Errorf("failed row %q", got)
	}
	// The jumbo rows: Gbit/s from 9000 bytes on the wire, and an n/a
	// cell that says why.
	if got := strings.Join(recs[11], ","); got != "transmit,9000,1,afxdp,2,1.0500,75.600,1.400,C xsk,,2.000,0.300,1.909,,1.0000;1.1000," {
		t.Errorf("jumbo afxdp row %q", got)
	}
	if got := recs[12]; got[3] != colTestpmdXDP || got[5] != "" || !strings.HasPrefix(got[15], "n/a: testpmd") {
		t.Errorf("jumbo testpmd/af_xdp row %q", got)
	}
}

func TestSVGGolden(t *testing.T) {
	var b bytes.Buffer
	if err := fixture().svg(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "chart.svg", b.Bytes())
	s := b.String()
	if !strings.HasPrefix(s, "<svg ") || !strings.HasSuffix(s, "</svg>\n") {
		t.Fatal("not one svg element")
	}
	// One bar per measured cell, with its title.
	if n := strings.Count(s, "</title></rect>"); n != 13 {
		t.Errorf("%d bars, want 13", n)
	}
	for _, want := range []string{"transmit, 64-byte frames", "transmit, 1514-byte frames", "receive, 64-byte frames, 2 queues", "forward, 64-byte frames",
		"afpacket transmit 64 bytes 1q: 1.100 Mpps, 0.56 Gbit/s", `fill="url(#hatch-afpacket)" stroke="#1f77b4"><title>trafgen`, "★ 2.200 Mpps", "— skipped", "— failed", "transmit, 9000-byte frames", "— n/a", "afxdp transmit 9000 bytes 1q: 1.050 Mpps, 75.60 Gbit/s",
		`stroke-dasharray="4,3"`} {
		if !strings.Contains(s, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 10, ""},
		{"one two three", 7, "one two/three"},
		{"one two three", 100, "one two three"},
		{"a verylongword b", 4, "a/verylongword/b"},
	} {
		if got := strings.Join(wrap(tc.in, tc.n), "/"); got != tc.want {
			t.Errorf("wrap(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestNiceCeil(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{{0, 1}, {0.7, 0.8}, {1.1, 1.5}, {3, 3}, {3.1, 4}, {12, 15}, {50, 50}, {81, 100}} {
		if got := niceCeil(tc.in); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("niceCeil(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	parse := func(args ...string) (options, error) {
		fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		return parseFlags(fs, args)
	}
	o, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	if len(o.queues) != 1 || o.passes != 5 || !slices.Equal(o.sizes, []int{64, 512, 1514}) || len(o.loops) != 3 || o.testpmd != "dpdk-testpmd" {
		t.Fatalf("defaults %+v", o)
	}
	if !slices.Contains(o.backends, "afxdp") || !slices.Contains(o.backends, "afpacket") {
		t.Fatalf("default backends %v", o.backends)
	}
	if o.frames != 0 {
		t.Errorf("default -frames %d, want 0 (each backend's default)", o.frames)
	}
	if o, err := parse("-frames", "2048"); err != nil || o.frames != 2048 {
		t.Errorf("-frames 2048: %d, %v", o.frames, err)
	}
	if _, err := parse("-frames", "-1"); err == nil || !strings.Contains(err.Error(), "-frames -1") {
		t.Errorf("-frames -1: %v, want an error naming it", err)
	}
	if o, err := parse("-sizes", "64,9000"); err != nil || !slices.Equal(o.sizes, []int{64, 9000}) {
		t.Fatalf("-sizes 64,9000: %+v, %v", o, err)
	}
	// The choices: each flag's default, and the other value taken.
	for _, c := range []struct {
		flag, def, other string
		got              func(options) string
	}{
		{"-feeder", feederLive, feederAfpacket, func(o options) string { return o.feeder }},
		{"-forward", rewriteRoute, rewriteMAC, func(o options) string { return o.rewrite }},
		{"-steer", steerFilter, steerAll, func(o options) string { return o.steer }},
		{"-write", writeFrame, writeHeaders, func(o options) string { return o.write }},
		{"-sysmon", sysmonAnywhere, sysmonFeeder, func(o options) string { return o.sysmon }},
	} {
		if c.got(o) != c.def {
			t.Errorf("default %s %q, want %q", c.flag, c.got(o), c.def)
		}
		if o, err := parse(c.flag, c.other); err != nil || c.got(o) != c.other {
			t.Errorf("%s %s: %q, %v", c.flag, c.other, c.got(o), err)
		}
	}
	for _, bad := range [][]string{{"-queues", "0"}, {"-queues", "x"}, {"-passes", "0"}, {"-sizes", "60"}, {"-sizes", "64,9001"}, {"-sizes", "1519"}, {"-sizes", "8999"}, {"-columns", "nope"}, {"-loops", "nope"},
		{"-backends", "mlx5"}, {"-backends", "nope"}, {"-window", "1ms"}, {"-feeder", "pigeon"}, {"-forward", "l2"}, {"-steer", "some"}, {"-write", "payload"}, {"-sysmon", "cpu1"}, {"-frames", "x"}, {"-frames", "2000000"}, {"extra"}} {
		if _, err := parse(bad...); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestFramesReachTheBackends: -frames opens every packetio backend with
// that many frames a queue, in this process and in a cell's child (the
// next to last of its arguments, -sysmon the last), and 0 leaves each
// backend its default; a child told a bad count or a bad -sysmon refuses
// it by name.
func TestFramesReachTheBackends(t *testing.T) {
	r := &rig{queues: 1, bed: &testbed.Bed{Name: "veth-x"}, macA: sinkMAC, macB: sinkMAC}
	for _, frames := range []int{0, 2048} {
		e := &env{frames: frames, cpus: []int{0, 1}, rewrite: rewriteMAC, steer: steerFilter, write: writeFrame, sysmon: sysmonFeeder}
		for _, col := range []string{colAfxdp, colAfpacket} {
			if got := e.config(false, col, 1, 1).Frames; got != frames {
				t.Errorf("-frames %d: %s opens with %d frames", frames, col, got)
			}
		}
		args := e.childArgs("sweep", colAfxdp, loopFwd, r)
		if len(args) != 17 || args[len(args)-2] != strconv.Itoa(frames) || args[len(args)-1] != sysmonFeeder {
			t.Errorf("-frames %d -sysmon feeder: child arguments %q", frames, args)
		}
	}
	e := &env{cpus: []int{0, 1}, rewrite: rewriteMAC, steer: steerFilter, write: writeFrame, sysmon: sysmonAnywhere}
	for _, bad := range []struct {
		at   int // from the end
		arg  string
		said string
	}{{2, "-5", `frames "-5"`}, {1, "cpu1", "sysmon (anywhere or feeder)"}} {
		args := e.childArgs("sweep", colAfxdp, loopFwd, r)
		args[len(args)-bad.at] = bad.arg
		var stderr strings.Builder
		if code := childMain(args[2:], io.Discard, &stderr); code != exitUsage || !strings.Contains(stderr.String(), bad.said) {
			t.Errorf("child with %q: exit %d, %q; want %d naming %s", bad.arg, code, stderr.String(), exitUsage, bad.said)
		}
	}
}

func TestPmdParser(t *testing.T) {
	p := newPmdParser()
	block := func(rx, tx string) {
		for _, l := range []string{
			"testpmd> show port stats 0",
			"  ######################## NIC statistics for port 0  ########################",
			"  RX-packets: " + rx + "          RX-missed: 0          RX-bytes:  0",
			"  RX-errors: 0",
			"  TX-packets: " + tx + "    TX-errors: 0          TX-bytes:  312731520",
			"  Tx-pps:      1770913          Tx-bps:    850038512",
		} {
			p.line(l)
		}
	}
	block("500", "1000000")
	block("1500000", "4000000")
	// The summary "stop" prints is not a reading.
	p.line("  TX-packets: 99999999        TX-dropped: 0             TX-total: 99999999")
	p.line("  RX-packets: 5              RX-dropped: 0             RX-total: 5")
	if got := <-p.readings; got != (pmdStat{rx: 500, tx: 1000000}) {
		t.Errorf("first reading %+v", got)
	}
	if got := <-p.readings; got != (pmdStat{rx: 1500000, tx: 4000000}) {
		t.Errorf("second reading %+v", got)
	}
	if len(p.readings) != 0 {
		t.Errorf("%d readings too many", len(p.readings))
	}
	if !strings.Contains(p.lastLines(), "RX-total: 5") {
		t.Errorf("last lines %q", p.lastLines())
	}
	boom := errors.New("boom")
	if err := p.failure(boom); err != boom {
		t.Errorf("failure with nothing said: %v", err)
	}
	p.line("init_internals(): Specified queue count 2 is larger than combined queue count 1.")
	if err := p.failure(boom); !errors.Is(err, errSkip) || !strings.Contains(err.Error(), "combined queue count 1") {
		t.Errorf("failure after the driver refused the queues: %v", err)
	}
}

func TestTestpmdArgs(t *testing.T) {
	tools := testpmdTools{testpmd: "/usr/bin/dpdk-testpmd", nsenter: "/usr/bin/nsenter", stdbuf: "/usr/bin/stdbuf"}
	got := strings.Join(testpmdArgs(tools, "pio1t1", colTestpmdPacket, "veth0", loopTx, 2, 60, "02:00:00:00:00:02"), " ")
	for _, want := range []string{"--net=/proc/self/fd/3 /usr/bin/stdbuf -oL /usr/bin/dpdk-testpmd --no-huge", "--file-prefix pio1t1", "--vdev=net_af_packet0,iface=veth0,qpairs=2",
		"-- -i ", "--forward-mode=txonly", "--txpkts=60", "--rxq=2 --txq=2", "--eth-peer=0,02:00:00:00:00:02"} {
		if !strings.Contains(got, want) {
			t.Errorf("args lack %q: %s", want, got)
		}
	}
	got = strings.Join(testpmdArgs(tools, "pio1t2", colTestpmdXDP, "veth0", loopFwd, 1, 60, "02:00:00:00:00:02"), " ")
	for _, want := range []string{"--vdev=net_af_xdp0,iface=veth0,start_queue=0,queue_count=1", "--forward-mode=mac", "--port-topology=loop"} {
		if !strings.Contains(got, want) {
			t.Errorf("args lack %q: %s", want, got)
		}
	}
}

func TestSetFlow(t *testing.T) {
	b := make([]byte, 60)
	// An IPv4 header whose checksum must stay right after the rewrite.
	b[12], b[13], b[14] = 0x08, 0x00, 0x45
	setFlow(b, 34, 5, true)
	if b[34] != 0x04 || b[35] != 0x05 || b[33] != 6 {
		t.Fatalf("port %x%x, last address byte %d", b[34], b[35], b[33])
	}
	if c := sumHeader(b[14:34]); c != 0xffff {
		t.Fatalf("header checksum does not verify: %#x", c)
	}
}

// sumHeader is the ones' complement sum of an IPv4 header (0xffff when its
// checksum is right).
func sumHeader(h []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(h); i += 2 {
		s += uint32(h[i])<<8 | uint32(h[i+1])
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return uint16(s)
}

// TestDefaultBudget: the default run, every column built with -tags dpdk
// and every tool there, is estimated within the 15 minutes it must take.
func TestDefaultBudget(t *testing.T) {
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	o, err := parseFlags(fs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cells []*cell
	for _, l := range o.loops {
		for _, size := range o.sizes {
			for _, c := range allColumns() {
				if runsLoop(c, l) {
					cells = append(cells, &cell{loop: l, size: size, column: c, queues: 1})
				}
			}
		}
	}
	if len(cells) != 99 {
		t.Errorf("%d cells, want 99 (33 per size)", len(cells))
	}
	if d := estimate(cells, o); d > 15*time.Minute {
		t.Errorf("default run estimated at %v, more than 15 minutes", d)
	} else {
		t.Logf("default run: %d cells × %d passes, about %v", len(cells), o.passes, d.Round(time.Second))
	}
}

func TestReference(t *testing.T) {
	for _, tc := range []struct{ loop, column, want string }{
		{loopTx, colAfpacket, colTrafgen}, {loopRx, colAfpacket, colTcpdump}, {loopFwd, colAfpacket, ""},
		{loopRx, colAfxdp, colCxsk}, {loopFwd, colAfxdpBusy, colCxskBusy},
		{loopTx, colDpdkPacket, colTestpmdPacket}, {loopRx, colDpdkXDP, colTestpmdXDP},
		{loopTx, colKernel, ""}, {loopTx, colCxsk, ""}, {loopRx, colNetsniff, ""},
	} {
		if got := reference(tc.loop, tc.column); got != tc.want {
			t.Errorf("reference(%s, %s) = %q, want %q", tc.loop, tc.column, got, tc.want)
		}
		if r := reference(tc.loop, tc.column); r != "" && (!isReference(r) || !runsLoop(r, tc.loop) || family(r) != tc.column) {
			t.Errorf("%s's reference %s is not a reference of its family that runs %s", tc.column, r, tc.loop)
		}
	}
}

func TestLengths(t *testing.T) {
	l := &lengths{want: 60}
	d := func(n ...uint32) []packetio.Desc {
		var ds []packetio.Desc
		for _, x := range n {
			ds = append(ds, packetio.Desc{Len: x})
		}
		return ds
	}
	if got := l.check(d(60, 60, 60)); got != 3 {
		t.Fatalf("check counted %d right", got)
	}
	if got := l.check(d(60, 1510)); got != 1 || l.wrong.Load() != 1 {
		t.Fatalf("check counted %d right, %d wrong", got, l.wrong.Load())
	}
	if err := l.verdict(100); err != nil {
		t.Errorf("1 wrong in 101: %v", err)
	}
	if err := l.verdict(50); err == nil || !strings.Contains(err.Error(), "not the size") {
		t.Errorf("1 wrong in 51: %v", err)
	}
}

func TestXskArgs(t *testing.T) {
	got := strings.Join(xskArgs("/tmp/x/xskref", colCxsk, loopRx, "veth0", 1, 256, nil, false), " ")
	if got != "/tmp/x/xskref rx -i veth0 -q 0 -c 1 -b 256" {
		t.Errorf("C xsk rx: %s", got)
	}
	got = strings.Join(xskArgs("xskref", colCxskBusy, loopTx, "veth0", 1, 1024, []byte{0xde, 0xad}, false), " ")
	if got != "xskref tx -i veth0 -q 0 -c 1 -B 50 -b 64 -f dead" {
		t.Errorf("C xsk+busypoll tx: %s", got)
	}
	got = strings.Join(xskArgs("xskref", colCxsk, loopFwd, "veth0", 1, 256, nil, true), " ")
	if got != "xskref fwd -i veth0 -q 0 -c 1 -m -b 256" {
		t.Errorf("C xsk fwd, multi-buffer: %s", got)
	}
	if m := xskMode(loopFwd); m != "fwd" {
		t.Errorf("forward mode %q", m)
	}
	r := &xskReadings{first: make(chan struct{})}
	for _, l := range []string{"xskref: hello", "1 2 3", "x 5", "2000000000 10", "3000000000 25"} {
		r.line(l)
	}
	if got := r.get(); got != (reading{n: 25, at: 3}) {
		t.Errorf("last reading %+v", got)
	}
	select {
	case <-r.first:
	default:
		t.Error("first reading not signalled")
	}
}

func TestToolParsing(t *testing.T) {
	if got := trafgenConfig([]byte{0x02, 0xff}, 1); got != "cpu(1): {0x02,0xff}\n" {
		t.Errorf("trafgen config %q", got)
	}
	if m := tcpdumpCaptured.FindStringSubmatch("tcpdump: 2926070 packets captured, 3050248 packets received by filter, 122067 packets dropped by kernel"); m == nil || m[1] != "2926070" {
		t.Errorf("tcpdump line: %v", m)
	}
	if m := tcpdumpCaptured.FindStringSubmatch("2936414 packets captured"); m == nil || m[1] != "2936414" {
		t.Errorf("tcpdump summary: %v", m)
	}
	for _, c := range []string{colTrafgen, colNetsniff, colTcpdump} {
		if toolOf(c) == "" || toolNote(c) == "" {
			t.Errorf("%s: no tool or note", c)
		}
	}
}

// TestXskrefWithoutCompiler: no C compiler skips the C columns with the
// reason, it does not fail them.
func TestXskrefWithoutCompiler(t *testing.T) {
	t.Setenv("CC", "no-such-cc-here")
	x := buildXskref(func(string) {})
	defer x.close()
	if x.bin != "" || !strings.Contains(x.skip, "no-such-cc-here not found") {
		t.Fatalf("built %q, skip %q", x.bin, x.skip)
	}
	var e env
	_, err := e.startXsk(context.Background(), nil, x, colCxsk, loopRx)
	if !errors.Is(err, errSkip) || !strings.Contains(err.Error(), "not found") {
		t.Errorf("startXsk: %v", err)
	}
}
