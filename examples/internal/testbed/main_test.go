package testbed

import (
	"context"
	"errors"
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// mainChildEnv makes the test binary a child that runs Main with the
// flags after "--" and then exits 0.
const mainChildEnv = "TESTBED_MAIN_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(mainChildEnv) != "" {
		mainChild()
	}
	os.Exit(m.Run())
}

// mainChild is an example's main in miniature: -n must be positive, and
// -fail makes run fail.
func mainChild() {
	args := os.Args[1:]
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Args = append([]string{"child"}, args...)
	flag.CommandLine = flag.NewFlagSet("child", flag.ExitOnError)
	n := flag.Int("n", 1, "a positive number")
	fail := flag.Bool("fail", false, "make run fail")
	Main("child", "usage: child [flags]\n\n", func() error {
		if *n < 1 {
			return errors.New("-n must be positive")
		}
		return nil
	}, func(ctx context.Context) error {
		if *fail {
			return errors.New("the device failed")
		}
		os.Stdout.WriteString("ran\n")
		return nil
	})
	os.Exit(0)
}

// TestMainExitStatus: flags check refuses exit 2 with "name: why", a run
// that fails exits 1 with its error, one that succeeds 0; each is checked
// on flags as parsed.
func TestMainExitStatus(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		status int
		out    string
	}{
		{nil, 0, "ran\n"},
		{[]string{"-n", "0"}, 2, "child: -n must be positive\n"},
		{[]string{"-fail"}, 1, "child: the device failed\n"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, tc.args...)...)
			cmd.Env = append(os.Environ(), mainChildEnv+"=1")
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			status := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				status = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if status != tc.status || out.String() != tc.out {
				t.Errorf("exit %d, output %q; want %d, %q", status, out.String(), tc.status, tc.out)
			}
		})
	}
}
