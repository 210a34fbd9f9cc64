// Package bpfmatch turns a classic BPF program (the instruction set tcpdump
// and libpcap compile filter expressions to) into a filter.Match: a block of
// eBPF spliced into the AF_XDP filter program, so that a tcpdump filter
// becomes an in-kernel steering rule. It is pure Go; the translator is our
// own (no cbpfc, no cgo, no libpcap).
//
//	insns := []bpf.Instruction{ // tcpdump -ddd 'udp port 53', or pcapfilter.Compile
//		...
//	}
//	fleet, err := xdp.Open("eth0", xdp.WithFilter(bpfmatch.Match("dns", insns)))
//
// # Semantics
//
// A packet matches when the classic program, run over the frame as XDP
// received it, returns a nonzero value; a program that returns 0 does not
// match. The program sees the frame from its first byte: offsets are
// Ethernet-relative and a VLAN tag, if the frame carries one, is still in
// it (pcap filters handle tags themselves; there is no VLAN skip). Exactly
// as in classic BPF:
//
//   - a load past the end of the packet ends the program with 0 (no match);
//   - A, X and the sixteen scratch words M[0..15] start at zero;
//   - all arithmetic is unsigned 32-bit, and loads of 2 and 4 bytes are in
//     network byte order;
//   - a division or modulo by X when X is 0 ends the program with 0;
//   - a shift by X of 32 or more gives 0 (golang.org/x/net/bpf's VM
//     semantics; the Linux interpreter leaves this to the CPU);
//   - ld #len (bpf.LoadExtension{Num: bpf.ExtLen}) is the length of the
//     frame's first buffer (under xdp.WithMultiBuffer, the first fragment
//     only, as any read past it fails); computing it subtracts two packet
//     pointers, which the verifier allows with CAP_PERFMON (root has it);
//   - NegateA is supported (golang.org/x/net/bpf's VM lacks it; the tests
//     check it against the VM running A = (A ^ 0xffffffff) + 1).
//
// The translation is verified against golang.org/x/net/bpf's VM, the
// reference, by a differential test that runs hand-written, libpcap-compiled
// and random programs over a few hundred frames through both the VM and the
// kernel (BPF_PROG_TEST_RUN), and by a fuzz target doing the same.
//
// # Refused, with an error
//
//   - an empty program, or one longer than MaxInstructions (4096, the
//     kernel's BPF_MAXINSNS);
//   - an instruction that does not assemble, or a raw instruction
//     (bpf.RawInstruction, the tcpdump -ddd form) golang.org/x/net/bpf
//     cannot decode;
//   - ancillary loads (bpf.LoadExtension other than ExtLen) and loads at a
//     negative offset, which is how Linux addresses socket-buffer metadata
//     (SKF_AD_OFF -0x1000, SKF_NET_OFF -0x100000, SKF_LL_OFF -0x200000):
//     XDP has no socket buffer. Filters compiled against a live capture
//     handle can contain them (libpcap's vlan on a live Linux handle);
//     those compiled against a dead handle (tcpdump -ddd, pcapfilter)
//     never do;
//   - jumps past the end, and a last instruction that is not a return;
//   - division or modulo by the constant 0, and shifts by a constant of 32
//     or more (the eBPF verifier rejects those);
//   - a translation too long for eBPF's 16-bit jump offsets.
//
// A load at a non-negative offset that no packet can reach (offset plus size
// beyond 65535, the verifier's packet limit) is not an error: it fails like
// any load past the end, so the path through it never matches.
//
// # The block
//
// A is R2, X is R3, R4 and R5 are temporaries and R0 and R1 scratch; M[i]
// is the word at R10-4*(i+1), within the 64 bytes of stack a block may use.
// Only the code reachable from the first instruction is emitted (the
// verifier rejects dead code). Absolute loads are covered by one bounds
// check at the top of their basic block, for the length every accepting
// path from that block needs (a shorter packet cannot match, so refusing it
// there changes no verdict), and left out where every path into the block
// has proven the length already; a block from which no path accepts is a
// jump to the next match. Every indirect load gets its own check, with the
// unsigned bound on X the verifier needs.
package bpfmatch
