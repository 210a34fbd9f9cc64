package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/packetio/packetio/examples/internal/testbed"
	"github.com/packetio/packetio/internal/childproc"
)

// dpdkRunDir is where the EAL keeps its runtime folders.
const dpdkRunDir = "/var/run/dpdk"

// testpmdRuns numbers testpmd runs, for their EAL file prefixes.
var testpmdRuns atomic.Int64

// testpmdPrefix is this program's EAL file-prefix stem; every run adds its
// number, and cleanup removes everything under the stem.
func testpmdPrefix() string { return fmt.Sprintf("pio%d", os.Getpid()) }

// removeTestpmdRuntime deletes the runtime folders testpmd runs of this
// process left (the EAL leaves them even with --no-shconf).
func removeTestpmdRuntime() error {
	dirs, _ := filepath.Glob(filepath.Join(dpdkRunDir, testpmdPrefix()+"t*"))
	var errs []error
	for _, d := range dirs {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("remove testpmd runtime folder: %w", err))
		}
	}
	return errors.Join(errs...)
}

// testpmdTools are the programs a testpmd run needs: testpmd itself,
// nsenter to start it inside the measured namespace, and stdbuf so that
// its interactive answers arrive a line at a time rather than when a pipe
// buffer fills.
type testpmdTools struct{ testpmd, nsenter, stdbuf string }

// findTestpmd looks the tools up, or says which is missing.
func findTestpmd(name string) (testpmdTools, error) {
	var t testpmdTools
	var err error
	if t.testpmd, err = exec.LookPath(name); err != nil {
		return t, fmt.Errorf("%s not found (Debian's dpdk package installs it)", name)
	}
	if t.nsenter, err = exec.LookPath("nsenter"); err != nil {
		return t, errors.New("nsenter not found (util-linux) to run it inside the namespace")
	}
	if t.stdbuf, err = exec.LookPath("stdbuf"); err != nil {
		return t, errors.New("stdbuf not found (coreutils) to read its answers as they come")
	}
	return t, nil
}

// testpmdVdev is the virtual device of a testpmd column on iface.
func testpmdVdev(column, iface string, q int) string {
	if column == colTestpmdXDP {
		return fmt.Sprintf("net_af_xdp0,iface=%s,start_queue=0,queue_count=%d", iface, q)
	}
	return fmt.Sprintf("net_af_packet0,iface=%s,qpairs=%d", iface, q)
}

// testpmdArgs is the nsenter command line for one interactive run inside
// the measured namespace, whose network namespace file is the child's
// fd 3. The sweep drives it on stdin: start, then "show port stats 0" at
// each end of the window.
func testpmdArgs(t testpmdTools, prefix, column, iface, loop string, q, size int, sink string) []string {
	args := []string{"--net=/proc/self/fd/3", t.stdbuf, "-oL", t.testpmd,
		"--no-huge", "-m", "256", "--no-pci", "--no-shconf", "--file-prefix", prefix, "--no-telemetry",
		"--vdev=" + testpmdVdev(column, iface, q),
		"--", "-i", "--total-num-mbufs=16384",
		fmt.Sprintf("--rxq=%d", q), fmt.Sprintf("--txq=%d", q), "--nb-cores=1",
	}
	switch loop {
	case loopTx:
		args = append(args, "--forward-mode=txonly", fmt.Sprintf("--txpkts=%d", size), "--eth-peer=0,"+sink,
			"--tx-ip="+testbed.AddrA.Addr().String()+","+sinkIP.String(), fmt.Sprintf("--tx-udp=1024,%d", discardPort))
	case loopRx:
		args = append(args, "--forward-mode=rxonly")
	case loopFwd:
		args = append(args, "--forward-mode=mac", "--eth-peer=0,"+sink, "--port-topology=loop")
	}
	return args
}

// pmdStat is one reading of testpmd's port counters.
type pmdStat struct{ rx, tx uint64 }

var (
	pmdRx = regexp.MustCompile(`RX-packets:\s+(\d+)\s+RX-missed`)
	pmdTx = regexp.MustCompile(`TX-packets:\s+(\d+)\s+TX-errors`)
	// pmdCannot is what the driver says when the interface cannot be
	// driven that way at all: net_af_xdp (DPDK 22.11) takes as many
	// queues as the interface has combined channels, and a veth reports
	// none, which it reads as one.
	pmdCannot = regexp.MustCompile(`Specified queue count \d+ is larger than combined queue count \d+`)
)

