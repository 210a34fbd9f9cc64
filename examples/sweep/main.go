// Command sweep measures every packetio backend built into it through the
// same three loops, transmit, receive and forward, on veth pairs between
// throwaway namespaces it makes itself, at its defaults and at its best,
// beside the C and DPDK programs it is held against, and writes the result
// as a Markdown table (stdout), CSV and an SVG chart.
//
// Columns: the kernel's own UDP sockets (sendmmsg/recvmmsg; the baseline
// of every ×kernel ratio); afpacket; afxdp at its defaults and
// afxdp+busypoll (WithBusyPoll(50, 64), loops that never sleep in Poll);
// with -tags dpdk, dpdk/af_packet and dpdk/af_xdp (the dpdk backend over
// DPDK's net_af_packet and net_af_xdp; af_xdp in a child process of its
// own, since a closed net_af_xdp port keeps its queue bound until the
// process exits). References, each packetio column's ×ref: C xsk and
// C xsk+busypoll (xskref/xskref.c, built here with cc against libxdp) for
// afxdp; testpmd/af_packet and testpmd/af_xdp (dpdk-testpmd on the same
// vdev) for dpdk; trafgen (transmit) and tcpdump -w /dev/null (receive)
// for afpacket; netsniff-ng (receive) is shown too. A column whose tool
// is not installed is skipped with the reason.
//
// Every cell is the median over -passes of a fixed -window after a -warmup,
// the passes interleaved (every cell once per pass): packets per second
// (transmit counted at the sender, receive at the receive loop, forward as
// frames sent back out), the same in Gbit/s on the wire (frame with FCS),
// the whole machine's CPU in cores with its soft-interrupt share, cores per
// Mpps, and the ratios to the kernel and to the cell's reference, for each
// frame size of -sizes (64, 512, 1514 by default; the length of every
// frame a packetio loop takes is checked).
//
// Receive and forward are fed from the peer namespace from inside its
// kernel (internal/trafficgen: BPF_PROG_RUN with live frames, XDP_TX; one
// generator per queue of the row), which offers several times what any
// user-space sender on a veth can, so the receiver is what is measured. A
// veth takes such frames only while its NAPI is on: a native XDP program
// (afxdp, the C reference) does that; for every other receiver the sweep
// turns GRO on at the measured end for the cell (ETHTOOL_SGRO) and back off
// after. A kernel that refuses live frames gets an in-kernel circuit
// instead for rows of one queue (internal/trafficgen.Circuit: frames going
// round a veth pair of the feeder's own, a copy out each turn; it offers
// less, 1-2.6 Mpps here, but more than the forwarders take), and afpacket
// for rows of more (a circuit on every CPU starves the processes
// measured); the table says which fed. The generators or the circuit run
// in a process of their own (the sweep's -run-feeder child, in the peer
// namespace, its threads kept off the loops' CPUs), so the Go runtime's
// sysmon, which their long system calls wake every 20 µs, wakes there and
// not in the process measured. -feeder afpacket feeds from a packet
// socket instead, without BPF, from the sweep's own process.
//
// -sizes 9000 measures jumbo frames (an 8996-byte frame, FCS excluded)
// on a veth pair of their own, both ends at an MTU of 9000: afxdp, the C
// reference and afpacket receive and forward with multi-buffer (a packet
// is a chain of frames; afxdp's XDP program then has frags support,
// without which the kernel attaches no native program on that MTU),
// afpacket transmits from 16 KiB TX ring slots, and the feeder is afpacket
// on the peer (the live generator's frames are at most a page). The dpdk
// and testpmd cells are n/a there, with the reason in the cell.
//
// -frames N opens every packetio backend with N frames a queue instead of
// its default (afxdp receives faster with fewer: afxdp/README.md, "Frames
// in circulation"); the table's notes say so.
//
// Workers are pinned, the same way for every column: the loop of queue q
// on CPU q+1, the feeder's generator i on CPU i (modulo the CPUs there
// are).
//
//	sudo go run ./examples/sweep -quick
//	sudo go run -tags dpdk ./examples/sweep -out /tmp/perf
//
// The default run (1 queue, 5 passes, three sizes, every column) prints
// its estimate first and takes about 14 minutes on a 2-vCPU VM.
//
// Output files: with -out DIR, DIR/sweep.md, DIR/sweep.csv and
// DIR/sweep.svg; -csv and -svg name a file each instead. With none of the
// three, the files go to a new directory under $TMPDIR (printed), so a run
// never litters the working tree.
//
// Exit status: 0 when every cell was measured (cells that cannot run here,
// such as a missing testpmd, are skipped with a reason and do not count),
// 1 when setup failed or a cell failed (the table is still written), 2 for
// bad flags, 130 when interrupted (after the host is restored).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/examples/internal/backend"
	"github.com/packetio/packetio/examples/internal/testbed"
	"github.com/packetio/packetio/internal/host"
)

