package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/packetio/packetio/examples/internal/testbed"
	"github.com/packetio/packetio/internal/childproc"
)

// proc is a tool the sweep runs inside the measured namespace, its output
// read a line at a time.
type proc struct {
	cmd    *exec.Cmd
	name   string // the tool, for messages
	exited chan struct{}
	err    error    // the exit status, once exited is closed
	out    *os.File // the read end of its output
	// grace is how long stop waits after SIGINT before SIGKILL.
	grace time.Duration

	mu   sync.Mutex
	tail []string // last lines, for error messages
}

// startIn runs argv in the measured namespace of bed (through nsenter),
// killed if this program dies (and not before: childproc.Start), and hands
// every output line (stdout and stderr) to line.
func startIn(bed *testbed.Bed, nsenter string, argv []string, line func(string)) (*proc, error) {
	return startInNS(bed.In, nsenter, argv, nil, line)
}

// startInNS is startIn in the namespace in runs its function in (bed.In,
// bed.InPeer), with stdin (nil: none) as the process's standard input.
func startInNS(in func(func() error) error, nsenter string, argv []string, stdin *os.File, line func(string)) (*proc, error) {
	var nsf *os.File
	if err := in(func() error {
		f, err := os.Open("/proc/thread-self/ns/net")
		nsf = f
		return err
	}); err != nil {
		return nil, fmt.Errorf("%s: namespace: %w", argv[0], err)
	}
	defer nsf.Close()
	cmd := exec.Command(nsenter, append([]string{"--net=/proc/self/fd/3"}, argv...)...)
	cmd.ExtraFiles = []*os.File{nsf}
	// Its own process group, so that stop reaches every process it forks
	// (trafgen's workers) and a tool that signals its whole group when it
	// stops (trafgen does) does not reach the sweep.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if stdin != nil {
		cmd.Stdin = stdin
	}
	err = childproc.Start(cmd)
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, fmt.Errorf("%s: start: %w", argv[0], err)
	}
	p := &proc{cmd: cmd, name: filepath.Base(argv[0]), exited: make(chan struct{}), out: pr, grace: 3 * time.Second}
	go func() {
		// Until every process holding the pipe is gone, or stop closes it.
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			s := strings.TrimSpace(strings.ReplaceAll(sc.Text(), "\r", ""))
			p.mu.Lock()
			p.tail = append(p.tail, s)
			if len(p.tail) > 6 {
				p.tail = p.tail[1:]
			}
			p.mu.Unlock()
			if line != nil {
				line(s)
			}
		}
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// lastLines is the end of its output.
func (p *proc) lastLines() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, " / ")
}

// signal sends sig to the tool unless it is gone.
func (p *proc) signal(sig os.Signal) {
	select {
	case <-p.exited:
	default:
		p.cmd.Process.Signal(sig)
	}
}

// stop ends the tool and everything it forked with SIGINT to its process
// group (SIGKILL after its grace), waits for it, and gives its output a moment
// to drain. An exit by that signal is no error.
func (p *proc) stop() error {
	pg := -p.cmd.Process.Pid
	syscall.Kill(pg, syscall.SIGINT)
	select {
	case <-p.exited:
	case <-time.After(p.grace):
		syscall.Kill(pg, syscall.SIGKILL)
		<-p.exited
	}
	// A worker that outlives the leader goes too.
	time.Sleep(100 * time.Millisecond)
	syscall.Kill(pg, syscall.SIGKILL)
	time.Sleep(50 * time.Millisecond)
	p.out.Close()
	var ee *exec.ExitError
	if p.err != nil && (!errors.As(p.err, &ee) || ee.ExitCode() > 0) {
		return fmt.Errorf("%s: %w (%s)", p.name, p.err, p.lastLines())
	}
	return nil
}

// alive fails when the tool has exited.
func (p *proc) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited (%v): %s", p.name, p.err, p.lastLines())
	default:
		return nil
	}
}
