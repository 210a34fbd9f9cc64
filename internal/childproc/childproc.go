// Package childproc starts helper processes that must die with this one
// (SysProcAttr.Pdeathsig): the tools the sweep drives, a test's kill -9
// child.
//
// Linux sends the parent-death signal when the thread that forked the
// child ends, not when the process does, and Go ends an OS thread whenever
// a goroutine locked to it exits without unlocking, which code that enters
// another namespace on a locked thread does on purpose (so does
// internal/syscount's private tracefs, and a trafficgen circuit's feeder).
// A child started from a thread that later meets that end is killed with
// the process still running: testpmd, driven by the sweep while circuits
// fed it, died of SIGKILL between two readings of its counters. Start
// forks from a thread held for as long as the child lives.
package childproc

import (
	"errors"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// Start starts cmd (as cmd.Start does) from an OS thread locked to a
// goroutine of its own, which holds it until the child has exited: the
// child's parent-death signal comes when this process dies, and not
// before. The caller waits for cmd as usual (cmd.Wait); the thread's
// goroutine only watches for the exit (waitid with WNOWAIT) and does not
// reap the child.
func Start(cmd *exec.Cmd) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			runtime.UnlockOSThread()
			started <- err
			return
		}
		started <- nil
		awaitExit(cmd.Process.Pid)
		runtime.UnlockOSThread()
	}()
	return <-started
}

// awaitExit blocks until child pid has exited (or was reaped by someone
// else), leaving it to be reaped.
func awaitExit(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return // exited, or gone (ECHILD: already reaped)
		}
	}
}
