package filter

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"

	"github.com/packetio/packetio"
)

// Classifier is a Program loaded on its own so that packets can be run
// through it with BPF_PROG_TEST_RUN: no interface, no traffic, the kernel's
// own verdict on the same eBPF a backend attaches. Load one and run many
// packets through it; loading a program per packet is slow, and a tight
// loop of loads and frees has wedged a kernel's BPF allocator before.
type Classifier struct {
	mu   sync.Mutex
	prog *ebpf.Program
}

// NewClassifier loads p with its verdict replaced by VerdictTX and without
// arrival stamps or kfuncs (there is no device to bind to). It needs
// CAP_BPF and CAP_NET_ADMIN, or root; a verifier rejection comes back as a
// wrapped *ebpf.VerifierError (IsVerifierError).
func NewClassifier(p Program) (*Classifier, error) {
	p.Verdict, p.Stamp, p.VLANKfunc, p.Kfuncs, p.XSKMapFD = VerdictTX, StampNone, false, Kfuncs{}, 0
	prog, err := p.Load(0)
	if err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	return &Classifier{prog: prog}, nil
}

// Match reports whether the program takes frame (true) or passes it to the
// kernel (false). frame is an Ethernet frame of at least 14 bytes.
func (c *Classifier) Match(frame []byte) (bool, error) {
	if err := checkFrame(frame); err != nil {
		return false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.prog == nil {
		return false, fmt.Errorf("filter: classifier: %w", packetio.ErrClosed)
	}
	ret, err := c.prog.Run(&ebpf.RunOptions{Data: frame})
	if err != nil {
		return false, fmt.Errorf("filter: run the program (BPF_PROG_TEST_RUN): %w", err)
	}
	switch ret {
	case actTX:
		return true, nil
	case actPass:
		return false, nil
	}
	return false, fmt.Errorf("filter: the program returned %d, neither a match nor a pass", ret)
}

// Close unloads the program. It is idempotent.
func (c *Classifier) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.prog == nil {
		return nil
	}
	err := c.prog.Close()
	c.prog = nil
	return err
}

// MatchPacket runs frame through p in the kernel and reports whether p
// takes it, so a wrong offset or a missed byte swap shows exactly as it
// would on a NIC. Test the near misses too. It loads a program per call:
// for many packets, use NewClassifier.
func MatchPacket(frame []byte, p Program) (bool, error) {
	if err := checkFrame(frame); err != nil {
		return false, err
	}
	c, err := NewClassifier(p)
	if err != nil {
		return false, err
	}
	defer c.Close()
	return c.Match(frame)
}

// checkFrame refuses what BPF_PROG_TEST_RUN refuses.
func checkFrame(frame []byte) error {
	if len(frame) < 14 {
		return fmt.Errorf("filter: %w: a %d-byte frame is shorter than an Ethernet header (the kernel refuses to run it)", packetio.ErrBadLength, len(frame))
	}
	return nil
}

// IsVerifierError reports whether err carries the kernel verifier's
// rejection of a program.
func IsVerifierError(err error) bool {
	var ve *ebpf.VerifierError
	return errors.As(err, &ve)
}
