package childproc_test

import (
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/packetio/packetio/internal/childproc"
	"github.com/packetio/packetio/internal/testenv"
)

// The main goroutine keeps the main thread, which the runtime never ends
// (a locked goroutine that exits there wedges it instead), so the doomed
// threads below are never the main one.
func init() { runtime.LockOSThread() }

// child is `sleep 30`, started with a parent-death SIGKILL, and its exit.
type child struct {
	cmd    *exec.Cmd
	exited chan error
}

// startOnDoomedThread starts a child from a goroutine locked to its thread
// that then exits locked, which ends the thread, as code that switches a
// thread's namespace and does not switch it back does.
func startOnDoomedThread(t *testing.T, start func(*exec.Cmd) error) *child {
	t.Helper()
	c := &child{cmd: exec.Command("sleep", "30"), exited: make(chan error, 1)}
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		errc <- start(c.cmd)
	}()
	if err := <-errc; err != nil {
		t.Fatalf("start sleep: %v", err)
	}
	go func() { c.exited <- c.cmd.Wait() }()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.exited
	})
	return c
}

// within waits up to d for the child's exit: whether it exited, and its
// status.
func (c *child) within(d time.Duration) (bool, error) {
	select {
	case err := <-c.exited:
		c.exited <- err // for Cleanup
		return true, err
	case <-time.After(d):
		return false, nil
	}
}

// TestChildOutlivesItsStartersThread: a child started by cmd.Start on a
// thread that then ends is killed by its parent-death signal though this
// process lives on (the hazard); started by Start on the same kind of
// thread, it runs on until it is killed.
func TestChildOutlivesItsStartersThread(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		testenv.CannotRun(t, "no sleep(1) to run as the child: %v", err)
	}
	plain := startOnDoomedThread(t, (*exec.Cmd).Start)
	if exited, err := plain.within(5 * time.Second); !exited || err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("started by cmd.Start on a thread that ended: exited %v (%v), want killed by its parent-death signal (the hazard Start avoids)", exited, err)
	}

	held := startOnDoomedThread(t, childproc.Start)
	if exited, err := held.within(time.Second); exited {
		t.Fatalf("started by Start on a thread that ended: exited (%v) within a second, want it running", err)
	}
	if err := held.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	if exited, err := held.within(5 * time.Second); !exited || err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("after our SIGKILL: exited %v (%v)", exited, err)
	}
}

// TestStartFails: what cmd.Start refuses, Start returns.
func TestStartFails(t *testing.T) {
	err := childproc.Start(exec.Command("/nonexistent/packetio-no-such-tool"))
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("Start of a missing program: %v", err)
	}
}