type options struct {
	backends       []string
	columns        []string // which columns to run (default: all)
	loops          []string
	queues         []int
	passes         int
	sizes          []int // on the wire, with FCS
	flows, batch   int
	warmup, window time.Duration
	testpmd        string // name or path; "" for none
	feeder         string // feederLive or feederAfpacket
	rewrite        string // rewriteRoute or rewriteMAC: what packetio's forward does to a frame
	steer          string // steerFilter or steerAll: what a steering backend takes in receive and forward
	write          string // writeFrame or writeHeaders: what packetio's transmit writes into each frame
	sysmon         string // sysmonAnywhere or sysmonFeeder: where Go's sysmon runs while a cell is measured
	frames         int    // frames a queue for packetio's backends (WithFrames); 0: each backend's default
	out, csv, svg  string
}

// maxFrames bounds -frames: the most frames a queue any backend's
// WithFrames takes (each backend refuses what it cannot do, naming it).
const maxFrames = 1 << 20

// exit codes.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInterrupted = 130
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == childFlag {
		os.Exit(childMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == feederFlag {
		os.Exit(feederMain(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	o, err := parseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(exitOK)
		}
		fmt.Fprintln(os.Stderr, "sweep:", err)
		os.Exit(exitUsage)
	}
	ctx, stop := testbed.Interrupted()
	defer stop()
	os.Exit(sweepMain(ctx, o, commandLine(), os.Stdout, os.Stderr))
}

// sweepMain runs the sweep, writes the outputs and returns the exit code.
func sweepMain(ctx context.Context, o options, command string, stdout, stderr io.Writer) int {
	t, err := run(ctx, o, command, stderr)
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "sweep: interrupted; the host is restored")
		return exitInterrupted
	}
	if t == nil {
		fmt.Fprintln(stderr, "sweep:", err)
		return exitFailed
	}
	code := exitOK
	if err != nil {
		fmt.Fprintln(stderr, "sweep:", err)
		code = exitFailed
	}
	if werr := t.markdown(stdout); werr != nil {
		fmt.Fprintln(stderr, "sweep: write table:", werr)
		return exitFailed
	}
	if werr := writeFiles(t, o, stderr); werr != nil {
		fmt.Fprintln(stderr, "sweep:", werr)
		return exitFailed
	}
	return code
}

