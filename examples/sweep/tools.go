package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/examples/internal/frame"
	"github.com/packetio/packetio/examples/internal/testbed"
)

// toolOf names the program a tool column runs.
func toolOf(column string) string {
	switch column {
	case colTrafgen:
		return "trafgen"
	case colNetsniff:
		return "netsniff-ng"
	case colTcpdump:
		return "tcpdump"
	}
	return ""
}

// toolNote says how each tool column runs and counts.
func toolNote(column string) string {
	switch column {
	case colTrafgen:
		return "trafgen (netsniff-ng's generator, TX_RING, qdisc bypassed, its default): one process pinned like a packetio worker (cpu(N) in its config, -P N+1), --no-sock-mem and --notouch-irq so it changes nothing on the host, the cell's frame to the sink; " +
			"counted with the interface's transmit counter (its own summary counts frames put on the ring, not sent)"
	case colNetsniff:
		return "netsniff-ng: --silent (captures, prints nothing), --bind-cpu like a packetio worker, --no-sock-mem, --notouch-irq, a 64 MiB RX_RING (its default sizes the ring from the machine's memory, slow to set up and tear down per cell); it has no live counters (SIGUSR1 ends it, and under a flood it takes seconds to act on SIGINT, so its summary is mostly lost), " +
			"so its Mpps is the interface's receive counter over the window: an UPPER BOUND (what reached the interface, not what netsniff-ng took); it is therefore not afpacket's reference, tcpdump is (its own count)"
	case colTcpdump:
		return "tcpdump (afpacket receive's reference): -w /dev/null -n, otherwise its defaults (libpcap's TPACKET_V3 ring, 2 MiB buffer), pinned like a packetio worker; counted with its own \"packets captured\", which it prints on SIGUSR1 at both ends of the window"
	}
	return ""
}

// linkStats reads the measured interface's packet counters.
func linkStats(bed *testbed.Bed) (rx, tx uint64, err error) {
	err = bed.In(func() error {
		l, err := netlink.LinkByName(bed.Name)
		if err != nil {
			return err
		}
		s := l.Attrs().Statistics
		if s == nil {
			return errors.New("no link statistics")
		}
		rx, tx = s.RxPackets, s.TxPackets
		return nil
	})
	return rx, tx, err
}

// trafgenConfig is a trafgen packet configuration sending b on CPU cpu.
func trafgenConfig(b []byte, cpu int) string {
	var s strings.Builder
	fmt.Fprintf(&s, "cpu(%d): {", cpu)
	for i, c := range b {
		if i > 0 {
			s.WriteString(",")
		}
		fmt.Fprintf(&s, "0x%02x", c)
	}
	s.WriteString("}\n")
	return s.String()
}

var (
	tcpdumpCaptured = regexp.MustCompile(`(\d+) packets? captured`)
	netsniffDrop    = regexp.MustCompile(`([0-9.]+)% packet droprate`)
)

