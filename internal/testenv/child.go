package testenv

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/packetio/packetio/internal/childproc"
)

// Child is a copy of the test binary running as a helper process that a
// crash test kills with SIGKILL.
type Child struct {
	// Pid is the child's process ID.
	Pid    int
	cmd    *exec.Cmd
	killed bool
}

// StartChild runs the test binary again with -test.run=run and env added,
// and waits up to wait for it to print "ready" on a line of its own: a line
// "error: ..." first, or its exit, fails t (exitHint is added to the exit
// message; what names the step a timeout was waiting for). The child dies
// with this process (Pdeathsig, forked from a thread that outlives it:
// childproc.Start) and is killed and reaped when t ends, if the test did
// not kill it first.
func StartChild(t testing.TB, run string, env []string, wait time.Duration, what, exitHint string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run="+run)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if err := childproc.Start(cmd); err != nil {
		t.Fatalf("start the child: %v", err)
	}
	c := &Child{Pid: cmd.Process.Pid, cmd: cmd}
	t.Cleanup(func() { c.Kill() })
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if l := s.Text(); l == "ready" || strings.HasPrefix(l, "error:") {
				line <- l
				return
			}
		}
		line <- "exited without saying ready" + exitHint
	}()
	select {
	case l := <-line:
		if l != "ready" {
			t.Fatalf("child: %s", l)
		}
	case <-time.After(wait):
		t.Fatalf("the child did not %s within %v", what, wait)
	}
	return c
}

// Kill sends SIGKILL and reaps the child, so its PID is gone; later calls
// do nothing.
func (c *Child) Kill() error {
	if c.killed {
		return nil
	}
	c.killed = true
	err := c.cmd.Process.Kill()
	c.cmd.Wait()
	return err
}
