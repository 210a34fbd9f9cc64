package xdp

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
)

// XDP actions.
const (
	actAborted  = 0
	actDrop     = 1
	actPass     = 2
	actTX       = 3
	actRedirect = 4
)

// xdp_md field offsets.
const (
	mdData          = 0
	mdDataEnd       = 4
	mdDataMeta      = 8
	mdRxQueueIndex  = 16
	labelPass       = "pass"
	labelRedirect   = "redirect"
	labelDeliver    = "deliver"
	programName     = "xsk_filter"
	programLicense  = "Dual BSD/GPL" // the metadata kfuncs need a GPL-compatible program
	maxProgramInsns = 1<<15 - 1      // jump offsets are 16 bits: a longer program could not reach its tails
)

// Clock values in the metadata in front of a stamped frame.
const (
	// ClockDevice is a stamp from the driver's hardware clock
	// (bpf_xdp_metadata_rx_timestamp).
	ClockDevice = 1
	// ClockMonotonic is bpf_ktime_get_ns at the XDP hook: CLOCK_MONOTONIC,
	// the clock of Go's monotonic time readings.
	ClockMonotonic = 2

	// RxMetadataLen is the metadata a stamping program writes in front of
	// each frame: the stamp (u64) and its clock (u64), host byte order.
	RxMetadataLen = 16
)

type tailKind uint8

const (
	tailRedirect tailKind = iota // bpf_redirect_map(xsks, queue, XDP_PASS)
	tailTest                     // return XDP_TX for "matched" (MatchPacket)
)

type stampKind uint8

const (
	stampNone stampKind = iota
	stampMonotonic
	stampDevice // the hardware kfunc, falling back to ktime per packet
)

// progConfig is what one program is assembled from.
type progConfig struct {
	matches, except []Match
	frags           bool
	tail            tailKind
	stamp           stampKind
	vlanKfunc       bool // the prologue asks the driver for a stripped tag
	xsksFD          int
	kfuncs          kfuncIDs
}

// assembleBlock builds one match into a block that starts at entry, checks
// it against the block contract and ends it with a jump to Next.
func assembleBlock(m Match, env MatchEnv, entry string) (asm.Instructions, error) {
	if err := m.Err(); err != nil {
		return nil, err
	}
	env.Data, env.DataEnd = DataRegister, DataEndRegister
	env.block = &blockState{entry: entry, labels: map[string]bool{}}
	body, err := safeBuild(m, env)
	if err != nil {
		return nil, fmt.Errorf("match %s: %w", m.name, err)
	}
	if err := checkBlock(m.name, body); err != nil {
		return nil, err
	}
	// A filler carries the entry label, so a builder may put its own
	// label on its first instruction.
	insns := make(asm.Instructions, 0, len(body)+2)
	insns = append(insns, asm.Mov.Imm(asm.R0, 0).WithSymbol(entry))
	insns = append(insns, body...)
	if n := len(body); n == 0 || body[n-1].OpCode != asm.Ja.Op(asm.ImmSource) {
		insns = append(insns, asm.Ja.Label(env.Next))
	}
	return insns, nil
}

// safeBuild runs a match builder, turning a panic in user code into an
// error: a bad custom match must fail Open, not the process.
func safeBuild(m Match, env MatchEnv) (insns asm.Instructions, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("builder panicked: %v", r)
		}
	}()
	return m.build(env)
}

// validateMatches refuses an empty filter and matches that cannot be used.
func validateMatches(matches, except []Match) error {
	if len(matches) == 0 {
		return fmt.Errorf("%w: no filter: without one the program would take every packet from the kernel, SSH and ARP included; "+
			"name the traffic (WithFilter, WithUDPPorts), take everything on purpose with WithFilter(MatchAll()), or only transmit with WithFilter(MatchNone())",
			packetio.ErrUnsupported)
	}
	for _, m := range matches {
		if err := m.Err(); err != nil {
			return fmt.Errorf("%w: %w", packetio.ErrUnsupported, err)
		}
	}
	for _, m := range except {
		if err := m.Err(); err != nil {
			return fmt.Errorf("%w: exception: %w", packetio.ErrUnsupported, err)
		}
		if m.kind == kindAll {
			return fmt.Errorf("%w: MatchAll as an exception would pass every packet to the kernel", packetio.ErrUnsupported)
		}
	}
	return nil
}

// needsVLAN reports whether any match reads the stripped VLAN tag.
func needsVLAN(ms ...[]Match) bool {
	for _, l := range ms {
		for _, m := range l {
			if m.needsVLAN {
				return true
			}
		}
	}
	return false
}