// startTool runs trafgen, netsniff-ng or tcpdump for one cell.
func (e *env) startTool(ctx context.Context, r *rig, column, loop string) (running, error) {
	name := toolOf(column)
	bin, err := exec.LookPath(name)
	if err != nil {
		pkg := "netsniff-ng"
		if name == "tcpdump" {
			pkg = "tcpdump"
		}
		return running{}, fmt.Errorf("%w: %s not installed (Debian package %s)", errSkip, name, pkg)
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return running{}, fmt.Errorf("%w: nsenter not found (util-linux)", errSkip)
	}
	if r.queues > 1 {
		return running{}, fmt.Errorf("%w: the tool columns run one process, one queue", errSkip)
	}
	cpu := e.workerCPU(0)
	var argv []string
	var count func() (reading, error)
	var p *proc
	// tmpDir holds trafgen's config, which it reads when it gets round
	// to it (on a loaded machine, well after it started): removed when
	// the cell stops, or here if it never runs.
	var tmpDir string
	keep := false
	defer func() {
		if !keep && tmpDir != "" {
			os.RemoveAll(tmpDir)
		}
	}()
	var mu sync.Mutex
	var captured uint64
	got := make(chan struct{}, 1)
	var drop float64
	line := func(s string) {
		if m := tcpdumpCaptured.FindStringSubmatch(s); m != nil {
			n, _ := strconv.ParseUint(m[1], 10, 64)
			mu.Lock()
			captured = n
			mu.Unlock()
			select {
			case got <- struct{}{}:
			default:
			}
		}
		if m := netsniffDrop.FindStringSubmatch(s); m != nil {
			f, _ := strconv.ParseFloat(m[1], 64)
			mu.Lock()
			drop = f / 100
			mu.Unlock()
		}
	}
	switch column {
	case colTrafgen:
		spec := frame.Spec{SrcMAC: r.macA, DstMAC: sinkMAC, SrcIP: testbed.AddrA.Addr(), DstIP: sinkIP, SrcPort: 1024, DstPort: discardPort, Size: e.size}
		if err := spec.Check(); err != nil {
			return running{}, err
		}
		tmpl := make([]byte, spec.Len())
		frame.Build(tmpl, spec)
		dir, err := os.MkdirTemp("", "sweep-trafgen-")
		if err != nil {
			return running{}, err
		}
		tmpDir = dir
		conf := filepath.Join(dir, "frame.cfg")
		if err := os.WriteFile(conf, []byte(trafgenConfig(tmpl, cpu)), 0o644); err != nil {
			return running{}, err
		}
		argv = []string{bin, "--dev", r.bed.Name, "--conf", conf, "--cpus", strconv.Itoa(cpu + 1), "--no-sock-mem", "--notouch-irq", "--no-cpu-stats"}
		if e.size > 2044 {
			argv = append(argv, "--jumbo-support")
		}
		count = func() (reading, error) {
			_, tx, err := linkStats(r.bed)
			return reading{n: tx, at: monoNow()}, errors.Join(err, p.alive())
		}
	case colNetsniff:
		argv = []string{bin, "--in", r.bed.Name, "--silent", "--bind-cpu", strconv.Itoa(cpu), "--no-sock-mem", "--notouch-irq", "--ring-size", "64MiB"}
		if e.size > 2044 {
			argv = append(argv, "--jumbo-support")
		}
		count = func() (reading, error) {
			rx, _, err := linkStats(r.bed)
			return reading{n: rx, at: monoNow()}, errors.Join(err, p.alive())
		}
	case colTcpdump:
		argv = []string{bin, "-i", r.bed.Name, "-w", "/dev/null", "-n"}
		count = func() (reading, error) {
			for len(got) > 0 {
				<-got
			}
			p.signal(syscall.SIGUSR1)
			select {
			case <-got:
			case <-time.After(2 * time.Second):
				return reading{}, fmt.Errorf("tcpdump: no counts within 2s: %s", p.lastLines())
			}
			at := monoNow()
			mu.Lock()
			defer mu.Unlock()
			return reading{n: captured, at: at}, nil
		}
	default:
		return running{}, fmt.Errorf("unknown tool column %q", column)
	}
	if p, err = startIn(r.bed, nsenter, argv, line); err != nil {
		return running{}, err
	}
	if column == colNetsniff {
		// Under a flood it takes seconds to notice SIGINT; its summary is
		// only a check, not worth a cell's time.
		p.grace = 700 * time.Millisecond
	}
	if column == colTcpdump {
		if err := pinPid(p.cmd.Process.Pid, cpu); err != nil {
			p.stop()
			return running{}, err
		}
	}
	// Running once it says so, or after a moment.
	time.Sleep(200 * time.Millisecond)
	if err := p.alive(); err != nil {
		return running{}, err
	}
	keep = true
	run := running{count: count, stop: func() error {
		err := p.stop()
		if tmpDir != "" {
			os.RemoveAll(tmpDir)
		}
		return err
	}}
	if column == colNetsniff {
		// Its rate is what reached the interface; what it dropped of that
		// is known only from the summary it prints on exit, and a cell
		// where that is more than 1 % says so in its note.
		run.stop = func() error {
			err := p.stop()
			mu.Lock()
			d := drop
			mu.Unlock()
			if d > 0.01 {
				return errors.Join(err, fmt.Errorf("%w: netsniff-ng dropped %.1f%% of what reached the interface", errDropped, 100*d))
			}
			return err
		}
	}
	if loop == loopTx {
		return run, nil
	}
	restore, err := e.takeFeed(r, nil)
	if err != nil {
		run.stop()
		return running{}, err
	}
	fd, err := r.feed.start(ctx, r.packetioTarget(e.size))
	if err != nil {
		run.stop()
		restore()
		return running{}, err
	}
	inner := run.stop
	run.offered = fd.sent
	run.stop = func() error { ferr := fd.stop(); return errors.Join(ferr, inner(), restore()) }
	return run, nil
}

// errDropped marks a tool cell whose counter overstates what the tool
// took; runCell turns it into a note on the cell.
var errDropped = errors.New("dropped")

// pinPid pins every thread of pid to cpu.
func pinPid(pid, cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(pid, &set); err != nil {
		return fmt.Errorf("pin %d to CPU %d: %w", pid, cpu, err)
	}
	return nil
}
