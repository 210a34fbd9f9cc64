package main

// The live feeder in a process of its own.
//
// The live feeder's generators spend their time in BPF_PROG_RUN calls of a
// quarter of a second. While any goroutine sits in a long system call the
// Go runtime's sysmon thread wakes every 20 µs, and the kernel puts it
// where it likes: on a measured loop's CPU it preempts the loop, a few
// thousand times a second (README, "Where sysmon runs"). So the feeder runs
// as a child of the sweep (-run-feeder) in the peer namespace, every one of
// its threads kept off the loops' CPUs: its sysmon takes the feeder's time,
// and the process measured keeps a sysmon that its own loops alone wake.
//
// The parent drives it over its standard input, one command a line, and
// reads one answer a line, "= " and the answer, from its output (anything
// else there is log, kept for error messages):
//
//	feed MAC IP PORT SIZE   start feeding: "ok" or "error ..."
//	sent                    frames offered so far: a number or "error ..."
//	stop                    end the feed: "ok" or "error ..." (why it ended early)
//
// It answers "ready" once it has started; at the end of its input, or on
// SIGINT, it stops the feed, unloads its programs and exits.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/packetio/packetio/examples/internal/testbed"
	"github.com/packetio/packetio/internal/host"
)

const feederFlag = "-run-feeder"

// How long the parent waits for the feeder process: to start and load
// nothing yet, to answer a feed (the first for a kind of frame loads its
// generators), to stop one (the batch in progress ends first), and to
// count.
const (
	feederStartWait = 20 * time.Second
	feederFeedWait  = 20 * time.Second
	feederStopWait  = 10 * time.Second
	feederSentWait  = 5 * time.Second
)

// feederArgs is the command line of the feeder process for the peer
// interface iface: source MAC, flows, the generators' CPUs and the CPUs its
// threads keep off.
func feederArgs(self, iface string, srcMAC net.HardwareAddr, flows int, cpus, kept []int) []string {
	return []string{self, feederFlag, iface, srcMAC.String(), strconv.Itoa(flows), cpuList(cpus), cpuList(kept)}
}

// cpuList writes CPUs as "0,1", none as "-".
func cpuList(cpus []int) string {
	if len(cpus) == 0 {
		return "-"
	}
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// parseCPUList reads cpuList's form (host.ParseCPUList, "-" for none).
func parseCPUList(s string) ([]int, error) {
	if s == "-" {
		return nil, nil
	}
	return host.ParseCPUList(s)
}

// feederMain runs the live feeder as told by args and its commands on
// stdin (see the top of this file).
func feederMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 5 {
		fmt.Fprintln(stderr, "sweep -run-feeder: iface srcMAC flows cpus kept (CPU lists such as 0,1; - for none)")
		return exitUsage
	}
	mac, err := net.ParseMAC(args[1])
	if err != nil {
		fmt.Fprintln(stderr, "sweep -run-feeder:", err)
		return exitUsage
	}
	flows, err := strconv.Atoi(args[2])
	if err != nil || flows < 1 {
		fmt.Fprintf(stderr, "sweep -run-feeder: flows %q: at least 1\n", args[2])
		return exitUsage
	}
	cpus, errC := parseCPUList(args[3])
	kept, errK := parseCPUList(args[4])
	if err := errors.Join(errC, errK); err != nil || len(cpus) == 0 {
		fmt.Fprintf(stderr, "sweep -run-feeder: %v (the generators' CPUs, then the CPUs to keep off)\n", errOr(err, "no generator CPU"))
		return exitUsage
	}
	// Before anything starts: every thread started later inherits. A
	// thread the runtime starts meanwhile may be missed: again until a
	// pass finds none left.
	for pass, n := 0, 1; len(kept) > 0 && n > 0 && pass < 3; pass++ {
		if n, _, err = host.KeepThreadsOff(kept); err != nil {
			fmt.Fprintln(stderr, "sweep -run-feeder:", err)
			return exitFailed
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c := &feedChild{f: newLiveFeeder(args[0], mac, flows, cpus)}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	fmt.Fprintln(stdout, "= ready")
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case l, ok := <-lines:
			if !ok {
				done = true
				break
			}
			fmt.Fprintln(stdout, "= "+c.do(ctx, l))
		}
	}
	if err := c.close(); err != nil {
		fmt.Fprintln(stderr, "sweep -run-feeder:", err)
		return exitFailed
	}
	return exitOK
}

