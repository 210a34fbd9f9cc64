// Package xdploadertest runs Debian's xdp-loader (xdp-tools 1.3.1, the
// reference implementation of libxdp's dispatcher protocol) beside a test,
// in the network namespace of one end of a veth pair and with the test's
// own bpffs, and reads back what it says is on the interface.
package xdploadertest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// PassAll is xdp-filter's pass-everything program, which xdp-loader loads
// with run priority 10 and chain action XDP_PASS.
const PassAll = "/usr/lib/x86_64-linux-gnu/bpf/xdpfilt_alw_all.o"

// Loader runs xdp-loader on Host's interface with BPFFS as LIBXDP_BPFFS.
type Loader struct {
	Host  *netns.Host
	BPFFS string
}

// Run runs xdp-loader with args inside the host's network namespace
// (nsenter --net on the namespace this process holds, so /sys and its
// mounts stay as they are) and returns its whole output. A missing
// xdp-loader or PassAll is testenv.CannotRun.
func (l Loader) Run(t testing.TB, args ...string) (string, error) {
	t.Helper()
	bin, err := exec.LookPath("xdp-loader")
	if err != nil {
		testenv.CannotRun(t, "xdp-loader (Debian package xdp-tools) is not installed: %v", err)
	}
	if _, err := os.Stat(PassAll); err != nil {
		testenv.CannotRun(t, "xdp-filter's programs (Debian package xdp-tools) are not installed: %v", err)
	}
	ns := fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), l.Host.NamespaceFD())
	cmd := exec.Command("nsenter", append([]string{"--net=" + ns, bin}, args...)...)
	cmd.Env = append(os.Environ(), "LIBXDP_BPFFS="+l.BPFFS)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Row is one program in `xdp-loader status`.
type Row struct {
	Name  string
	Prio  int // -1 for the dispatcher or a program without a dispatcher
	ID    ebpf.ProgramID
	Chain string
}

// Status parses `xdp-loader status IF`: the interface's line names the
// program on the hook (the dispatcher, or a lone program), then one
// " => PRIO NAME ID TAG ACTIONS" line per component.
func (l Loader) Status(t testing.TB) []Row {
	t.Helper()
	out, err := l.Run(t, "status", l.Host.Link)
	if err != nil {
		t.Fatalf("xdp-loader status: %v\n%s", err, out)
	}
	var rows []Row
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) >= 5 && f[0] == l.Host.Link:
			id, _ := strconv.Atoi(f[3])
			rows = append(rows, Row{Name: f[1], Prio: -1, ID: ebpf.ProgramID(id)})
		case len(f) >= 5 && f[0] == "=>":
			prio, _ := strconv.Atoi(f[1])
			id, _ := strconv.Atoi(f[3])
			r := Row{Name: f[2], Prio: prio, ID: ebpf.ProgramID(id)}
			if len(f) > 5 {
				r.Chain = f[5]
			}
			rows = append(rows, r)
		}
	}
	t.Logf("xdp-loader status:\n%s", out)
	return rows
}

// Find is the row of the program named name, or a zero Row.
func Find(rows []Row, name string) Row {
	for _, r := range rows {
		if r.Name == name {
			return r
		}
	}
	return Row{}
}
