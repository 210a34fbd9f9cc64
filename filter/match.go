package filter

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/asm"
)

// Match is one condition of a Program: a block of eBPF that decides
// whether a packet is taken (Program.Matches) or stays with the kernel
// (Program.Except). Build one with a Match function of this package,
// NewMatch, or bpfmatch and pcapfilter. The zero Match is invalid and
// refused by Program.Instructions.
//
// A Match is a value; it holds no kernel resources and may be reused across
// programs. Its builder may run several times per Open of a backend (once
// per XDP mode tried), so it must be deterministic and free of side effects.
type Match struct {
	name  string
	build func(MatchEnv) (asm.Instructions, error)
	err   error
	kind  matchKind
	// needsVLAN says the block reads the VLAN ID the driver stripped,
	// which the prologue then fetches.
	needsVLAN bool
}

type matchKind uint8

const (
	kindInvalid matchKind = iota
	kindBlock             // an ordinary block
	kindAll               // MatchAll: jumps straight to Redirect
	kindNone              // MatchNone: jumps straight to Next
)

// String is the match's description, as a backend's Info shows it.
func (m Match) String() string {
	if m.kind == kindInvalid {
		return "invalid match"
	}
	return m.name
}

// IsNone reports whether m is MatchNone: a program of such matches takes
// nothing, and a backend need not prepare to receive.
func (m Match) IsNone() bool { return m.kind == kindNone }

// Err is the error the match was built with (a bad CIDR, a bad argument), or
// nil. Program.Instructions and MatchPacket refuse a match whose Err is not nil.
func (m Match) Err() error {
	if m.kind == kindInvalid && m.err == nil {
		return errors.New("filter: zero Match (build matches with the Match functions or NewMatch)")
	}
	return m.err
}

// NewMatch makes a custom match from a builder of eBPF instructions. The
// builder receives the environment of its block and returns instructions that
// jump to env.Redirect when the packet matches; falling off the end, or
// jumping to env.Next, means no match. The name is a label: it shows in
// a backend's Info and in errors and has no effect on matching.
//
// The block is spliced into a larger program, so it must keep to the
// contract MatchEnv describes: it may read R6 (data end), R7 (frame start) and
// R9 (frame base with one VLAN tag skipped) but never write them, it may not
// mention R8 at all (the redirect tail reads the queue from it: a block that
// changed it would deliver packets to another queue's socket), it may not
// return (no Exit: a block decides by jumping, so exceptions always run
// first), and it may use only the BlockStack bytes below the frame pointer.
// Program.Instructions checks all of this and refuses a block that breaks it, before the
// verifier sees it.
func NewMatch(name string, build func(env MatchEnv) (asm.Instructions, error)) Match {
	if build == nil {
		return MatchError(name, errors.New("nil builder"))
	}
	if name == "" {
		name = "custom"
	}
	return Match{name: name, build: build, kind: kindBlock}
}

// MatchError is a match that carries an error instead of instructions:
// Program.Instructions and MatchPacket report err, prefixed with name. Builders of matches that
// take arguments use it to refuse a bad argument without panicking.
func MatchError(name string, err error) Match {
	if err == nil {
		err = errors.New("unknown error")
	}
	return Match{name: name, err: fmt.Errorf("match %s: %w", name, err), kind: kindBlock}
}

// Registers of the filter program. Blocks read the first three and never
// write them; QueueRegister is off limits entirely.
const (
	// DataEndRegister holds the end of the packet's first buffer
	// (xdp_md.data_end). Every packet read must be bounds-checked
	// against it, which MatchEnv.Bounds does.
	DataEndRegister = asm.R6
	// DataRegister holds the start of the frame as received, with any
	// VLAN tag still in it (xdp_md.data).
	DataRegister = asm.R7
	// QueueRegister holds the receive queue index: the redirect tail uses
	// it as the key of the socket map. A block may not name it.
	QueueRegister = asm.R8
	// FrameBaseRegister holds the frame start plus 4 when the frame
	// carries one 802.1Q or 802.1ad tag, so that offsets from it are those
	// of an untagged frame. The prologue sets it once for every block.
	FrameBaseRegister = asm.R9
)

