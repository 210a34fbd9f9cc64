package host

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// InNetnsSysfs runs fn with a sysfs that shows the network namespace of the
// calling OS thread, and returns fn's error.
//
// /sys/class/net lists the interfaces of the namespace of whoever mounted
// /sys, not of the thread reading it: from inside a test namespace the
// interface is missing there, or a host interface of the same name is
// found instead. InNetnsSysfs therefore runs fn on a fresh goroutine locked
// to its own OS thread, which enters the caller's network namespace,
// unshares its mount namespace, makes every mount private and mounts a new
// sysfs over /sys; fn gets "/sys" as sysRoot. The thread is never unlocked,
// so when fn returns the runtime throws it away: no other goroutine ever
// runs with that mount namespace, and the host's mount table is untouched.
//
// The caller picks the namespace by being in it: call InNetnsSysfs from a
// goroutine locked to a thread that has entered the namespace (as
// netns.Host.Do does in the tests), or from anywhere for the host
// namespace. InNetnsSysfsAt takes the namespace as a file descriptor
// instead.
//
// fn must do its sysfs work itself rather than hand it to other goroutines,
// which run on other threads. Setting files opened inside fn stay usable
// after it returns, which is how a Journal restores them later.
func InNetnsSysfs(fn func(sysRoot string) error) error {
	f, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return fmt.Errorf("host: open this thread's network namespace: %w", err)
	}
	defer f.Close()
	return InNetnsSysfsAt(int(f.Fd()), fn)
}

// InNetnsSysfsAt is InNetnsSysfs for the network namespace open as netnsFD
// (a file of /proc/<pid>/ns/net, /run/netns/<name> or a netns handle). The
// descriptor is only used during the call.
func InNetnsSysfsAt(netnsFD int, fn func(sysRoot string) error) error {
	return inPrivateSysfs(netnsFD, 0, fn)
}

// inPrivateSysfs does the work of InNetnsSysfsAt; the tests pass
// MS_RDONLY in flags to get a read-only sysfs.
func inPrivateSysfs(netnsFD int, flags uintptr, fn func(sysRoot string) error) error {
	done := make(chan error, 1)
	go privateSysfsThread(netnsFD, flags, fn, done)
	return <-done
}

// privateSysfsThread locks its goroutine to a thread for good and runs fn
// there in the private sysfs view.
func privateSysfsThread(netnsFD int, flags uintptr, fn func(sysRoot string) error, done chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		// The main thread never exits: the runtime would park it for good
		// in the changed namespaces, where /proc/self (which follows the
		// main thread) would show them. Hand the work to a goroutine that,
		// while this one holds the main thread, must run elsewhere.
		started := make(chan struct{})
		go func() {
			runtime.LockOSThread() // never unlocked
			close(started)
			done <- privateSysfs(netnsFD, flags, fn)
		}()
		<-started
		runtime.UnlockOSThread()
		return
	}
	// Never unlocked: the thread's namespaces die with it.
	done <- privateSysfs(netnsFD, flags, fn)
}

// privateSysfs changes the calling thread's namespaces and runs fn. The
// goroutine must be locked to a thread that is then thrown away.
func privateSysfs(netnsFD int, flags uintptr, fn func(sysRoot string) error) error {
	if err := unix.Setns(netnsFD, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("host: enter the network namespace: %w", err)
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		if errors.Is(err, unix.EPERM) {
			return unavailable("a sysfs for this network namespace", "mounting one needs CAP_SYS_ADMIN", err)
		}
		return fmt.Errorf("host: unshare the mount namespace: %w", err)
	}
	// Keep the new mount from propagating back to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("host: make mounts private: %w", err)
	}
	// A sysfs mounted now belongs to this thread's network namespace. The
	// kernel answers EBUSY when that very sysfs is already the one on
	// /sys (the caller is in the namespace that mounted /sys): the view
	// is right as it is.
	err := unix.Mount("sysfs", "/sys", "sysfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC|flags, "")
	if err != nil && !errors.Is(err, unix.EBUSY) {
		return fmt.Errorf("host: mount a sysfs for this network namespace: %w", err)
	}
	return fn("/sys")
}
