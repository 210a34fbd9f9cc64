// Package filter owns packet classification in eBPF, for any backend: the
// match blocks (Match, NewMatch and the Match functions), the rules that
// keep a host reachable (ManagementRules), and the builder that assembles
// them into one XDP program from a plain description (Program), together
// with a way to run that program over a frame in the kernel without an
// interface (Classifier, MatchPacket).
//
// It imports no backend: afxdp/xdp translates its options into a Program
// and attaches the result; its subpackages compile classic BPF
// (filter/bpfmatch) and tcpdump expressions (filter/pcapfilter) into
// Matches.
//
// # The block contract
//
// A program is a prologue, the exceptions, the matches, and two tails. The
// prologue loads the packet bounds into DataRegister and DataEndRegister,
// the receive queue into QueueRegister, and the frame base (past one VLAN
// tag) into FrameBaseRegister. Each Match is a block that jumps to
// MatchEnv.Redirect when it takes the packet and to MatchEnv.Next when it
// does not; NewMatch documents what a block may and may not touch, and
// Program.Instructions refuses a block that breaks it before the verifier
// sees it.
package filter