// BlockStack is how many bytes of stack a block may use: R10-BlockStack up
// to R10-1. They are not preserved from one block to the next. The program
// keeps its own state below them.
const BlockStack = 64

// Stack offsets (from R10) the program itself uses, below the blocks' area.
const (
	stackCtx  = -BlockStack - 8  // the xdp_md pointer, for the tail's helpers
	stackVLAN = -BlockStack - 16 // the VLAN ID the driver stripped, or -1
	stackTmp  = -BlockStack - 24 // scratch for kfunc out-parameters
)

// MatchEnv is what a NewMatch builder gets: the labels to jump to, the
// registers to read, and helpers that emit the checks the verifier needs.
// The helpers clobber scratch registers (R0-R5), so load the values a block
// compares after its last helper call.
type MatchEnv struct {
	// Next is the label of the next block: jump there when the packet
	// does not match.
	Next string
	// Redirect is the label to jump to when the packet matches (for an
	// exception, the label that passes it to the kernel).
	Redirect string
	// Data is the register holding the frame start (R7).
	Data asm.Register
	// DataEnd is the register holding the end of the first buffer (R6).
	DataEnd asm.Register

	block *blockState
}

// blockState gives each block its own label namespace.
type blockState struct {
	entry  string
	labels map[string]bool
}

// FrameBase returns the register holding the frame base: the frame start,
// moved past one 802.1Q (0x8100) or 802.1ad (0x88a8) tag when the frame has
// one, so offsets from it are those of an untagged frame (EtherType at 12,
// IPv4 header at 14). The prologue computes it once for every block, so the
// instructions returned are empty; they are returned so that a builder
// written for a per-block base keeps working. A frame with two tags is based
// after the first one: its EtherType is the inner tag's TPID, so no IP match
// fires on it.
func (e MatchEnv) FrameBase() (asm.Instructions, asm.Register) {
	return nil, FrameBaseRegister
}

// Bounds returns the check that n bytes from base lie inside the packet's
// first buffer, jumping to Next when they do not. Every packet load needs one
// covering it, or the verifier refuses the program. It writes R0 and nothing
// else: base, and a packet pointer a block computed into it, survive, which
// is what lets a block check from a pointer it moved (past an IPv4 header of
// variable length, say).
func (e MatchEnv) Bounds(base asm.Register, n int) asm.Instructions {
	return boundsTo(base, n, e.Next)
}

// Label returns a label unique to this block, for the block's own control
// flow. The same name gives the same label within one block.
func (e MatchEnv) Label(name string) string {
	if e.block == nil {
		return "u_" + name
	}
	e.block.labels[name] = true
	return e.block.entry + "_u_" + name
}

// Length returns instructions that load the length of the packet's first
// buffer (data_end - data) into dst, a scratch register. Subtracting two
// packet pointers needs CAP_PERFMON (root has it).
func (e MatchEnv) Length(dst asm.Register) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(dst, DataEndRegister),
		asm.Sub.Reg(dst, DataRegister),
	}
}

// boundsTo is Bounds with an explicit miss label.
func boundsTo(base asm.Register, n int, miss string) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R0, base),
		asm.Add.Imm(asm.R0, int32(n)),
		asm.JGT.Reg(asm.R0, DataEndRegister, miss),
	}
}

// NetShort converts a 16-bit network-order field value into the value a
// 16-bit load (asm.Half) produces on this host, so it can be compared with
// an immediate: NetShort(0x0800) matches the IPv4 EtherType.
func NetShort(v uint16) int32 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return int32(binary.NativeEndian.Uint16(b[:]))
}

// NetWord converts a 32-bit network-order field value into what a 32-bit
// load (asm.Word) produces on this host, for a 32-bit compare: compare it
// with JEq.Imm32 or JNE.Imm32, because a 64-bit compare sign-extends an
// immediate with its top bit set and never equals the zero-extended load.
func NetWord(v uint32) int32 { return netWord(v) }