func parseFlags(fs *flag.FlagSet, args []string) (options, error) {
	var o options
	var backends, columns, loopList, queues, sizes string
	var quick bool
	fs.StringVar(&backends, "backends", strings.Join(backend.Names(), ","), "packetio backends to measure (built in: "+strings.Join(backend.Names(), ", ")+"; dpdk needs -tags dpdk)")
	fs.StringVar(&columns, "columns", "all", "columns to run, of: "+columnList()+" (packetio ones only where -backends has their backend)")
	fs.StringVar(&loopList, "loops", strings.Join(loops, ","), "loops to run")
	fs.StringVar(&queues, "queues", "1", "queue counts to run, each a row (the tools and the C reference drive one queue)")
	fs.IntVar(&o.passes, "passes", 5, "passes; each cell reports the median")
	fs.StringVar(&sizes, "sizes", "64,512,1514", "frame sizes on the wire in bytes, FCS included (64 is a 60-byte frame), 64 to 1518, or 9000 (jumbo: a pair with an MTU of 9000, multi-buffer, an afpacket feeder)")
	fs.BoolVar(&quick, "quick", false, "a quick look: 64-byte frames, 1 pass, 100ms warm-up, 300ms window (flags after it still count)")
	fs.IntVar(&o.flows, "flows", 64, "UDP flows (source ports) per sender, so fanout and SO_REUSEPORT spread them")
	fs.IntVar(&o.batch, "batch", 256, "most packets per send or receive call, in every loop and the baseline")
	fs.DurationVar(&o.warmup, "warmup", 200*time.Millisecond, "time each cell runs before it is measured")
	fs.DurationVar(&o.window, "window", time.Second, "time each cell is measured over")
	fs.StringVar(&o.testpmd, "testpmd", "dpdk-testpmd", `dpdk-testpmd to run for the testpmd columns ("" for none); skipped with a note when not found`)
	fs.StringVar(&o.feeder, "feeder", feederLive, "what feeds receive and forward: live (frames from inside the peer's kernel, needs BPF) or afpacket (a packet socket on the peer, slower than most receivers)")
	fs.StringVar(&o.rewrite, "forward", rewriteRoute, "what packetio's forward loop does to each frame: route (an IPv4 router: header and checksum checks, TTL, longest-prefix match, MACs) or mac (what testpmd's mac forwarding does: the destination MAC set to the next hop's, the source to the port's, nothing else)")
	fs.StringVar(&o.write, "write", writeFrame, "what packetio's transmit loops write into each frame: frame (the whole frame, every time) or headers (the Ethernet, IPv4 and UDP headers only, the payload being whatever the buffer holds, as testpmd's txonly does; the C reference writes nothing per frame)")
	fs.StringVar(&o.steer, "steer", steerFilter, "what packetio's backends that steer (afxdp) take in receive and forward: filter (exactly the feeder's flow, "+feedFilter().String()+") or all (every frame of the queue, as the C reference and testpmd take)")
	fs.StringVar(&o.sysmon, "sysmon", sysmonAnywhere, "where the Go runtime's sysmon thread, of the sweep and of a packetio column's own process, may run while a cell is measured: anywhere (where the kernel puts it) or feeder (off the loops' CPUs). The live feeder's own process keeps its every thread off the loops' CPUs whatever this says; README.md, \"Where sysmon runs\"")
	fs.IntVar(&o.frames, "frames", 0, "frames a queue for packetio's backends (each one's WithFrames), or 0 for each backend's default; fewer frames keep afxdp's copy in cache (afxdp/README.md, \"Frames in circulation\")")
	fs.StringVar(&o.out, "out", "", "directory for sweep.md, sweep.csv and sweep.svg (default: a new directory under $TMPDIR, unless -csv or -svg is given)")
	fs.StringVar(&o.csv, "csv", "", "CSV file (default: sweep.csv in the output directory)")
	fs.StringVar(&o.svg, "svg", "", "SVG chart file (default: sweep.svg in the output directory)")
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, `usage: sweep [flags]   (as root)

Measures every packetio backend built in through three loops on a veth pair
between two throwaway namespaces it makes and removes:
  transmit  the measured side sends; counted at the sender
  receive   the peer floods the measured side; counted in its receive loop
  forward   the peer floods; the measured side rewrites each IPv4 frame in
            place (TTL, checksum, MACs; -forward mac: the MACs only, as
            testpmd's mac forwarding does) and sends it back out
Receive and forward are fed from inside the peer's kernel (trafficgen:
BPF_PROG_RUN live frames, XDP_TX, one generator per queue); receivers that
attach no native XDP program get GRO on at the measured end for the cell,
so the veth takes those frames. Loop q runs on CPU q+1, generator i on CPU i.
Columns (-columns): kernel UDP sockets (the baseline), afpacket, afxdp,
afxdp+busypoll, dpdk/af_packet and dpdk/af_xdp (-tags dpdk), and the
references they are held against (×ref): trafgen and tcpdump (afpacket),
C xsk and C xsk+busypoll (xskref.c, built with cc; afxdp), testpmd/af_packet
and testpmd/af_xdp (dpdk); netsniff-ng is shown too. Missing tools skip
their columns with the reason.
-sizes 9000 (jumbo) runs on a pair of its own with an MTU of 9000, with
multi-buffer, fed by afpacket on the peer; dpdk and testpmd are n/a there.
Each cell, per frame size (-sizes): median Mpps over -passes windows, Gbit/s,
whole-machine cores (user, sys and softirq from /proc/stat, the feeder
included) with the softirq share, cores per Mpps, ×kernel and ×ref.

Output: the Markdown table on stdout; sweep.md, sweep.csv and sweep.svg in
-out (default: a new directory under $TMPDIR); -csv and -svg name a file each.
Ctrl-C stops cleanly and restores the host.
Exit status: 0 all cells measured (skips with a reason are fine), 1 setup or
a cell failed (the table is still written), 2 bad flags, 130 interrupted.

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if quick {
		// Defaults for a quick look, under whatever was set explicitly.
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["sizes"] {
			sizes = "64"
		}
		if !set["passes"] {
			o.passes = 1
		}
		if !set["warmup"] {
			o.warmup = 100 * time.Millisecond
		}
		if !set["window"] {
			o.window = 300 * time.Millisecond
		}
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	o.backends = splitList(backends)
	for _, b := range o.backends {
		if !slices.Contains(backend.Names(), b) {
			// Not registered: Open opens nothing and says why (which tag).
			_, err := backend.Open(b, "", backend.Config{})
			return o, fmt.Errorf("-backends: %w", err)
		}
	}
	if columns == "all" {
		o.columns = allColumns()
	} else {
		var bad []string
		if o.columns, bad = parseColumns(splitList(columns)); len(bad) > 0 {
			return o, fmt.Errorf("-columns: unknown %q (have %s)", bad, columnList())
		}
	}
	for _, s := range splitList(sizes) {
		n, err := strconv.Atoi(s)
		if err != nil || !validSize(n) {
			return o, fmt.Errorf("-sizes: %q is not a frame size from 64 to 1518 bytes on the wire, nor 9000 (jumbo)", s)
		}
		if !slices.Contains(o.sizes, n) {
			o.sizes = append(o.sizes, n)
		}
	}
	o.loops = splitList(loopList)
	for _, l := range o.loops {
		if !slices.Contains(loops, l) {
			return o, fmt.Errorf("-loops: unknown loop %q (have %s)", l, strings.Join(loops, ", "))
		}
	}
	for _, s := range splitList(queues) {
		q, err := strconv.Atoi(s)
		if err != nil || q < 1 || q > 16 {
			return o, fmt.Errorf("-queues: %q is not a count from 1 to 16", s)
		}
		o.queues = append(o.queues, q)
	}
	switch {
	case len(o.queues) == 0 || len(o.loops) == 0 || len(o.sizes) == 0 || len(o.columns) == 0:
		return o, errors.New("-queues, -loops, -sizes and -columns must not be empty")
	case o.passes < 1 || o.passes > 100:
		return o, fmt.Errorf("-passes %d: 1 to 100", o.passes)
	case o.flows < 1 || o.flows > 254:
		return o, fmt.Errorf("-flows %d: 1 to 254", o.flows)
	case o.batch < 1 || o.batch > 1024:
		return o, fmt.Errorf("-batch %d: 1 to 1024", o.batch)
	case o.frames < 0 || o.frames > maxFrames:
		return o, fmt.Errorf("-frames %d: 0 (each backend's default) to %d", o.frames, maxFrames)
	case o.warmup < 0 || o.window < 100*time.Millisecond:
		return o, errors.New("-warmup must not be negative and -window at least 100ms")
	case !slices.Contains(feeders, o.feeder):
		return o, fmt.Errorf("-feeder %q: one of %s", o.feeder, strings.Join(feeders, ", "))
	case !slices.Contains(rewrites, o.rewrite):
		return o, fmt.Errorf("-forward %q: one of %s", o.rewrite, strings.Join(rewrites, ", "))
	case !slices.Contains(steers, o.steer):
		return o, fmt.Errorf("-steer %q: one of %s", o.steer, strings.Join(steers, ", "))
	case !slices.Contains(writes, o.write):
		return o, fmt.Errorf("-write %q: one of %s", o.write, strings.Join(writes, ", "))
	case !slices.Contains(sysmons, o.sysmon):
		return o, fmt.Errorf("-sysmon %q: one of %s", o.sysmon, strings.Join(sysmons, ", "))
	}
	return o, nil
}

// writeNote says what packetio's transmit loops write into each frame.
func writeNote(write string) string {
	if write == writeHeaders {
		return "transmit (-write headers): packetio's loops write the Ethernet, IPv4 and UDP headers (42 bytes) into each frame and leave the payload as the buffer holds it, as testpmd's txonly does (the C reference writes each frame once, at start, and nothing per frame; -write frame, the default, writes the whole frame every time; chains of jumbo frames are written whole either way)"
	}
	return "transmit (-write frame, the default): packetio's loops write the whole frame into each buffer every time, more work than testpmd's txonly (the headers only) and the C reference (nothing per frame), which -write headers does instead"
}

// forwardNote says what packetio's forward loops do to each frame.
func forwardNote(rewrite string) string {
	if rewrite == rewriteMAC {
		return "forward (-forward mac): packetio's loops set each frame's destination MAC to the next hop's and its source to the port's and look at nothing else, as testpmd's mac forwarding does (the IPv4 router, -forward route, the default, also checks the header and its checksum, decrements TTL and looks the destination up)"
	}
	return "forward (-forward route, the default): packetio's loops route each frame as an IPv4 router does (header and checksum checks, TTL less one, checksum updated, a longest-prefix match, both MACs), more work than testpmd's mac forwarding, which -forward mac does instead"
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// commandLine is how this program was run, as a user would type it.
func commandLine() string {
	cmd := filepath.Base(os.Args[0])
	if strings.Contains(os.Args[0], "go-build") {
		cmd = "go run ./examples/sweep"
		if slices.Contains(backend.Names(), "dpdk") {
			cmd = "go run -tags dpdk ./examples/sweep"
		}
	}
	if len(os.Args) > 1 {
		cmd += " " + strings.Join(os.Args[1:], " ")
	}
	return cmd
}

// run builds the pairs and the feeders and measures every cell. It returns
// the table whenever it got as far as measuring, with an error if a cell
// failed.
func run(ctx context.Context, o options, command string, log io.Writer) (t *table, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("the sweep makes veth pairs in throwaway namespaces: run it as root")
	}
	hadRunDir := exists(dpdkRunDir)
	defer func() {
		if rerr := removeTestpmdRuntime(); rerr != nil && err == nil {
			err = rerr
		}
		if !hadRunDir {
			os.Remove(dpdkRunDir) // only if empty: nothing else of ours is left
		}
	}()
	e := &env{feeder: o.feeder, rewrite: o.rewrite, steer: o.steer, write: o.write, sysmon: o.sysmon, frames: o.frames, size: o.sizes[0] - 4, flows: o.flows, batch: o.batch, warmup: o.warmup, window: o.window, cpus: allowedCPUs(), log: log}
	defer func() {
		if cerr := e.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	// The first pair now, so a machine that cannot make one fails here.
	first, err := e.rig(o.queues[0], isJumbo(o.sizes[0]))
	if err != nil {
		return nil, err
	}

	t = &table{header: machine(command)}
	t.passes, t.warmup, t.window, t.feeder = o.passes, o.warmup.String(), o.window.String(), first.feed.describe()
	if slices.ContainsFunc(o.sizes, isJumbo) {
		if slices.ContainsFunc(o.sizes, func(n int) bool { return !isJumbo(n) }) {
			t.feeder += " (jumbo frames: see the note on 9000 bytes)"
		}
		t.notes = append(t.notes, jumboNote())
	}
	t.notes = append(t.notes,
		fmt.Sprintf("placement, every column alike: the loop of queue q (a packetio worker, a kernel socket loop, testpmd's one forwarding lcore, the C reference, a tool) on CPU q+1, the feeder's generator i on CPU i, modulo the %d CPUs; a queue's receive work in softirq runs where its frames were sent from, the feeder's CPU; %s", len(e.cpus), sysmonNote(o.sysmon)),
		fmt.Sprintf("what the measured side sends (transmit, and forward's next hop) goes to %s at %s, a MAC nobody owns (a permanent neighbour entry): the peer's kernel drops each frame at its first look, so on a veth, where the receiving kernel's work runs on the sender's CPU, the sender is measured and not the peer's IP stack", sinkIP, sinkMAC),
		"kernel: plain UDP sockets in the measured namespace, one per queue, sendmmsg/recvmmsg in batches of "+strconv.Itoa(o.batch)+
			"; receive sockets share a port with SO_REUSEPORT; forward is a UDP relay (recvmmsg, then sendmmsg to that address)",
		writeNote(o.write),
		forwardNote(o.rewrite),
		"frame sizes: every packetio loop checks the length of every frame it takes (a cell where more than 1 % are not the size it measures fails), the kernel baseline the length recvmmsg returns; 1514 bytes on the wire is a 1510-byte frame, which the veth's 1500-byte MTU carries")
	var columns []string
	for _, col := range o.columns {
		switch b := backendOf(col); {
		case b == "" || slices.Contains(o.backends, b):
			columns = append(columns, col)
		}
	}
	for _, b := range o.backends {
		t.notes = append(t.notes, packetioNote(b, o.steer))
	}
	if o.frames > 0 {
		t.notes = append(t.notes, fmt.Sprintf("frames: every packetio backend opened with WithFrames(%d) a queue (-frames), not its default", o.frames))
	}
	if !slices.Contains(backend.Names(), "dpdk") {
		t.notes = append(t.notes, "dpdk: not built in (build with -tags dpdk for its columns)")
	}
	var tools testpmdTools
	if o.testpmd != "" && (slices.Contains(columns, colTestpmdPacket) || slices.Contains(columns, colTestpmdXDP)) {
		if tools, err = findTestpmd(o.testpmd); err != nil {
			t.notes = append(t.notes, "testpmd: columns skipped, "+err.Error())
			columns = slices.DeleteFunc(columns, isTestpmd)
		} else {
			t.notes = append(t.notes, "testpmd: "+tools.testpmd+" on the same veth, in the namespace, driven interactively with one forwarding lcore for every queue: txonly (UDP to the same address), rxonly, and mac forwarding (MACs rewritten, IP untouched: what packetio's -forward mac does, less work than its router) for forward; "+
				"its rate is its port counters (show port stats) read at both ends of the window; testpmd/af_packet is DPDK's net_af_packet (qpairs = queues), testpmd/af_xdp its net_af_xdp (queue_count = queues; the XDP program libxdp loads takes every frame of its queues); both drivers leave the interface promiscuous and bounce the link, which the sweep puts back after each run",
				testpmdXDPNote)
		}
	} else {
		t.notes = append(t.notes, "testpmd: columns not asked for")
		columns = slices.DeleteFunc(columns, isTestpmd)
	}
	var xsk *xskref
	if slices.ContainsFunc(columns, isXsk) {
		xsk = buildXskref(func(s string) { fmt.Fprintln(log, s) })
		defer xsk.close()
		t.notes = append(t.notes, xskNote)
	}
	for _, col := range []string{colTrafgen, colNetsniff, colTcpdump} {
		if slices.Contains(columns, col) && slices.Contains(o.loops, map[string]string{colTrafgen: loopTx, colNetsniff: loopRx, colTcpdump: loopRx}[col]) {
			t.notes = append(t.notes, toolNote(col))
		}
	}
	for _, l := range o.loops {
		for _, size := range o.sizes {
			for _, q := range o.queues {
				for _, c := range columns {
					if runsLoop(c, l) {
						c := &cell{loop: l, size: size, column: c, queues: q}
						if isJumbo(size) {
							c.note = jumboNA(c.column)
						}
						t.cells = append(t.cells, c)
					}
				}
			}
		}
	}
	t.order()
	fmt.Fprintf(log, "%d cells × %d passes: about %s (estimate)\n", len(t.cells), o.passes, estimate(t.cells, o).Round(time.Second))

	var failures []error
	for pass := 1; pass <= o.passes; pass++ {
		for _, c := range t.cells {
			if c.note != "" && !c.failed && len(c.passes) == 0 { // skipped for good
				continue
			}
			began := time.Now()
			s, err := e.runCell(ctx, c, tools, xsk)
			took := time.Since(began).Seconds()
			if ctx.Err() != nil {
				return t, ctx.Err()
			}
			switch {
			case errors.Is(err, errSkip):
				c.note = err.Error()
				fmt.Fprintf(log, "pass %d/%d %-8s %4dB %dq %-17s %v\n", pass, o.passes, c.loop, c.size, c.queues, c.column, err)
			case errors.Is(err, errDropped) && s.mpps > 0:
				c.passes = append(c.passes, s)
				c.note = err.Error()
				fmt.Fprintf(log, "pass %d/%d %-8s %4dB %dq %-17s %7.3f Mpps  %v\n", pass, o.passes, c.loop, c.size, c.queues, c.column, s.mpps, err)
			case err != nil:
				if !c.failed {
					c.note, c.failed = "failed: "+err.Error(), true
					failures = append(failures, fmt.Errorf("%s %dB %dq %s: %w", c.loop, c.size, c.queues, c.column, err))
				}
				fmt.Fprintf(log, "pass %d/%d %-8s %4dB %dq %-17s FAILED: %v\n", pass, o.passes, c.loop, c.size, c.queues, c.column, err)
			default:
				c.passes = append(c.passes, s)
				fmt.Fprintf(log, "pass %d/%d %-8s %4dB %dq %-17s %7.3f Mpps  %.2f cores (%.2f softirq)  offered %.3f  (%.1fs)\n", pass, o.passes, c.loop, c.size, c.queues, c.column, s.mpps, s.cores, s.softirq, s.offered, took)
			}
		}
	}
	return t, errors.Join(failures...)
}

// overhead is what a cell of column costs beyond its warm-up and window:
// starting and stopping what it measures (measured on a 2-vCPU VM with
// -quick: each cell took warm-up and window plus about this).
func overhead(column string) time.Duration {
	switch {
	case isTestpmd(column):
		return 900 * time.Millisecond
	case column == colDpdkXDP: // a child process with its own EAL
		return 800 * time.Millisecond
	case isXsk(column), toolOf(column) != "":
		return 550 * time.Millisecond
	case column == colDpdkPacket:
		return 300 * time.Millisecond
	}
	return 150 * time.Millisecond
}

// estimate is how long the sweep of cells will take.
func estimate(cells []*cell, o options) time.Duration {
	var d time.Duration
	for _, c := range cells {
		d += o.warmup + o.window + overhead(c.column)
	}
	return d * time.Duration(o.passes)
}

// testpmdXDPNote is what DPDK 22.11's net_af_xdp does by default.
const testpmdXDPNote = "testpmd/af_xdp and dpdk/af_xdp busy-poll: DPDK 22.11's net_af_xdp defaults its busy_budget devarg to 64, and with a budget it sets SO_PREFER_BUSY_POLL, SO_BUSY_POLL of 20 µs and SO_BUSY_POLL_BUDGET 64 on each socket, " +
	"and its receive path, finding the ring empty, calls recvfrom(MSG_DONTWAIT) to drive the busy poll instead of poll(2); busy_budget=0 turns that off (then it polls only when the fill ring needs a wakeup). So its twins here are afxdp+busypoll and C xsk+busypoll rather than the defaults"

// xskNote describes the C reference's columns.
const xskNote = "C xsk and C xsk+busypoll: xskref.c (this directory), built here with cc -O2 against libxdp: libxdp's xsk sockets, one socket on queue 0, need-wakeup, a 4096-frame UMEM of 2048-byte frames, 2048-entry rings, its own 5-instruction XDP program in native mode (so no GRO for its receive cells), the loops of the kernel's xdpsock (rxdrop, txonly, l2fwd); " +
	"C xsk loops as the kernel's xdpsock sample does by default: it spins on its rings and makes a system call only when need-wakeup asks (packetio's loops spin up to 50 µs, then sleep in poll(2)), with batches of the sweep's -batch; C xsk+busypoll spins with SO_PREFER_BUSY_POLL, SO_BUSY_POLL 50 µs and budget 64 (-B 50 -b 64), as afxdp+busypoll; it counts with its own clock (a \"T N\" line every 100 ms). " +
	"Its forward swaps the MACs and sends each frame back to the peer, whose IP stack then drops it (packetio's forward rewrites TTL, checksum and MACs and sends to the sink, dropped at the peer's first look); it does not check frame lengths. " +
	"At 9000 bytes it runs with -m (multi-buffer: a UMEM of 4096-byte frames, XDP_USE_SG, its program loaded with BPF_F_XDP_HAS_FRAGS; a packet is a chain of 3 descriptors marked XDP_PKT_CONTD, counted once; forward swaps the MACs in a chain's first frame and sends the chain back)"

// runCell measures one pass of one cell.
func (e *env) runCell(ctx context.Context, c *cell, tools testpmdTools, xsk *xskref) (sample, error) {
	e.size = c.size - 4
	r, err := e.rig(c.queues, isJumbo(c.size))
	if err != nil {
		return sample{}, err
	}
	if err := addSink(r.bed); err != nil {
		return sample{}, err
	}
	var subject running
	switch {
	case c.column == colKernel:
		subject, err = e.startKernel(ctx, r, c.loop)
	case isTestpmd(c.column):
		subject, err = e.startTestpmd(ctx, r, tools, c.column, c.loop)
	case isXsk(c.column):
		subject, err = e.startXsk(ctx, r, xsk, c.column, c.loop)
	case toolOf(c.column) != "":
		subject, err = e.startTool(ctx, r, c.column, c.loop)
	case c.column == colDpdkXDP:
		subject, err = e.startChild(ctx, r, c.column, c.loop)
	default:
		subject, err = e.startPacketio(ctx, r, c.column, c.loop)
	}
	if err != nil {
		return sample{}, err
	}
	undo := e.keepLoopCPUs(c.queues)
	s, merr := measure(ctx, subject, e.warmup, e.window)
	undo()
	serr := subject.stop()
	if left, err := clearXDP(r); err != nil || left != "" {
		fmt.Fprintf(e.log, "%s left %s on %s: detached (%v)\n", c.column, left, r.bed.Name, err)
		serr = errors.Join(serr, err)
	}
	if merr != nil {
		return sample{}, errors.Join(merr, serr)
	}
	if s.mpps == 0 {
		return s, errors.Join(errors.New("no packets in the window"), serr)
	}
	return s, serr
}

// keepLoopCPUs keeps Go's sysmon thread off the CPUs of a row's loops,
// under -sysmon feeder, until the returned func runs, and says on the log
// what it could not do (the cell is measured anyway).
func (e *env) keepLoopCPUs(queues int) func() {
	if e.sysmon != sysmonFeeder {
		return func() {}
	}
	cpus := e.loopCPUs(queues)
	_, undo, err := host.KeepSysmonOff(cpus)
	if err != nil {
		fmt.Fprintf(e.log, "sweep: keeping sysmon off CPUs %v: %v\n", cpus, err)
	}
	return func() {
		if err := undo(); err != nil {
			fmt.Fprintf(e.log, "sweep: giving sysmon its CPUs back: %v\n", err)
		}
	}
}

// sysmonNote is the placement note's word on sysmon under -sysmon s.
func sysmonNote(s string) string {
	if s == sysmonFeeder {
		return "-sysmon feeder: over each cell's warm-up and window Go's sysmon thread, of the sweep and of a packetio column's own process, is kept off the loops' CPUs (internal/host.KeepSysmonOff); on a loop's CPU it would preempt the loop each time it wakes"
	}
	return "Go's sysmon thread of the process measured runs where the kernel puts it (-sysmon anywhere); the live feeder's, which its generators' long system calls wake every 20 µs, is in the feeder's own process, kept off the loops' CPUs"
}

// machine describes where the sweep runs.
func machine(command string) header {
	h := header{date: time.Now().UTC().Format("2006-01-02 15:04 MST"), cpus: runtime.NumCPU(), command: command, cpu: "unknown CPU", kernel: "unknown"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				h.cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.kernel = unix.ByteSliceToString(u.Release[:])
	}
	return h
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// writeFiles writes the Markdown, CSV and SVG files the options ask for.
func writeFiles(t *table, o options, log io.Writer) error {
	dir := o.out
	if dir == "" && o.csv == "" && o.svg == "" {
		d, err := os.MkdirTemp("", "sweep-")
		if err != nil {
			return fmt.Errorf("output directory: %w", err)
		}
		dir = d
	}
	type file struct {
		path  string
		write func(io.Writer) error
	}
	var files []file
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("output directory: %w", err)
		}
		files = append(files, file{filepath.Join(dir, "sweep.md"), t.markdown})
		if o.csv == "" {
			o.csv = filepath.Join(dir, "sweep.csv")
		}
		if o.svg == "" {
			o.svg = filepath.Join(dir, "sweep.svg")
		}
	}
	if o.csv != "" {
		files = append(files, file{o.csv, t.csv})
	}
	if o.svg != "" {
		files = append(files, file{o.svg, t.svg})
	}
	for _, f := range files {
		if err := writeFile(f.path, f.write); err != nil {
			return err
		}
		fmt.Fprintln(log, "wrote", f.path)
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	w := bufio.NewWriter(f)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