// pmdParser turns the "NIC statistics" blocks testpmd prints (asked for
// with "show port stats 0") into readings, in order.
type pmdParser struct {
	mu       sync.Mutex
	rx       uint64
	readings chan pmdStat
	tail     []string // last lines, for error messages
	cannot   string   // why this run cannot work here, if testpmd said so
}

func newPmdParser() *pmdParser { return &pmdParser{readings: make(chan pmdStat, 16)} }

// line takes one line of output.
func (p *pmdParser) line(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tail = append(p.tail, s)
	if len(p.tail) > 8 {
		p.tail = p.tail[1:]
	}
	if m := pmdCannot.FindString(s); m != "" {
		p.cannot = m
	}
	if m := pmdRx.FindStringSubmatch(s); m != nil {
		p.rx, _ = strconv.ParseUint(m[1], 10, 64)
		return
	}
	if m := pmdTx.FindStringSubmatch(s); m != nil {
		tx, _ := strconv.ParseUint(m[1], 10, 64)
		select {
		case p.readings <- pmdStat{rx: p.rx, tx: tx}:
		default: // nobody asked: a block we did not request
		}
	}
}

// failure is err as a cell error: a skip when testpmd said the interface
// cannot be driven this way.
func (p *pmdParser) failure(err error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cannot != "" {
		return fmt.Errorf("%w: %s (a veth reports no combined channels)", errSkip, p.cannot)
	}
	return err
}

func (p *pmdParser) lastLines() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, " / ")
}

// testpmdProc is a testpmd run being driven.
type testpmdProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	p      *pmdParser
	exited chan error   // holds the exit status once it is known
	after  func() error // puts the interface back once testpmd is gone

	queryMu  sync.Mutex
	stopOnce sync.Once
	stopErr  error
}

// query asks for the port counters and waits for the answer. The reading
// is taken when testpmd reads the command, a moment after it is written.
func (t *testpmdProc) query(ctx context.Context, timeout time.Duration) (pmdStat, error) {
	t.queryMu.Lock()
	defer t.queryMu.Unlock()
	for len(t.p.readings) > 0 { // unasked-for blocks
		<-t.p.readings
	}
	if _, err := io.WriteString(t.stdin, "show port stats 0\n"); err != nil {
		return pmdStat{}, fmt.Errorf("testpmd: ask for counters: %w (%s)", err, t.p.lastLines())
	}
	tm := time.NewTimer(timeout)
	defer tm.Stop()
	select {
	case s := <-t.p.readings:
		return s, nil
	case err, ok := <-t.exited:
		if ok {
			t.exited <- err // keep it for stop
		}
		return pmdStat{}, fmt.Errorf("testpmd exited (%v): %s", err, t.p.lastLines())
	case <-tm.C:
		return pmdStat{}, fmt.Errorf("testpmd: no counters within %v: %s", timeout, t.p.lastLines())
	case <-ctx.Done():
		return pmdStat{}, ctx.Err()
	}
}

// stop ends the run: stop and quit on stdin, SIGINT if that is ignored,
// SIGKILL last; then the EAL's runtime folder goes and the interface is
// put back. A second call returns the first one's result.
func (t *testpmdProc) stop() error {
	t.stopOnce.Do(func() { t.stopErr = t.end() })
	return t.stopErr
}

