package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/packetio/packetio/internal/host"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the command, for a test to call: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	usage := func() {
		fmt.Fprintln(stderr, "usage: packetio restore [-dir "+host.DefaultRunDir+"] [-n]")
	}
	if len(args) == 0 || args[0] != "restore" {
		usage()
		return 2
	}
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = usage
	dir := fs.String("dir", host.DefaultRunDir, "the run directory whose journal/ holds the journal files")
	dry := fs.Bool("n", false, "only list what would be done")
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 0 {
		usage()
		return 2
	}
	rs, err := host.Recover(*dir, *dry)
	status := 0
	prefix := ""
	if *dry {
		prefix = "(dry run, nothing done) "
	}
	for _, r := range rs {
		fmt.Fprintln(stdout, prefix+r.String())
		if r.Action == host.Failed {
			status = 1
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "packetio restore:", err)
		status = 1
	}
	return status
}
