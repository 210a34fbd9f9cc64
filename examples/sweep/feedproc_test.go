package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/examples/internal/testbed"
	"github.com/packetio/packetio/internal/testenv"
)

func TestCPUList(t *testing.T) {
	for _, tc := range []struct {
		cpus []int
		s    string
	}{{nil, "-"}, {[]int{0}, "0"}, {[]int{1, 0, 3}, "1,0,3"}} {
		if got := cpuList(tc.cpus); got != tc.s {
			t.Errorf("cpuList(%v) = %q, want %q", tc.cpus, got, tc.s)
		}
		if got, err := parseCPUList(tc.s); err != nil || !slices.Equal(got, tc.cpus) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v", tc.s, got, err, tc.cpus)
		}
	}
	for _, bad := range []string{"a", "-1", "0,99999", "3-1"} {
		if _, err := parseCPUList(bad); err == nil || !strings.Contains(err.Error(), strconv.Quote(bad)) {
			t.Errorf("parseCPUList(%q): %v, want an error naming it", bad, err)
		}
	}
}

// TestFeederKeepsOff: the feeder's process keeps off the loops' CPUs that
// no generator uses.
func TestFeederKeepsOff(t *testing.T) {
	for _, tc := range []struct {
		cpus   []int
		queues int
		off    []int
	}{
		{[]int{0, 1}, 1, []int{1}},
		{[]int{0, 1}, 2, nil},
		{[]int{2, 3, 4, 5}, 1, []int{3}},
		{[]int{2, 3, 4, 5}, 2, []int{4}},
		{[]int{0}, 1, nil}, // one CPU: the loop shares the generator's
	} {
		e := &env{cpus: tc.cpus}
		if got := e.feederKeepsOff(tc.queues); !slices.Equal(got, tc.off) {
			t.Errorf("CPUs %v, %d queues: keeps off %v, want %v", tc.cpus, tc.queues, got, tc.off)
		}
	}
}

// TestFeederMainRefuses: the feeder process refuses a bad command line by
// naming what is wrong, before it touches anything.
func TestFeederMainRefuses(t *testing.T) {
	good := []string{"veth0", "02:00:00:00:00:01", "8", "0", "1"}
	for _, tc := range []struct {
		at   int
		arg  string
		said string
	}{
		{1, "02:00", "02:00"},
		{2, "0", `flows "0"`},
		{3, "-", "no generator CPU"},
		{3, "x", `"x" is not a CPU`},
		{4, "1,y", `"y" is not a CPU`},
	} {
		args := slices.Clone(good)
		args[tc.at] = tc.arg
		var stderr strings.Builder
		if code := feederMain(args, strings.NewReader(""), io.Discard, &stderr); code != exitUsage || !strings.Contains(stderr.String(), tc.said) {
			t.Errorf("%q: exit %d, %q; want %d naming %s", args, code, stderr.String(), exitUsage, tc.said)
		}
	}
	var stderr strings.Builder
	if code := feederMain(good[:4], strings.NewReader(""), io.Discard, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "iface srcMAC flows cpus kept") {
		t.Errorf("four arguments: exit %d, %q", code, stderr.String())
	}
}

// TestFeedChildCommands: what the feeder process answers to commands it
// cannot carry out.
func TestFeedChildCommands(t *testing.T) {
	c := &feedChild{f: newLiveFeeder("veth-none", sinkMAC, 8, []int{0})}
	for _, tc := range []struct{ cmd, answer string }{
		{"", "error an empty command"},
		{"sent", "error no feed in progress"},
		{"stop", "error no feed in progress"},
		{"sent 3", `error "sent 3": feed MAC IP PORT SIZE, sent or stop`},
		{"feed 02:00 10.0.0.1 9 64", "error address 02:00: invalid MAC address"},
		{"feed 02:00:00:00:00:01 10.0.0 9 64", `error ParseAddr("10.0.0"): IPv4 address too short`},
		{"feed 02:00:00:00:00:01 10.0.0.1 65536 64", `error port "65536"`},
		{"feed 02:00:00:00:00:01 10.0.0.1 9 big", `error size "big"`},
		{"feed 02:00:00:00:00:01 10.0.0.1 9 20", "error feeder: "}, // too short a frame
		{"jump", `error "jump": feed MAC IP PORT SIZE, sent or stop`},
	} {
		if got := c.do(context.Background(), tc.cmd); !strings.HasPrefix(got, tc.answer) {
			t.Errorf("%q: answered %q, want %q", tc.cmd, got, tc.answer)
		}
	}
	if err := c.close(); err != nil {
		t.Error(err)
	}
}

