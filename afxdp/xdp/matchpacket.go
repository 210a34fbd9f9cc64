package xdp

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cilium/ebpf"

	"github.com/packetio/packetio"
)

// Classifier is the filter program Open would attach, loaded on its own so
// that packets can be run through it with BPF_PROG_TEST_RUN: no interface,
// no traffic, the kernel's own verdict. Load one and run many packets
// through it; loading a program per packet is slow, and a tight loop of
// loads and frees has wedged this kernel's BPF allocator before.
type Classifier struct {
	mu   sync.Mutex
	prog *ebpf.Program
}

// NewClassifier loads the filter the options describe (WithFilter,
// WithExcept, WithKeepManagement, WithMultiBuffer) as Open would build it,
// with the tails replaced by verdicts. WithKeepManagement is unscoped here:
// there is no interface whose addresses could scope it. It needs the
// privileges Open needs (CAP_BPF and CAP_NET_ADMIN, or root); a verifier
// rejection comes back as a wrapped *ebpf.VerifierError.
func NewClassifier(opts ...Option) (*Classifier, error) {
	c := newConfig(opts)
	except := c.except
	if c.keepMgmt {
		except = append(managementRules(c.mgmtPorts, nil), except...)
	}
	insns, err := assemble(progConfig{matches: c.matches, except: except, frags: c.multiBuf, tail: tailTest})
	if err != nil {
		return nil, fmt.Errorf("xdp: %w", err)
	}
	prog, err := loadProgram(insns, c.multiBuf, 0)
	if err != nil {
		return nil, fmt.Errorf("xdp: %w", err)
	}
	return &Classifier{prog: prog}, nil
}

// Match reports whether the filter redirects frame to the sockets (true) or
// passes it to the kernel (false). frame is an Ethernet frame of at least 14
// bytes.
func (c *Classifier) Match(frame []byte) (bool, error) {
	if len(frame) < 14 {
		return false, fmt.Errorf("xdp: %w: a %d-byte frame is shorter than an Ethernet header (the kernel refuses to run it)", packetio.ErrBadLength, len(frame))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.prog == nil {
		return false, fmt.Errorf("xdp: classifier: %w", packetio.ErrClosed)
	}
	ret, err := c.prog.Run(&ebpf.RunOptions{Data: frame})
	if err != nil {
		return false, fmt.Errorf("xdp: run the filter (BPF_PROG_TEST_RUN): %w", err)
	}
	switch ret {
	case actTX:
		return true, nil
	case actPass:
		return false, nil
	}
	return false, fmt.Errorf("xdp: the filter returned %d, neither a match nor a pass", ret)
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

// MatchPacket runs frame through the filter the options describe and reports
// whether it would be redirected. It assembles and runs the same eBPF Open
// attaches, in the kernel, so a wrong offset or a missed byte swap shows
// exactly as it would on a NIC. Test the near misses too. It loads a program
// per call: for many packets, use NewClassifier.
//
// A verifier rejection and missing privileges both come from the kernel as
// EACCES; tell them apart with errors.As(err, new(*ebpf.VerifierError)).
func MatchPacket(frame []byte, opts ...Option) (bool, error) {
	if len(frame) < 14 {
		return false, fmt.Errorf("xdp: %w: a %d-byte frame is shorter than an Ethernet header (the kernel refuses to run it)", packetio.ErrBadLength, len(frame))
	}
	c, err := NewClassifier(opts...)
	if err != nil {
		return false, err
	}
	defer c.Close()
	return c.Match(frame)
}

// IsVerifierError reports whether err carries the kernel verifier's
// rejection of a program.
func IsVerifierError(err error) bool {
	var ve *ebpf.VerifierError
	return errors.As(err, &ve)
}
