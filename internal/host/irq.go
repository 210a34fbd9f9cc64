package host

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Direction says which half of a queue an interrupt serves.
type Direction uint8

// Directions of a queue interrupt.
const (
	// RxTx is one interrupt for both halves of a queue pair.
	RxTx Direction = iota + 1
	// Rx serves the receive half only.
	Rx
	// Tx serves the transmit half only.
	Tx
)

// String returns "rxtx", "rx" or "tx".
func (d Direction) String() string {
	switch d {
	case RxTx:
		return "rxtx"
	case Rx:
		return "rx"
	case Tx:
		return "tx"
	}
	return "Direction(" + strconv.Itoa(int(d)) + ")"
}

// QueueIRQ is one per-queue interrupt of a device.
type QueueIRQ struct {
	// Queue is the queue (channel) index the interrupt serves.
	Queue int
	// Dir says which half of the queue it serves.
	Dir Direction
	// IRQ is the interrupt number.
	IRQ int
	// Name is its name in /proc/interrupts.
	Name string
	// CPUs is where it lands: effective_affinity_list, or
	// smp_affinity_list where the kernel has no effective list. Empty when
	// neither could be read.
	CPUs []int
}

// CPU returns the first CPU the interrupt lands on, or -1.
func (q QueueIRQ) CPU() int {
	if len(q.CPUs) == 0 {
		return -1
	}
	return q.CPUs[0]
}

// String describes the interrupt, as in "queue 0 rx: irq 38 virtio2-input.0 on CPU 1".
func (q QueueIRQ) String() string {
	where := "on no known CPU"
	if len(q.CPUs) > 0 {
		where = "on CPU " + formatCPUList(q.CPUs)
	}
	return fmt.Sprintf("queue %d %s: irq %d %s %s", q.Queue, q.Dir, q.IRQ, q.Name, where)
}

// ForQueue returns the interrupt that matters for queue q: for a fleet that
// receives, the receive (or combined) one; for a transmit-only fleet, the
// transmit (or combined) one. ok is false when irqs has none for q.
func ForQueue(irqs []QueueIRQ, q int, receive bool) (QueueIRQ, bool) {
	want := Tx
	if receive {
		want = Rx
	}
	var found QueueIRQ
	ok := false
	for _, x := range irqs {
		if x.Queue != q {
			continue
		}
		if x.Dir == want || x.Dir == RxTx {
			return x, true
		}
		if !ok {
			found, ok = x, true
		}
	}
	return found, ok
}

// noIRQ is the Reason prefix every "nothing to place by" answer starts with.
const noIRQ = "no per-queue interrupt found"