func (t *testpmdProc) end() error {
	io.WriteString(t.stdin, "stop\nquit\n")
	t.stdin.Close()
	var err error
	select {
	case err = <-t.exited:
	case <-time.After(5 * time.Second):
		t.cmd.Process.Signal(os.Interrupt)
		select {
		case err = <-t.exited:
		case <-time.After(3 * time.Second):
			t.cmd.Process.Kill()
			err = <-t.exited
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() <= 0 {
		err = nil // ended by our signal
	}
	if rerr := removeTestpmdRuntime(); rerr != nil && err == nil {
		err = rerr
	}
	return errors.Join(err, t.after())
}

// keepPromisc records whether the measured interface is promiscuous and
// returns what sets it back.
func keepPromisc(bed *testbed.Bed) (func() error, error) {
	var was bool
	err := bed.In(func() error {
		l, err := netlink.LinkByName(bed.Name)
		if err == nil {
			was = l.Attrs().Promisc != 0
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("testpmd: %s: %w", bed.Name, err)
	}
	return func() error {
		return bed.In(func() error {
			l, err := netlink.LinkByName(bed.Name)
			if err != nil {
				return fmt.Errorf("testpmd: put %s back: %w", bed.Name, err)
			}
			if (l.Attrs().Promisc != 0) == was {
				return nil
			}
			if was {
				err = netlink.SetPromiscOn(l)
			} else {
				err = netlink.SetPromiscOff(l)
			}
			if err != nil {
				return fmt.Errorf("testpmd: put %s back out of promiscuous mode: %w", bed.Name, err)
			}
			return nil
		})
	}, nil
}

// startTestpmd runs dpdk-testpmd over the column's driver on the measured
// veth, inside its namespace, forwarding the loop's way, and starts the
// feeder once it forwards.
func (e *env) startTestpmd(ctx context.Context, r *rig, tools testpmdTools, column, loop string) (running, error) {
	var nsf *os.File
	if err := r.bed.In(func() error {
		f, err := os.Open("/proc/thread-self/ns/net")
		nsf = f
		return err
	}); err != nil {
		return running{}, fmt.Errorf("testpmd: namespace: %w", err)
	}
	defer nsf.Close()
	// Its drivers leave the interface promiscuous (and take the link down
	// and up, which loses the sink neighbour: runCell sets it again).
	putBack, err := keepPromisc(r.bed)
	if err != nil {
		return running{}, err
	}
	prefix := fmt.Sprintf("%st%d", testpmdPrefix(), testpmdRuns.Add(1))
	cmd := exec.Command(tools.nsenter, testpmdArgs(tools, prefix, column, r.bed.Name, loop, r.queues, e.size, sinkMAC.String())...)
	cmd.ExtraFiles = []*os.File{nsf}
	// testpmd dies with this program even if it is killed outright
	// (nsenter and stdbuf exec it: it is the same process), and not
	// before: childproc.Start forks from a thread that outlives it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return running{}, fmt.Errorf("testpmd: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return running{}, fmt.Errorf("testpmd: %w", err)
	}
	cmd.Stderr = cmd.Stdout
	if err := childproc.Start(cmd); err != nil {
		return running{}, fmt.Errorf("testpmd: start: %w", err)
	}
	t := &testpmdProc{cmd: cmd, stdin: stdin, p: newPmdParser(), exited: make(chan error, 1), after: putBack}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			t.p.line(strings.ReplaceAll(sc.Text(), "\x1b", ""))
		}
		io.Copy(io.Discard, out)
	}()
	go func() { <-readDone; t.exited <- cmd.Wait() }()
	// Forwarding once it answers after "start" (the EAL takes about half
	// a second to come up; the commands wait in the pipe meanwhile).
	if _, err := io.WriteString(stdin, "start\n"); err != nil {
		t.stop()
		return running{}, fmt.Errorf("testpmd: start forwarding: %w", err)
	}
	if _, err := t.query(ctx, 15*time.Second); err != nil {
		t.stop()
		return running{}, t.p.failure(err)
	}
	rx := loop == loopRx
	run := running{
		stop: t.stop,
		count: func() (reading, error) {
			s, err := t.query(ctx, 3*time.Second)
			at := monoNow()
			if rx {
				return reading{n: s.rx, at: at}, err
			}
			return reading{n: s.tx, at: at}, err
		},
	}
	if loop == loopTx {
		return run, nil
	}
	restore, err := e.takeFeed(r, nil)
	if err != nil {
		t.stop()
		return running{}, err
	}
	fd, err := r.feed.start(ctx, r.packetioTarget(e.size))
	if err != nil {
		t.stop()
		restore()
		return running{}, err
	}
	run.offered = fd.sent
	run.stop = func() error {
		ferr := fd.stop()
		return errors.Join(ferr, t.stop(), restore())
	}
	return run, nil
}
