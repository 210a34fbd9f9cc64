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

	"github.com/packetio/packetio/examples/internal/testbed"
)

// colTestpmd is the column of DPDK's own test program.
const colTestpmd = "testpmd"

// dpdkRunDir is where the EAL keeps its runtime folders.
const dpdkRunDir = "/var/run/dpdk"

// testpmdMinWindow is the shortest window over testpmd's once-a-second
// counters that spans two readings.
const testpmdMinWindow = 2 * time.Second

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

// testpmdArgs is the command line for one run inside the measured
// namespace, whose network namespace file is the child's fd 3.
func testpmdArgs(path, prefix, iface, loop string, q, size int, peerMAC string) []string {
	args := []string{"--net=/proc/self/fd/3", path,
		"--no-huge", "-m", "256", "--no-pci", "--no-shconf", "--file-prefix", prefix, "--no-telemetry",
		fmt.Sprintf("--vdev=net_af_packet0,iface=%s,qpairs=%d", iface, q),
		"--", "--stats-period", "1", "--total-num-mbufs=8192",
		fmt.Sprintf("--rxq=%d", q), fmt.Sprintf("--txq=%d", q), "--nb-cores=1",
	}
	switch loop {
	case loopTx:
		args = append(args, "--forward-mode=txonly", fmt.Sprintf("--txpkts=%d", size), "--eth-peer=0,"+peerMAC,
			"--tx-ip="+testbed.AddrA.Addr().String()+","+testbed.AddrB.Addr().String(), fmt.Sprintf("--tx-udp=1024,%d", discardPort))
	case loopRx:
		args = append(args, "--forward-mode=rxonly")
	case loopFwd:
		args = append(args, "--forward-mode=mac", "--eth-peer=0,"+peerMAC, "--port-topology=loop")
	}
	return args
}

// pmdStat is one reading of testpmd's port counters.
type pmdStat struct {
	when   time.Time
	rx, tx uint64
}

var (
	pmdRx = regexp.MustCompile(`RX-packets:\s+(\d+)\s+RX-missed`)
	pmdTx = regexp.MustCompile(`TX-packets:\s+(\d+)\s+TX-errors`)
)

// pmdParser turns testpmd's periodic "NIC statistics" blocks into readings.
type pmdParser struct {
	mu    sync.Mutex
	stats []pmdStat
	rx    uint64
	got   chan struct{} // signalled on every reading
	tail  []string      // last lines, for error messages
}

func newPmdParser() *pmdParser { return &pmdParser{got: make(chan struct{}, 1)} }

// line takes one line of output read at when.
func (p *pmdParser) line(s string, when time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tail = append(p.tail, s)
	if len(p.tail) > 8 {
		p.tail = p.tail[1:]
	}
	if m := pmdRx.FindStringSubmatch(s); m != nil {
		p.rx, _ = strconv.ParseUint(m[1], 10, 64)
		return
	}
	if m := pmdTx.FindStringSubmatch(s); m != nil {
		tx, _ := strconv.ParseUint(m[1], 10, 64)
		p.stats = append(p.stats, pmdStat{when: when, rx: p.rx, tx: tx})
		select {
		case p.got <- struct{}{}:
		default:
		}
	}
}

// rate is the packet rate, in Mpps, between the two readings that bracket
// the window: the last at or before from (or the first after it) and the
// first at or after to (rx or tx counters). testpmd prints once a second,
// later when the machine is loaded, so the span can exceed the window; the
// rate is over the span the counters cover, which is what they measure.
func (p *pmdParser) rate(from, to time.Time, rx bool) (float64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var first, last *pmdStat
	for i := range p.stats {
		s := &p.stats[i]
		if !s.when.After(from) || first == nil {
			first = s
		}
		if !s.when.Before(to) {
			last = s
			break
		}
	}
	if first == nil || last == nil || !last.when.After(first.when) {
		return 0, false
	}
	a, b := first.tx, last.tx
	if rx {
		a, b = first.rx, last.rx
	}
	return float64(b-a) / last.when.Sub(first.when).Seconds() / 1e6, true
}

func (p *pmdParser) lastLines() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, " / ")
}

// startTestpmd runs dpdk-testpmd over net_af_packet on the measured veth,
// inside its namespace.
func (e *env) startTestpmd(ctx context.Context, path, loop string, q int) (running, error) {
	var nsf *os.File
	if err := e.bed.In(func() error {
		f, err := os.Open("/proc/thread-self/ns/net")
		nsf = f
		return err
	}); err != nil {
		return running{}, fmt.Errorf("testpmd: namespace: %w", err)
	}
	defer nsf.Close()
	prefix := fmt.Sprintf("%st%d", testpmdPrefix(), testpmdRuns.Add(1))
	cmd := exec.Command("nsenter", testpmdArgs(path, prefix, e.bed.Name, loop, q, e.size, e.macB.String())...)
	cmd.ExtraFiles = []*os.File{nsf}
	// testpmd dies with this program even if it is killed outright.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return running{}, fmt.Errorf("testpmd: %w", err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return running{}, fmt.Errorf("testpmd: start: %w", err)
	}
	p := newPmdParser()
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.line(strings.ReplaceAll(sc.Text(), "\x1b", ""), time.Now())
		}
		io.Copy(io.Discard, out)
	}()
	exited := make(chan error, 1)
	go func() { <-readDone; exited <- cmd.Wait() }()
	var stopOnce sync.Once
	var waitErr error
	stop := func() error {
		stopOnce.Do(func() {
			cmd.Process.Signal(os.Interrupt)
			select {
			case waitErr = <-exited:
			case <-time.After(5 * time.Second):
				cmd.Process.Kill()
				waitErr = <-exited
			}
			if rerr := removeTestpmdRuntime(); rerr != nil && waitErr == nil {
				waitErr = rerr
			}
			var ee *exec.ExitError
			if errors.As(waitErr, &ee) && ee.ExitCode() <= 0 {
				waitErr = nil // ended by our signal
			}
		})
		return waitErr
	}
	// Ready once testpmd prints its first counters.
	select {
	case <-p.got:
	case err := <-exited:
		exited <- err
		stop()
		return running{}, fmt.Errorf("testpmd exited before forwarding (%v): %s", err, p.lastLines())
	case <-time.After(15 * time.Second):
		stop()
		return running{}, fmt.Errorf("testpmd printed no statistics in 15s: %s", p.lastLines())
	case <-ctx.Done():
		stop()
		return running{}, ctx.Err()
	}
	var fd *feeding
	if loop != loopTx {
		if fd, err = e.feed.start(ctx, e.packetioTarget()); err != nil {
			stop()
			return running{}, err
		}
	}
	r := running{
		stop: func() error {
			if fd != nil {
				fd.stop()
			}
			return stop()
		},
		rate: func(ctx context.Context, from, to time.Time) (float64, error) {
			// Counters come once a second: wait for the one after the window.
			deadline := time.After(2500 * time.Millisecond)
			for {
				p.mu.Lock()
				n := len(p.stats)
				after := n > 0 && p.stats[n-1].when.After(to)
				p.mu.Unlock()
				if after {
					break
				}
				select {
				case <-p.got:
				case <-deadline:
					return 0, fmt.Errorf("testpmd: no statistics after the window: %s", p.lastLines())
				case <-ctx.Done():
					return 0, ctx.Err()
				}
			}
			m, ok := p.rate(from, to, loop == loopRx)
			if !ok {
				return 0, fmt.Errorf("testpmd: fewer than two readings in the window")
			}
			return m, nil
		},
	}
	if fd != nil {
		r.offered = fd.sent
	}
	return r, nil
}