// FindIRQs finds the per-queue interrupts of ifname: the MSI interrupts of
// its device (class/net/<if>/device, walking up to the PCI function for
// virtio), named in <procRoot>/interrupts in the way its driver names them,
// with the CPU each lands on from <procRoot>/irq/<n>/. Drivers recognised:
// mlx5_core, mlx4_core, ixgbe, i40e, ice, igb, igc, bnxt_en, ena and
// virtio_net.
//
// A virtual interface (veth, lo), a device without MSI interrupts, an
// unknown driver or no matching name is an *UnavailableError whose Reason
// starts "no per-queue interrupt found". The result is sorted by queue and
// direction.
func FindIRQs(sysRoot, procRoot, ifname string) ([]QueueIRQ, error) {
	what := "interrupts of " + ifname
	if !safeName(ifname) {
		return nil, fmt.Errorf("host: bad interface name %q", ifname)
	}
	netdir := filepath.Join(sysRoot, "class/net", ifname)
	if _, err := os.Stat(netdir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, unavailable(what, "the interface is not in "+filepath.Join(sysRoot, "class/net")+" (another network namespace's sysfs?)", err)
		}
		return nil, fmt.Errorf("host: %s: %w", what, err)
	}
	dev, err := filepath.EvalSymlinks(filepath.Join(netdir, "device"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, unavailable(what, noIRQ+": a virtual interface without a bus device", nil)
		}
		return nil, fmt.Errorf("host: %s: %w", what, err)
	}
	driver := ""
	if l, err := os.Readlink(filepath.Join(dev, "driver")); err == nil {
		driver = filepath.Base(l)
	}
	if matcherFor(driver, ifname, filepath.Base(dev)) == nil {
		if driver == "" {
			return nil, unavailable(what, noIRQ+": the device has no driver bound", nil)
		}
		return nil, unavailable(what, noIRQ+": interrupt names of driver "+driver+" are not recognised", nil)
	}
	msiDir, pci := findMSI(sysRoot, dev)
	if msiDir == "" {
		return nil, unavailable(what, noIRQ+": driver "+driver+" has no MSI interrupts", nil)
	}
	// virtio_net names its interrupts after the virtioN device, mlx5 and
	// mlx4 after the PCI function that has the MSI interrupts.
	match := matcherFor(driver, ifname, filepath.Base(dev))
	if driver == "mlx5_core" || driver == "mlx4_core" {
		match = matcherFor(driver, ifname, pci)
	}
	ents, err := os.ReadDir(msiDir)
	if err != nil {
		return nil, fmt.Errorf("host: %s: %w", what, err)
	}
	mine := map[int]bool{}
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil && n >= 0 {
			mine[n] = true
		}
	}
	if len(mine) == 0 {
		return nil, unavailable(what, noIRQ+": driver "+driver+" has no MSI interrupts", nil)
	}
	f, err := os.Open(filepath.Join(procRoot, "interrupts"))
	if err != nil {
		return nil, classify(what, err)
	}
	names, err := parseInterrupts(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("host: %s: %w", what, err)
	}
	var out []QueueIRQ
	for irq := range mine {
		name, ok := names[irq]
		if !ok {
			continue
		}
		q, dir, ok := match(name)
		if !ok {
			continue
		}
		out = append(out, QueueIRQ{Queue: q, Dir: dir, IRQ: irq, Name: name, CPUs: irqCPUs(procRoot, irq)})
	}
	if len(out) == 0 {
		return nil, unavailable(what, fmt.Sprintf("%s: none of the %d MSI interrupts of driver %s has a per-queue name", noIRQ, len(mine), driver), nil)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Queue != out[j].Queue {
			return out[i].Queue < out[j].Queue
		}
		if out[i].Dir != out[j].Dir {
			return out[i].Dir < out[j].Dir
		}
		return out[i].IRQ < out[j].IRQ
	})
	return out, nil
}

// findMSI walks up from the netdev's device to the first directory with
// msi_irqs (the PCI function; for virtio the virtioN device's parent) and
// returns it with that directory's name. It stops at <sysRoot>/devices.
func findMSI(sysRoot, dev string) (msiDir, name string) {
	stop := filepath.Join(sysRoot, "devices")
	if s, err := filepath.EvalSymlinks(stop); err == nil {
		stop = s
	}
	for d, i := dev, 0; i < 8 && d != stop && strings.HasPrefix(d, stop+string(filepath.Separator)); d, i = filepath.Dir(d), i+1 {
		m := filepath.Join(d, "msi_irqs")
		if fi, err := os.Stat(m); err == nil && fi.IsDir() {
			return m, filepath.Base(d)
		}
	}
	return "", ""
}

// irqCPUs reads where an interrupt lands.
func irqCPUs(procRoot string, irq int) []int {
	dir := filepath.Join(procRoot, "irq", strconv.Itoa(irq))
	for _, f := range []string{"effective_affinity_list", "smp_affinity_list"} {
		if s, err := readFile(filepath.Join(dir, f)); err == nil {
			if l := kernelCPUList(s); len(l) > 0 {
				return l
			}
		}
	}
	return nil
}