// errOr is err's message, or or where err is nil.
func errOr(err error, or string) string {
	if err != nil {
		return err.Error()
	}
	return or
}

// feedChild is the feeder process's state: its feeder and the feed in
// progress, if one is.
type feedChild struct {
	f  *liveFeeder
	fd *feeding
}

// do carries out one command and returns its answer.
func (c *feedChild) do(ctx context.Context, line string) string {
	f := strings.Fields(line)
	if len(f) == 0 {
		return "error an empty command"
	}
	switch {
	case f[0] == "feed" && len(f) == 5:
		if c.fd != nil {
			return "error a feed is in progress"
		}
		t, err := parseTarget(f[1:])
		if err != nil {
			return "error " + oneLine(err)
		}
		fd, err := c.f.start(ctx, t)
		if err != nil {
			return "error " + oneLine(err)
		}
		c.fd = fd
		return "ok"
	case f[0] == "sent" && len(f) == 1:
		if c.fd == nil {
			return "error no feed in progress"
		}
		return strconv.FormatUint(c.fd.sent(), 10)
	case f[0] == "stop" && len(f) == 1:
		if c.fd == nil {
			return "error no feed in progress"
		}
		err := c.fd.stop()
		c.fd = nil
		if err != nil {
			return "error " + oneLine(err)
		}
		return "ok"
	}
	return fmt.Sprintf("error %q: feed MAC IP PORT SIZE, sent or stop", line)
}

// close stops the feed in progress and unloads the generators.
func (c *feedChild) close() error {
	var err error
	if c.fd != nil {
		err = c.fd.stop()
		c.fd = nil
	}
	return errors.Join(err, c.f.close())
}

// parseTarget reads a feed command's MAC IP PORT SIZE.
func parseTarget(f []string) (target, error) {
	mac, err := net.ParseMAC(f[0])
	if err != nil {
		return target{}, err
	}
	ip, err := netip.ParseAddr(f[1])
	if err != nil {
		return target{}, err
	}
	port, err := strconv.ParseUint(f[2], 10, 16)
	if err != nil {
		return target{}, fmt.Errorf("port %q: %w", f[2], err)
	}
	size, err := strconv.Atoi(f[3])
	if err != nil {
		return target{}, fmt.Errorf("size %q: %w", f[3], err)
	}
	return target{dstMAC: mac, dstIP: ip, dstPort: uint16(port), size: size}, nil
}

// oneLine is err's message on one line, for an answer.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// feederProc is the parent's side of the feeder process: a feeder that
// drives it.
type feederProc struct {
	p       *proc
	cmds    *os.File    // the write end of its standard input
	answers chan string // its "= " lines, without the "= "
	desc    string
	mu      sync.Mutex // one exchange at a time
	lost    error      // set when an answer did not come in time: any late one would answer the wrong question
}

// startFeederProc starts the live feeder in a process of its own in bed's
// peer namespace, generator i on cpus[i], every thread kept off kept;
// circuits is the kernel's refusal of live frames, where it refuses them.
func startFeederProc(bed *testbed.Bed, srcMAC net.HardwareAddr, flows int, cpus, kept []int, circuits error) (*feederProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("feeder: the sweep's own binary: %w", err)
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return nil, errors.New("feeder: nsenter not found (util-linux): the live feeder runs in a process of its own in the peer namespace")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("feeder: %w", err)
	}
	f := &feederProc{cmds: pw, answers: make(chan string, 4), desc: describeLive(circuits, cpus, kept, flows)}
	f.p, err = startInNS(bed.InPeer, nsenter, feederArgs(self, bed.Peer, srcMAC, flows, cpus, kept), pr, f.line)
	pr.Close()
	if err != nil {
		pw.Close()
		return nil, fmt.Errorf("feeder: %w", err)
	}
	a, err := f.await("start", feederStartWait)
	if err == nil && a != "ready" {
		err = fmt.Errorf("start: answered %q, not ready", a)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("feeder: %w", err), f.close())
	}
	return f, nil
}