// assemble builds the whole filter program: prologue, exceptions, matches,
// and the pass and redirect tails.
func assemble(pc progConfig) (asm.Instructions, error) {
	if err := validateMatches(pc.matches, pc.except); err != nil {
		return nil, err
	}
	insns := prologue(pc)
	blocks := make([]Match, 0, len(pc.except)+len(pc.matches))
	blocks = append(blocks, pc.except...)
	blocks = append(blocks, pc.matches...)
	for i, m := range blocks {
		env := MatchEnv{Redirect: labelRedirect, Next: labelPass}
		if i < len(pc.except) {
			env.Redirect = labelPass
		}
		if i+1 < len(blocks) {
			env.Next = fmt.Sprintf("block%d", i+1)
		}
		code, err := assembleBlock(m, env, fmt.Sprintf("block%d", i))
		if err != nil {
			return nil, err
		}
		insns = append(insns, code...)
	}
	insns = append(insns,
		asm.Mov.Imm(asm.R0, actPass).WithSymbol(labelPass),
		asm.Return(),
	)
	insns = append(insns, tail(pc)...)
	if len(insns) > maxProgramInsns {
		return nil, fmt.Errorf("%w: the filter program is %d instructions, more than the kernel's %d", packetio.ErrUnsupported, len(insns), maxProgramInsns)
	}
	return insns, nil
}

// prologue loads the packet bounds and the queue into R6-R8, computes the
// frame base in R9, saves the context for the tail, and fetches a stripped
// VLAN tag where a match needs one.
func prologue(pc progConfig) asm.Instructions {
	var insns asm.Instructions
	if pc.vlanKfunc && needsVLAN(pc.matches, pc.except) {
		insns = append(insns,
			asm.Mov.Reg(asm.R9, asm.R1),
			storeImm64(asm.R10, stackTmp, 0),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, stackTmp),
			asm.Mov.Reg(asm.R3, asm.R10),
			asm.Add.Imm(asm.R3, stackTmp+4),
			pc.kfuncs.call(pc.kfuncs.vlanTag),
			asm.Mov.Imm(asm.R1, noVLAN),
			asm.JNE.Imm(asm.R0, 0, "vlan_done"),
			asm.LoadMem(asm.R1, asm.R10, stackTmp+4, asm.Half),
			asm.And.Imm(asm.R1, 0x0fff),
			asm.StoreMem(asm.R10, stackVLAN, asm.R1, asm.DWord).WithSymbol("vlan_done"),
			asm.Mov.Reg(asm.R1, asm.R9),
		)
	} else if needsVLAN(pc.matches, pc.except) {
		insns = append(insns, storeImm64(asm.R10, stackVLAN, noVLAN))
	}
	if pc.stamp != stampNone {
		insns = append(insns, asm.StoreMem(asm.R10, stackCtx, asm.R1, asm.DWord))
	}
	return append(insns,
		asm.LoadMem(DataEndRegister, asm.R1, mdDataEnd, asm.Word),
		asm.LoadMem(DataRegister, asm.R1, mdData, asm.Word),
		asm.LoadMem(QueueRegister, asm.R1, mdRxQueueIndex, asm.Word),
		asm.Mov.Reg(FrameBaseRegister, DataRegister),
		asm.Mov.Reg(asm.R0, DataRegister),
		asm.Add.Imm(asm.R0, OffEtherType+2),
		asm.JGT.Reg(asm.R0, DataEndRegister, "base_done"),
		asm.LoadMem(asm.R0, DataRegister, OffEtherType, asm.Half),
		asm.JEq.Imm(asm.R0, NetShort(EtherTypeVLAN), "tagged"),
		asm.JNE.Imm(asm.R0, NetShort(EtherTypeQinQ), "base_done"),
		asm.Add.Imm(FrameBaseRegister, 4).WithSymbol("tagged"),
		// Two edges the verifier never takes keep both tails
		// reachable in its control-flow check, whatever the blocks
		// jump to (MatchNone alone never reaches redirect).
		asm.Mov.Imm(asm.R0, 1).WithSymbol("base_done"),
		asm.JEq.Imm(asm.R0, 0, labelPass),
		asm.JEq.Imm(asm.R0, 0, labelRedirect),
	)
}