// parseInterrupts maps interrupt numbers to the name in the last column of
// /proc/interrupts. Lines that are not numbered interrupts (the CPU header,
// NMI, LOC, ...) are skipped.
func parseInterrupts(r io.Reader) (map[int]string, error) {
	out := map[int]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		num, ok := strings.CutSuffix(fields[0], ":")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(num)
		if err != nil || n < 0 {
			continue
		}
		out[n] = fields[len(fields)-1]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read /proc/interrupts: %w", err)
	}
	return out, nil
}

// matcher maps an interrupt name to its queue, or ok=false.
type matcher func(name string) (queue int, dir Direction, ok bool)

// matcherFor returns how driver names its queue interrupts, or nil for a
// driver this package does not know. dev is the device's sysfs name: the
// PCI address for mlx5 and mlx4, virtioN for virtio_net.
func matcherFor(driver, ifname, dev string) matcher {
	switch driver {
	case "mlx5_core":
		// mlx5_comp<ch>@pci:<bdf>; the async and control EQs are not queues.
		return func(name string) (int, Direction, bool) {
			rest, ok := strings.CutPrefix(name, "mlx5_comp")
			if !ok {
				return 0, 0, false
			}
			ch, at, ok := strings.Cut(rest, "@")
			if !ok || (at != "pci:"+dev && at != dev) {
				return 0, 0, false
			}
			q, ok := queueNumber(ch)
			return q, RxTx, ok
		}
	case "mlx4_core":
		// mlx4-<n>@pci:<bdf> (completion vectors; mlx4-async is not).
		return func(name string) (int, Direction, bool) {
			rest, ok := strings.CutPrefix(name, "mlx4-")
			if !ok {
				return 0, 0, false
			}
			n, at, ok := strings.Cut(rest, "@")
			if !ok || (at != "pci:"+dev && at != dev) {
				return 0, 0, false
			}
			q, ok := queueNumber(n)
			return q, RxTx, ok
		}
	case "ixgbe", "i40e", "ice", "igb", "igc", "bnxt_en":
		// <ifname>-TxRx-<q>, or -rx-/-tx- when the halves are apart; i40e
		// and ice put their driver name and a dash in front.
		return func(name string) (int, Direction, bool) {
			for _, v := range []struct {
				infix string
				dir   Direction
			}{{"-TxRx-", RxTx}, {"-rx-", Rx}, {"-tx-", Tx}} {
				if q, ok := ifnameQueue(name, ifname, v.infix); ok {
					return q, v.dir, true
				}
			}
			return 0, 0, false
		}
	case "ena":
		// <ifname>-Tx-Rx-<q>; ena-mgmnt@pci:<bdf> is the admin queue.
		return func(name string) (int, Direction, bool) {
			q, ok := ifnameQueue(name, ifname, "-Tx-Rx-")
			return q, RxTx, ok
		}
	case "virtio_net":
		// virtioN-input.<q> and virtioN-output.<q>; virtioN-config and a
		// shared virtioN-virtqueues are not per-queue.
		return func(name string) (int, Direction, bool) {
			rest, ok := strings.CutPrefix(name, dev+"-")
			if !ok {
				return 0, 0, false
			}
			if n, ok := strings.CutPrefix(rest, "input."); ok {
				q, ok := queueNumber(n)
				return q, Rx, ok
			}
			if n, ok := strings.CutPrefix(rest, "output."); ok {
				q, ok := queueNumber(n)
				return q, Tx, ok
			}
			return 0, 0, false
		}
	}
	return nil
}

// ifnameQueue parses "[prefix-]<ifname><infix><q>".
func ifnameQueue(name, ifname, infix string) (int, bool) {
	i := strings.LastIndex(name, ifname+infix)
	if i < 0 || (i > 0 && name[i-1] != '-') {
		return 0, false
	}
	return queueNumber(name[i+len(ifname)+len(infix):])
}

// queueNumber parses a queue index: decimal digits only, at most 65535.
func queueNumber(s string) (int, bool) {
	if s == "" || len(s) > 5 {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n <= 65535
}