// line takes one line of the process's output.
func (f *feederProc) line(s string) {
	if a, ok := strings.CutPrefix(s, "= "); ok {
		select {
		case f.answers <- a:
		default: // an answer nobody asked for: it is in the tail too
		}
	}
}

// await waits for the answer to what.
func (f *feederProc) await(what string, wait time.Duration) (string, error) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case a := <-f.answers:
		if msg, ok := strings.CutPrefix(a, "error "); ok {
			return "", errors.New(msg)
		}
		return a, nil
	case <-f.p.exited:
		return "", fmt.Errorf("%s: %w", what, f.p.alive())
	case <-t.C:
		f.lost = fmt.Errorf("%s: no answer in %v (%s)", what, wait, f.p.lastLines())
		return "", f.lost
	}
}

// ask sends cmd and waits for its answer.
func (f *feederProc) ask(cmd string, wait time.Duration) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lost != nil {
		return "", fmt.Errorf("%s: the feeder process is out of step: %w", cmd, f.lost)
	}
	if _, err := io.WriteString(f.cmds, cmd+"\n"); err != nil {
		// Most likely it has died: say how, if it says so soon.
		select {
		case <-f.p.exited:
			return "", fmt.Errorf("%s: %w", cmd, f.p.alive())
		case <-time.After(time.Second):
			return "", fmt.Errorf("%s: %w (%s)", cmd, err, f.p.lastLines())
		}
	}
	return f.await(cmd, wait)
}

func (f *feederProc) describe() string { return f.desc }
func (f *feederProc) needsNAPI() bool  { return true }

// start asks the process to feed t. Its count, read through sent, stays
// at the last it gave if it cannot answer; stop reports why.
func (f *feederProc) start(_ context.Context, t target) (*feeding, error) {
	if _, err := f.ask(fmt.Sprintf("feed %s %s %d %d", t.dstMAC, t.dstIP, t.dstPort, t.size), feederFeedWait); err != nil {
		return nil, fmt.Errorf("feeder: %w", err)
	}
	var (
		mu      sync.Mutex
		last    uint64
		sentErr error
		once    sync.Once
		stopErr error
	)
	sent := func() uint64 {
		a, err := f.ask("sent", feederSentWait)
		n, perr := strconv.ParseUint(a, 10, 64)
		mu.Lock()
		defer mu.Unlock()
		if err == nil && perr != nil {
			err = fmt.Errorf("sent: answer %q", a)
		}
		if err != nil {
			sentErr = firstErr(sentErr, err)
			return last
		}
		last = n
		return n
	}
	stop := func() error {
		once.Do(func() {
			_, err := f.ask("stop", feederStopWait)
			mu.Lock()
			defer mu.Unlock()
			if err = errors.Join(sentErr, err); err != nil {
				stopErr = fmt.Errorf("feeder: %w", err)
			}
		})
		return stopErr
	}
	return &feeding{sent: sent, stop: stop}, nil
}

// firstErr is the first of two errors that is not nil.
func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// close ends the process: at the end of its input it stops any feed,
// unloads its programs and exits; stop's signals follow if it does not.
// A process that had ended before is a fault, reported with how it ended.
func (f *feederProc) close() error {
	died := f.p.alive()
	f.cmds.Close()
	select {
	case <-f.p.exited:
	case <-time.After(feederStopWait):
	}
	if err := errors.Join(died, f.p.stop()); err != nil {
		return fmt.Errorf("feeder: %w", err)
	}
	return nil
}
