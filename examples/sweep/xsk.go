package main

import (
	"context"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/packetio/packetio/examples/internal/frame"
	"github.com/packetio/packetio/examples/internal/testbed"
)

// xskrefSource is the C AF_XDP reference, built at run time.
//
//go:embed xskref/xskref.c
var xskrefSource []byte

// xskref is the built C reference, or why there is none.
type xskref struct {
	bin, nsenter string
	dir          string // the temporary build directory
	skip         string // why its columns are skipped, "" when built
}

// buildXskref compiles xskref.c with cc (or $CC) into a new temporary
// directory. A missing compiler or libxdp header is a reason to skip its
// columns, not a failure.
func buildXskref(log func(string)) *xskref {
	x := &xskref{}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	path, err := exec.LookPath(cc)
	if err != nil {
		x.skip = cc + " not found (a C compiler builds the C AF_XDP reference)"
		return x
	}
	if x.nsenter, err = exec.LookPath("nsenter"); err != nil {
		x.skip = "nsenter not found (util-linux) to run it inside the namespace"
		return x
	}
	if x.dir, err = os.MkdirTemp("", "sweep-xskref-"); err != nil {
		x.skip = "temporary directory: " + err.Error()
		return x
	}
	src := filepath.Join(x.dir, "xskref.c")
	if err := os.WriteFile(src, xskrefSource, 0o644); err != nil {
		x.skip = "write xskref.c: " + err.Error()
		return x
	}
	bin := filepath.Join(x.dir, "xskref")
	out, err := exec.Command(path, "-O2", "-o", bin, src, "-lxdp", "-lbpf").CombinedOutput()
	switch {
	case err != nil && strings.Contains(string(out), "xsk.h"):
		x.skip = "xdp/xsk.h not found (Debian: libxdp-dev, libbpf-dev)"
	case err != nil:
		x.skip = fmt.Sprintf("cc xskref.c: %v: %s", err, strings.TrimSpace(string(out)))
	default:
		x.bin = bin
		log("built the C AF_XDP reference: " + cc + " -O2 xskref.c -lxdp -lbpf")
	}
	return x
}

// close removes the build directory.
func (x *xskref) close() {
	if x != nil && x.dir != "" {
		os.RemoveAll(x.dir)
	}
}

// xskMode is xskref's mode for a loop.
func xskMode(loop string) string {
	switch loop {
	case loopTx:
		return "tx"
	case loopRx:
		return "rx"
	}
	return "fwd"
}

// xskArgs is xskref's command line for one cell: the default column
// loops as the kernel's xdpsock sample does by default, spinning on its
// rings and making a system call only when need-wakeup asks (the harder
// reference: packetio's loops spin briefly and then sleep in poll(2));
// the busy-poll column spins with SO_PREFER_BUSY_POLL, SO_BUSY_POLL 50 µs
// and a budget of 64 (-B 50 -b 64), as afxdp+busypoll does. multiBuffer
// (the jumbo pair) adds -m: 4 KiB frames, XDP_USE_SG, a program with frags
// support, packets as chains.
func xskArgs(bin, column, loop, iface string, cpu, batch int, tmpl []byte, multiBuffer bool) []string {
	args := []string{bin, xskMode(loop), "-i", iface, "-q", "0", "-c", strconv.Itoa(cpu)}
	if multiBuffer {
		args = append(args, "-m")
	}
	if column == colCxskBusy {
		args = append(args, "-B", "50", "-b", "64")
	} else {
		args = append(args, "-b", strconv.Itoa(min(batch, 512)))
	}
	if loop == loopTx {
		args = append(args, "-f", hex.EncodeToString(tmpl))
	}
	return args
}

// xskReadings keeps the last "T N" line xskref printed.
type xskReadings struct {
	mu    sync.Mutex
	last  reading
	first chan struct{}
	once  sync.Once
}

func (x *xskReadings) line(s string) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return
	}
	t, err1 := strconv.ParseUint(f[0], 10, 64)
	n, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return
	}
	x.mu.Lock()
	x.last = reading{n: n, at: float64(t) / 1e9}
	x.mu.Unlock()
	x.once.Do(func() { close(x.first) })
}

func (x *xskReadings) get() reading {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.last
}

// startXsk runs the C reference for one cell: one socket on queue 0, its
// own XDP program in native mode (so the veth takes the live feeder's
// frames without GRO), counting with its own clock.
func (e *env) startXsk(ctx context.Context, r *rig, x *xskref, column, loop string) (running, error) {
	if x == nil || x.skip != "" {
		why := "not built"
		if x != nil {
			why = x.skip
		}
		return running{}, fmt.Errorf("%w: %s", errSkip, why)
	}
	if r.queues > 1 {
		return running{}, fmt.Errorf("%w: xskref drives one queue (one XDP program per process)", errSkip)
	}
	spec := frame.Spec{SrcMAC: r.macA, DstMAC: sinkMAC, SrcIP: testbed.AddrA.Addr(), DstIP: sinkIP, SrcPort: 1024, DstPort: discardPort, Size: e.size}
	if err := spec.Check(); err != nil {
		return running{}, err
	}
	tmpl := make([]byte, spec.Len())
	frame.Build(tmpl, spec)
	var rd *xskReadings
	var p *proc
	err := retryBusy(func() (err error) {
		rd = &xskReadings{first: make(chan struct{})}
		if p, err = startIn(r.bed, x.nsenter, xskArgs(x.bin, column, loop, r.bed.Name, e.workerCPU(0), e.batch, tmpl, r.jumbo), rd.line); err != nil {
			return err
		}
		select {
		case <-rd.first:
			return nil
		case <-p.exited:
			return fmt.Errorf("xskref: %w", errors.Join(p.stop(), p.alive()))
		case <-time.After(10 * time.Second):
			return errors.Join(errors.New("xskref: no first reading in 10s"), p.stop())
		case <-ctx.Done():
			p.stop()
			return ctx.Err()
		}
	})
	if err != nil {
		return running{}, err
	}
	run := running{stop: p.stop, count: func() (reading, error) { return rd.get(), p.alive() }}
	if loop == loopTx {
		return run, nil
	}
	fd, err := r.feed.start(ctx, r.packetioTarget(e.size))
	if err != nil {
		p.stop()
		return running{}, err
	}
	run.offered = fd.sent
	run.stop = func() error { ferr := fd.stop(); return errors.Join(ferr, p.stop()) }
	return run, nil
}