// feederBed is a testbed whose measured end takes XDP frames (GRO on), and
// a target there.
func feederBed(t *testing.T) (*testbed.Bed, net.HardwareAddr, target) {
	t.Helper()
	bed, err := testbed.Setup("", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := bed.Close(); err != nil {
			t.Error(err)
		}
	})
	if _, err := bed.GRO(true); err != nil {
		t.Fatal(err)
	}
	mac, err := bed.MAC()
	if err != nil {
		t.Fatal(err)
	}
	peer, err := bed.PeerMAC()
	if err != nil {
		t.Fatal(err)
	}
	return bed, peer, target{dstMAC: mac, dstIP: routedFirst, dstPort: discardPort, size: 60}
}

// TestFeederProcess: the live feeder in its process feeds, counts and
// stops, twice; every thread of that process stays off the kept CPU; and
// closing it ends the process and leaves the host as it was.
func TestFeederProcess(t *testing.T) {
	testenv.NeedBPF(t)
	before := hostNow(t)
	bed, src, tg := feederBed(t)
	all := allowedCPUs()
	var kept []int
	if len(all) > 1 {
		kept = all[1:2]
	}
	f, err := startFeederProc(bed, src, 8, all[:1], kept, nil)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		fd, err := f.start(context.Background(), tg)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		a := fd.sent()
		time.Sleep(300 * time.Millisecond)
		b := fd.sent()
		if err := fd.stop(); err != nil {
			t.Errorf("round %d: stop: %v", round, err)
		}
		if a == 0 || b <= a {
			t.Errorf("round %d: sent %d, then %d: the feed does not move", round, a, b)
		}
	}
	for _, k := range kept {
		if on := threadsOn(t, f.p.cmd.Process.Pid, k); len(on) > 0 {
			t.Errorf("threads %v of the feeder process may run on CPU %d, which it keeps off", on, k)
		}
	}
	if err := f.close(); err != nil {
		t.Error(err)
	}
	select {
	case <-f.p.exited:
	default:
		t.Error("the feeder process is still running after close")
	}
	checkClean(t, before)
}

// TestFeederProcessDies: a feeder process killed in the middle of a feed
// keeps its last count (no count goes backwards) and its feed's stop
// reports how it ended; close reports it too.
func TestFeederProcessDies(t *testing.T) {
	testenv.NeedBPF(t)
	before := hostNow(t)
	bed, src, tg := feederBed(t)
	f, err := startFeederProc(bed, src, 8, allowedCPUs()[:1], nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := f.start(context.Background(), tg)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	a := fd.sent()
	if err := f.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-f.p.exited
	if b := fd.sent(); b != a {
		t.Errorf("sent %d before the kill, %d after", a, b)
	}
	err = fd.stop()
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("stop after a kill: %v, want an error saying it was killed", err)
	}
	if err := f.close(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("close after a kill: %v, want an error saying it was killed", err)
	}
	checkClean(t, before)
}

// threadsOn lists the threads of process pid that may run on cpu.
func threadsOn(t *testing.T, pid, cpu int) []int {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var on []int
	for _, e := range ents {
		tid, err := strconv.Atoi(filepath.Base(e.Name()))
		if err != nil {
			continue
		}
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &set); err != nil {
			if !errors.Is(err, unix.ESRCH) {
				t.Error(err)
			}
			continue
		}
		if set.IsSet(cpu) {
			on = append(on, tid)
		}
	}
	if len(ents) == 0 {
		t.Fatalf("no threads in %s", dir)
	}
	return on
}

// TestFeederProcOutOfStep: once an answer is late, every later question
// fails saying so (a late answer would answer the wrong one), and close
// still ends the process. The "feeder" is a shell that reads and never
// answers.
func TestFeederProcOutOfStep(t *testing.T) {
	testenv.NeedRoot(t)
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		testenv.CannotRun(t, "nsenter (util-linux) is not installed")
		return
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	f := &feederProc{cmds: pw, answers: make(chan string, 4)}
	here := func(fn func() error) error { return fn() }
	f.p, err = startInNS(here, nsenter, []string{"sh", "-c", `echo "= ready"; read a; read b; exit 0`}, pr, f.line)
	pr.Close()
	if err != nil {
		t.Fatal(err)
	}
	if a, err := f.await("start", 5*time.Second); a != "ready" || err != nil {
		t.Fatalf("start: %q, %v", a, err)
	}
	if _, err := f.ask("sent", 200*time.Millisecond); err == nil || !strings.Contains(err.Error(), "sent: no answer in 200ms") {
		t.Fatalf("an unanswered sent: %v", err)
	}
	if _, err := f.ask("stop", time.Second); err == nil || !strings.Contains(err.Error(), "stop: the feeder process is out of step: sent: no answer") {
		t.Errorf("a question after a late answer: %v", err)
	}
	if err := f.close(); err != nil {
		t.Errorf("close: %v", err)
	}
	select {
	case <-f.p.exited:
	default:
		t.Error("the process still runs after close")
	}
}
