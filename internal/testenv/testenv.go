// Package testenv decides what a test does when the machine lacks what it
// needs. A skip is not a pass: with PACKETIO_CONFORM_REQUIRED set (CI sets
// it) every "cannot run here" becomes a failure.
package testenv

import (
	"os"
	"testing"
)

// RequiredEnv is the variable that turns skips into failures.
const RequiredEnv = "PACKETIO_CONFORM_REQUIRED"

// Required reports whether PACKETIO_CONFORM_REQUIRED is set to a non-empty
// value.
func Required() bool { return os.Getenv(RequiredEnv) != "" }

// CannotRun stops the test because the machine lacks something: a skip with
// the reason, or a failure when Required.
func CannotRun(t testing.TB, format string, args ...any) {
	t.Helper()
	if Required() {
		t.Fatalf("cannot run, and "+RequiredEnv+" is set: "+format, args...)
		return
	}
	t.Skipf("cannot run: "+format, args...)
}

// NeedRoot stops the test unless it runs as root.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		CannotRun(t, "needs root (network namespaces, veth, raw sockets); run as root")
	}
}

// NeedHardware stops a test that needs hardware this repository's CI does
// not have (a ConnectX, a DPDK-bound NIC), named by the environment variable
// env. Such a test is the third level of verification in BACKENDS.md: it
// runs when the variable names the device, and is skipped, saying so,
// otherwise, whether or not PACKETIO_CONFORM_REQUIRED is set, because no
// machine CI runs on can satisfy it. It returns the variable's value.
func NeedHardware(t testing.TB, env, what string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		t.Skipf("hardware test: needs %s named by %s (verification level 3 in BACKENDS.md)", what, env)
	}
	return v
}

// KernelLimit stops a test at what this machine's kernel refuses for good
// (a mechanism it was built or configured without, such as freplace
// programs where BPF trampolines are forbidden), after the test has checked
// what a caller sees of that refusal. Like NeedHardware it skips, saying
// "kernel limit", whether or not PACKETIO_CONFORM_REQUIRED is set: no
// machine this CI runs on can satisfy it, and the note lists every
// test that stops here. Never use it for an error a kernel with the
// mechanism could give.
func KernelLimit(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Skipf("kernel limit: "+format, args...)
}
