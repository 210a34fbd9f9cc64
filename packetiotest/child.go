package packetiotest

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/testenv"
)

// childEnv carries FaultEnv.Child to the child process of the kill -9 case.
const childEnv = "PACKETIO_FAULT_CHILD"

// FaultChildMain makes a test binary able to serve as the child of
// RunFaults's kill -9 case. Call it first in TestMain:
//
//	func TestMain(m *testing.M) {
//		packetiotest.FaultChildMain(func(ifname string) (packetio.Device, error) {
//			return mybackend.Open(ifname, ...)
//		})
//		os.Exit(m.Run())
//	}
//
// In an ordinary run it returns at once. In the child it enters the network
// namespace FaultEnv.Child names, opens the device on its interface with
// open, prints "ready" and holds the device until it is killed; it never
// returns.
func FaultChildMain(open func(ifname string) (Device, error)) {
	arg, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	d, err := openInChild(arg, open)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	fmt.Println("ready")
	for {
		time.Sleep(time.Hour)
		runtime.KeepAlive(d)
	}
}

// openInChild enters the namespace named by arg ("/proc/PID/fd/N IFNAME",
// or "- IFNAME" to stay in the current one) on the main thread, for good,
// and opens the device there.
func openInChild(arg string, open func(string) (Device, error)) (Device, error) {
	nsPath, ifname, ok := strings.Cut(arg, " ")
	if !ok {
		return nil, fmt.Errorf("%s=%q: want \"NSPATH IFNAME\"", childEnv, arg)
	}
	runtime.LockOSThread() // never unlocked: this thread stays in the namespace
	if nsPath != "-" {
		fd, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", nsPath, err)
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			return nil, fmt.Errorf("enter %s: %w", nsPath, err)
		}
	}
	return open(ifname)
}

// startChild runs this test binary as a fault child holding the device
// FaultEnv.Child names, waits until it says it holds it, and returns the
// SIGKILL that ends it. The child is killed at the end of the test if the
// test did not.
func startChild(t *testing.T, arg string) (kill func() error) {
	t.Helper()
	// No test runs in the child: FaultChildMain, called from TestMain, holds the device.
	return testenv.StartChild(t, "^$", []string{childEnv + "=" + arg}, 20*time.Second, "open the device",
		": does TestMain call packetiotest.FaultChildMain?").Kill
}
