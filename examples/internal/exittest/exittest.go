// Package exittest checks how an example's command line is refused: the
// example's test binary runs the example's main in a child process (Main,
// from TestMain) with the arguments a test gives (Refused), and the test
// sees its exit status and output, as a user would.
package exittest

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// env carries the arguments to the child; its presence makes the child run
// main instead of the tests.
const env = "PACKETIO_EXAMPLE_MAIN_ARGS"

// Main runs main as the program name with the arguments Refused passed,
// and exits 0 after it, when this process is such a child; otherwise it
// returns at once. Call it first in TestMain.
func Main(name string, main func()) {
	args, ok := os.LookupEnv(env)
	if !ok {
		return
	}
	os.Args = append([]string{name}, strings.Fields(args)...)
	main()
	os.Exit(0)
}

// Refused runs the example with args in a child process and fails t unless
// it exits with status 2 and its output contains want.
func Refused(t *testing.T, name, args, want string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"="+args)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), want) {
		t.Errorf("%s %s: %v, %q; want exit status 2 and %q", name, args, err, out, want)
	}
}