// tail is what happens to a packet a match took.
func tail(pc progConfig) asm.Instructions {
	if pc.tail == tailTest {
		return asm.Instructions{
			asm.Mov.Imm(asm.R0, actTX).WithSymbol(labelRedirect),
			asm.Return(),
		}
	}
	var insns asm.Instructions
	first := true
	sym := func(ins asm.Instruction) asm.Instruction {
		if first {
			first = false
			return ins.WithSymbol(labelRedirect)
		}
		return ins
	}
	if pc.stamp != stampNone {
		// R9 = stamp, R7 = clock: the blocks are done with them.
		if pc.stamp == stampDevice {
			insns = append(insns,
				sym(asm.LoadMem(asm.R1, asm.R10, stackCtx, asm.DWord)),
				storeImm64(asm.R10, stackTmp, 0),
				asm.Mov.Reg(asm.R2, asm.R10),
				asm.Add.Imm(asm.R2, stackTmp),
				pc.kfuncs.call(pc.kfuncs.timestamp),
				asm.JNE.Imm(asm.R0, 0, "stamp_sw"),
				asm.LoadMem(asm.R9, asm.R10, stackTmp, asm.DWord),
				asm.JEq.Imm(asm.R9, 0, "stamp_sw"),
				asm.Mov.Imm(asm.R7, ClockDevice),
				asm.Ja.Label("stamp_have"),
			)
		}
		ktime := asm.FnKtimeGetNs.Call()
		if pc.stamp == stampDevice {
			ktime = ktime.WithSymbol("stamp_sw")
		} else {
			ktime = sym(ktime)
		}
		insns = append(insns,
			ktime,
			asm.Mov.Reg(asm.R9, asm.R0),
			asm.Mov.Imm(asm.R7, ClockMonotonic),
			asm.LoadMem(asm.R1, asm.R10, stackCtx, asm.DWord).WithSymbol("stamp_have"),
			asm.Mov.Imm(asm.R2, -RxMetadataLen),
			asm.FnXdpAdjustMeta.Call(),
			// A driver without metadata support refuses: deliver the
			// frame unstamped (the queue sees a zero stamp and says
			// its device cannot stamp).
			asm.JNE.Imm(asm.R0, 0, labelDeliver),
			asm.LoadMem(asm.R1, asm.R10, stackCtx, asm.DWord),
			asm.LoadMem(asm.R2, asm.R1, mdDataMeta, asm.Word),
			asm.LoadMem(asm.R3, asm.R1, mdData, asm.Word),
			asm.Mov.Reg(asm.R4, asm.R2),
			asm.Add.Imm(asm.R4, RxMetadataLen),
			asm.JGT.Reg(asm.R4, asm.R3, labelDeliver),
			asm.StoreMem(asm.R2, 0, asm.R9, asm.DWord),
			asm.StoreMem(asm.R2, 8, asm.R7, asm.DWord),
		)
	}
	deliver := asm.LoadMapPtr(asm.R1, pc.xsksFD)
	if first {
		deliver = sym(deliver)
	} else {
		deliver = deliver.WithSymbol(labelDeliver)
	}
	return append(insns,
		deliver,
		asm.Mov.Reg(asm.R2, QueueRegister),
		// The low bits of the flags are the action when the queue has
		// no socket: such packets go to the kernel.
		asm.Mov.Imm(asm.R3, actPass),
		asm.FnRedirectMap.Call(),
		asm.Return(),
	)
}

// storeImm64 is *(u64 *)(dst + off) = imm, sign-extended: the kernel's
// BPF_ST | BPF_DW, which asm.StoreImm does not emit.
func storeImm64(dst asm.Register, off int16, imm int32) asm.Instruction {
	return asm.Instruction{OpCode: asm.StoreImmOp(asm.DWord), Dst: dst, Offset: off, Constant: int64(imm)}
}

// loadProgram loads an assembled program. A verifier rejection is returned
// as a wrapped *ebpf.VerifierError (print it with %+v for the listing).
func loadProgram(insns asm.Instructions, frags bool, ifindex int) (*ebpf.Program, error) {
	spec := &ebpf.ProgramSpec{
		Name:         programName,
		Type:         ebpf.XDP,
		License:      programLicense,
		Instructions: insns,
	}
	if frags {
		spec.Flags |= unix.BPF_F_XDP_HAS_FRAGS
	}
	if ifindex != 0 {
		spec.Flags |= unix.BPF_F_XDP_DEV_BOUND_ONLY
		spec.Ifindex = uint32(ifindex)
	}
	prog, err := ebpf.NewProgram(spec)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("the kernel's verifier refused the filter program: %w", err)
		}
		return nil, fmt.Errorf("load the filter program (needs CAP_BPF and CAP_NET_ADMIN, or root): %w", err)
	}
	return prog, nil
}
