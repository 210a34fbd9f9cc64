package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/packetio/packetio/examples/internal/testbed"
)

// childFlag starts the sweep as a child that runs one packetio cell in a
// process of its own: dpdk/af_xdp's, because closing a net_af_xdp port
// leaves its queue bound until the process exits (every later AF_XDP
// socket on the interface would get EBUSY). The child is told the column,
// loop, interface, queues, frame length, batch, CPU, flows and both MACs;
// it prints "T N" lines as xskref does and stops on SIGINT. The forward
// rewrite (-forward), the steering (-steer), what transmit writes (-write),
// the frames a queue (-frames, 0 for the backend's default) and where sysmon
// runs (-sysmon) come last.
const childFlag = "-run-cell"

// childArgs is the command line of a child running column's loop on r.
func (e *env) childArgs(self, column, loop string, r *rig) []string {
	return []string{self, childFlag, column, loop, r.bed.Name, strconv.Itoa(r.queues), strconv.Itoa(e.size), strconv.Itoa(e.batch),
		strconv.Itoa(e.workerCPU(0)), strconv.Itoa(e.flows), r.macA.String(), r.macB.String(), e.rewrite, e.steer, e.write, strconv.Itoa(e.frames), e.sysmon}
}

// noFeed is the child's feeder: the parent feeds.
type noFeed struct{}

func (noFeed) describe() string { return "" }
func (noFeed) needsNAPI() bool  { return false }
func (noFeed) start(context.Context, target) (*feeding, error) {
	return &feeding{sent: func() uint64 { return 0 }, stop: func() error { return nil }}, nil
}
func (noFeed) close() error { return nil }

// childMain runs one cell as told by args and reports as xskref does.
func childMain(args []string, stdout, stderr io.Writer) int {
	if len(args) != 15 || !slices.Contains(rewrites, args[10]) || !slices.Contains(steers, args[11]) || !slices.Contains(writes, args[12]) || !slices.Contains(sysmons, args[14]) {
		fmt.Fprintln(stderr, "sweep -run-cell: column loop iface queues size batch cpu flows macA macB rewrite ("+strings.Join(rewrites, " or ")+") steer ("+strings.Join(steers, " or ")+") write ("+strings.Join(writes, " or ")+") frames sysmon ("+strings.Join(sysmons, " or ")+")")
		return exitUsage
	}
	frames, err := strconv.Atoi(args[13])
	if err != nil || frames < 0 || frames > maxFrames {
		fmt.Fprintf(stderr, "sweep -run-cell: frames %q: 0 to %d\n", args[13], maxFrames)
		return exitUsage
	}
	column, loop, iface := args[0], args[1], args[2]
	var n [5]int
	for i := range n {
		v, err := strconv.Atoi(args[3+i])
		if err != nil {
			fmt.Fprintln(stderr, "sweep -run-cell:", err)
			return exitUsage
		}
		n[i] = v
	}
	macA, errA := net.ParseMAC(args[8])
	macB, errB := net.ParseMAC(args[9])
	if err := errors.Join(errA, errB); err != nil {
		fmt.Fprintln(stderr, "sweep -run-cell:", err)
		return exitUsage
	}
	bed, err := testbed.Setup(iface, io.Discard)
	if err != nil {
		fmt.Fprintln(stderr, "sweep -run-cell:", err)
		return exitFailed
	}
	cpus := allowedCPUs()
	if i := n[3]; i >= 0 {
		cpus = []int{i, i} // workerCPU(0) is cpus[1]
	}
	if n[4] < 1 || n[2] < 1 {
		fmt.Fprintln(stderr, "sweep -run-cell: flows and batch must be at least 1")
		return exitUsage
	}
	e := &env{size: n[1], batch: n[2], flows: n[4], cpus: cpus, log: stderr, rewrite: args[10], steer: args[11], write: args[12], frames: frames, sysmon: args[14]}
	r := &rig{queues: n[0], bed: bed, macA: macA, macB: macB, feed: noFeed{}}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	run, err := e.startPacketio(context.Background(), r, column, loop)
	if err != nil {
		fmt.Fprintln(stderr, "sweep -run-cell:", err)
		return exitFailed
	}
	defer e.keepLoopCPUs(r.queues)() // this process's own sysmon too, under -sysmon feeder
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
		}
		c, _ := run.count()
		fmt.Fprintf(stdout, "%d %d\n", int64(c.at*1e9), c.n)
	}
	if err := errors.Join(run.stop(), bed.Close()); err != nil {
		fmt.Fprintln(stderr, "sweep -run-cell:", err)
		return exitFailed
	}
	return exitOK
}

// startChild runs column's cell in a child process (see childFlag) inside
// the measured namespace, and feeds it from here.
func (e *env) startChild(ctx context.Context, r *rig, column, loop string) (running, error) {
	self, err := os.Executable()
	if err != nil {
		return running{}, fmt.Errorf("the sweep's own binary: %w", err)
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return running{}, fmt.Errorf("%w: nsenter not found (util-linux) to run %s in a process of its own", errSkip, column)
	}
	rd := &xskReadings{first: make(chan struct{})}
	p, err := startIn(r.bed, nsenter, e.childArgs(self, column, loop, r), rd.line)
	if err != nil {
		return running{}, err
	}
	select {
	case <-rd.first:
	case <-p.exited:
		err := errors.Join(p.stop(), p.alive())
		if m := pmdCannot.FindString(p.lastLines()); m != "" {
			return running{}, fmt.Errorf("%w: %s (a veth reports no combined channels)", errSkip, m)
		}
		return running{}, err
	case <-time.After(20 * time.Second):
		return running{}, errors.Join(errors.New("no first reading in 20s"), p.stop())
	case <-ctx.Done():
		p.stop()
		return running{}, ctx.Err()
	}
	run := running{stop: p.stop, count: func() (reading, error) { return rd.get(), p.alive() }}
	if loop == loopTx {
		return run, nil
	}
	restore, err := e.takeFeed(r, nil)
	if err != nil {
		p.stop()
		return running{}, err
	}
	fd, err := r.feed.start(ctx, r.packetioTarget(e.size))
	if err != nil {
		p.stop()
		restore()
		return running{}, err
	}
	run.offered = fd.sent
	run.stop = func() error { ferr := fd.stop(); return errors.Join(ferr, p.stop(), restore()) }
	return run, nil
}
