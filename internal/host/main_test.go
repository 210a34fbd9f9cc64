package host

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/testenv"
)

// Locking in init keeps the main goroutine on the main thread, so TestMain
// can call InNetnsSysfs from there: the one thread the runtime never
// throws away.
func init() { runtime.LockOSThread() }

var (
	errNotRoot       = errors.New("not root")
	mainThreadResult error
)

func TestMain(m *testing.M) {
	if os.Geteuid() == 0 {
		mainThreadResult = fromMainThread()
	} else {
		mainThreadResult = errNotRoot
	}
	runtime.UnlockOSThread()
	os.Exit(m.Run())
}

// fromMainThread runs InNetnsSysfs on the main thread (host namespace) and
// checks that the main thread, which /proc/self follows, is left alone.
func fromMainThread() error {
	if unix.Gettid() != unix.Getpid() {
		return errors.New("TestMain is not on the main thread")
	}
	before, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return err
	}
	mountsBefore, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	fn := func(sys string) error {
		if unix.Gettid() == unix.Getpid() {
			return errors.New("fn runs on the main thread")
		}
		mnt, err := os.Readlink("/proc/thread-self/ns/mnt")
		if err != nil {
			return err
		}
		if mnt == before {
			return errors.New("fn runs in the host mount namespace")
		}
		_, err = os.Stat(sys + "/class/net/lo")
		return err
	}
	if err := InNetnsSysfs(fn); err != nil {
		return err
	}
	// The thread body itself, run right here on the main thread: it must
	// hand the work to another thread.
	ns, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return err
	}
	defer ns.Close()
	done := make(chan error, 1)
	privateSysfsThread(int(ns.Fd()), 0, fn, done)
	if err := <-done; err != nil {
		return fmt.Errorf("from the main thread itself: %w", err)
	}
	after, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return err
	}
	mountsAfter, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	if after != before || string(mountsAfter) != string(mountsBefore) {
		return fmt.Errorf("the main thread's mounts changed: %s -> %s", before, after)
	}
	return nil
}

// TestInNetnsSysfsFromMainThread reports what TestMain found.
func TestInNetnsSysfsFromMainThread(t *testing.T) {
	if errors.Is(mainThreadResult, errNotRoot) {
		testenv.NeedRoot(t)
	}
	if mainThreadResult != nil {
		t.Fatal(mainThreadResult)
	}
}