// netWord is NetWord.
func netWord(v uint32) int32 {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return int32(binary.NativeEndian.Uint32(b[:]))
}

// EtherTypes and offsets the built-in matchers use, relative to the frame
// base (FrameBase).
const (
	EtherTypeIPv4 = 0x0800
	EtherTypeARP  = 0x0806
	EtherTypeVLAN = 0x8100
	EtherTypeQinQ = 0x88a8
	EtherTypeIPv6 = 0x86dd

	// OffEtherType is the offset of the EtherType from the frame base.
	OffEtherType = 12
)

// checkBlock enforces the block contract of NewMatch on one assembled block.
func checkBlock(name string, insns asm.Instructions) error {
	for i, ins := range insns {
		op := ins.OpCode
		if ins.Dst == QueueRegister || (usesSrcReg(ins) && ins.Src == QueueRegister) {
			return fmt.Errorf("match %s: instruction %d (%v) names R8, which holds the receive queue the redirect tail uses to choose a socket; use R0-R5", name, i, ins)
		}
		if op.JumpOp() == asm.Exit && isJump(op) {
			return fmt.Errorf("match %s: instruction %d returns; a block must decide by jumping to Redirect or Next, so that exceptions always run first", name, i)
		}
		if writesDst(ins) {
			switch ins.Dst {
			case DataEndRegister, DataRegister, FrameBaseRegister:
				return fmt.Errorf("match %s: instruction %d (%v) writes %s, which every later block reads; copy it to R0-R5 first", name, i, ins, strings.ToUpper(ins.Dst.String()))
			case asm.R10:
				return fmt.Errorf("match %s: instruction %d writes the frame pointer", name, i)
			}
		}
		if isStore(op) && ins.Dst == asm.R10 && (ins.Offset < -BlockStack || ins.Offset >= 0) {
			return fmt.Errorf("match %s: instruction %d stores at R10%+d, outside the %d bytes of stack a block may use", name, i, ins.Offset, BlockStack)
		}
	}
	return nil
}

func isJump(op asm.OpCode) bool {
	c := op.Class()
	return c == asm.JumpClass || c == asm.Jump32Class
}

func isStore(op asm.OpCode) bool {
	c := op.Class()
	return c == asm.StClass || c == asm.StXClass
}

// usesSrcReg reports whether the instruction's Src field names a register
// (and not a pseudo source such as a map or kfunc reference).
func usesSrcReg(ins asm.Instruction) bool {
	op := ins.OpCode
	switch op.Class() {
	case asm.LdClass:
		return false // 64-bit immediate loads: Src is a pseudo kind
	case asm.JumpClass, asm.Jump32Class:
		if op.JumpOp() == asm.Call || op.JumpOp() == asm.Exit || op.JumpOp() == asm.Ja {
			return false
		}
		return op.Source() == asm.RegSource
	case asm.ALUClass, asm.ALU64Class:
		return op.Source() == asm.RegSource
	}
	return true // loads and stores through a register
}

// writesDst reports whether the instruction writes its Dst register.
func writesDst(ins asm.Instruction) bool {
	switch ins.OpCode.Class() {
	case asm.ALUClass, asm.ALU64Class, asm.LdClass, asm.LdXClass:
		return true
	case asm.StXClass:
		// An atomic with fetch writes its Src, never Dst.
		return false
	}
	return false
}

// Describe joins the names of a program's matches and exceptions in one
// line for a backend's Info; mgmt (ManagementDesc) leads the exceptions.
func Describe(matches, except []Match, mgmt string) string {
	names := make([]string, 0, len(matches))
	for _, m := range matches {
		names = append(names, m.String())
	}
	s := strings.Join(names, " | ")
	if s == "" {
		s = "none"
	}
	var ex []string
	if mgmt != "" {
		ex = append(ex, mgmt)
	}
	for _, m := range except {
		ex = append(ex, m.String())
	}
	if len(ex) > 0 {
		s += " (except " + strings.Join(ex, "; ") + ")"
	}
	return s
}

// portList renders ports for a match name: "53,443".
func portList(ports []uint16) string {
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
}
