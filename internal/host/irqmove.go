package host

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// MoveIRQ routes interrupt irq to cpus by writing
// <procRoot>/irq/<irq>/smp_affinity_list, recorded in j so Restore puts the
// original list back. changed reports whether anything was written (false
// when the interrupt already had exactly that list, or another journal had
// already moved it there).
//
// Interrupt routing is host-wide, not per network namespace. A kernel that
// refuses (a managed interrupt, no permission, read-only /proc) gives an
// *UnavailableError.
func MoveIRQ(j *Journal, procRoot string, irq int, cpus []int) (changed bool, err error) {
	if irq < 0 {
		return false, fmt.Errorf("host: move irq %d: bad interrupt number", irq)
	}
	if len(cpus) == 0 {
		return false, fmt.Errorf("host: move irq %d: no CPUs given", irq)
	}
	for _, c := range cpus {
		if c < 0 || c > MaxCPU {
			return false, fmt.Errorf("host: move irq %d: CPU %d is outside 0-%d", irq, c, MaxCPU)
		}
	}
	what := "smp_affinity_list of irq " + strconv.Itoa(irq)
	path := filepath.Join(procRoot, "irq", strconv.Itoa(irq), "smp_affinity_list")
	k := key{kind: kindIRQ, root: absRoot(procRoot), iface: "irq " + strconv.Itoa(irq), setting: "smp_affinity_list"}
	return j.acquire(k, what, formatCPUList(cpus), func() (handle, error) {
		h, err := openFile(what, path)
		if err != nil {
			return nil, err
		}
		return cpuListHandle{h}, nil
	})
}

// cpuListHandle reads a CPU list in canonical form, so "0-1" and "0,1"
// compare equal.
type cpuListHandle struct{ handle }

func (h cpuListHandle) read() (string, error) {
	s, err := h.handle.read()
	if err != nil {
		return "", err
	}
	if l := kernelCPUList(s); len(l) > 0 {
		return formatCPUList(l), nil
	}
	return s, nil
}
