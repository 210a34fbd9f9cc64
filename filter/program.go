package filter

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/xdpbtf"
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

// XSKMapName is the symbol a redirecting program refers to its XSKMAP by
// when Program.XSKMapFD does not name one.
const XSKMapName = "xsks"

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

// Verdict is what a program does with a packet one of its matches took.
type Verdict uint8

const (
	// VerdictRedirect redirects the packet into Program.XSKMapFD at the
	// packet's receive queue (bpf_redirect_map), passing it to the kernel
	// when that queue has no socket: what an AF_XDP receiver attaches.
	VerdictRedirect Verdict = iota
	// VerdictTX returns XDP_TX for a taken packet and XDP_PASS for any
	// other: the verdict a Classifier reads back from BPF_PROG_TEST_RUN.
	VerdictTX
)

// Stamp says whether and how the program stamps a taken packet's arrival
// in the metadata in front of it (RxMetadataLen bytes: stamp, clock).
type Stamp uint8

const (
	// StampNone writes no metadata.
	StampNone Stamp = iota
	// StampMonotonic stamps with bpf_ktime_get_ns (ClockMonotonic).
	StampMonotonic
	// StampDevice asks the driver for its hardware stamp
	// (bpf_xdp_metadata_rx_timestamp, ClockDevice) and falls back to
	// StampMonotonic per packet where the driver has none. It needs
	// Kfuncs.Timestamp and a device-bound load.
	StampDevice
)

// Program is the plain description a classification program is built
// from. Backends translate their own options into one; nothing here
// refers to a backend. The zero Program is refused: it names no traffic.
type Program struct {
	// Matches are the traffic the program takes: a packet any of them
	// matches gets the Verdict.
	Matches []Match
	// Except are checked first: a packet any of them matches goes to the
	// kernel (XDP_PASS), whatever Matches say. ManagementRules makes the
	// usual ones.
	Except []Match
	// Frags marks the program as able to see multi-buffer packets
	// (BPF_F_XDP_HAS_FRAGS); the matches still read only the first buffer.
	Frags bool
	// Verdict is what a taken packet gets.
	Verdict Verdict
	// XSKMapFD is the XSKMAP VerdictRedirect redirects into. 0 (or
	// less) leaves the map to be named at load: the instruction refers to
	// the symbol XSKMapName, which a collection with a map of that name,
	// or Instructions.AssociateMap, resolves.
	XSKMapFD int
	// Stamp is the arrival stamp written in front of a redirected packet.
	Stamp Stamp
	// StampInFrame writes the stamp into the frame itself, RxMetadataLen
	// bytes grown in front of the packet with bpf_xdp_adjust_head,
	// instead of into the metadata area: every driver takes it, so do
	// kernels whose XDP programs may not call bpf_xdp_adjust_meta, and a
	// socket never gets a packet without one, so the receiver need not
	// clear a slot in each frame it posts to tell (afxdp/xdp stamps this
	// way). The receiver strips those bytes, which then sit where the
	// metadata would. Only a packet bound for a socket grows: with no
	// socket at its queue it goes to the kernel as it came, and one whose
	// socket goes in between is aborted rather than passed on with the
	// stamp in front.
	StampInFrame bool
	// VLANKfunc has the prologue ask the driver for a VLAN tag it
	// stripped (bpf_xdp_metadata_rx_vlan_tag) when a match reads the tag.
	// It needs Kfuncs.VLANTag and a device-bound load.
	VLANKfunc bool
	// Kfuncs are the kernel's ids of the metadata kfuncs (LookupKfuncs).
	Kfuncs Kfuncs
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
// error: a bad custom match must fail the program's assembly, not the
// process.
func safeBuild(m Match, env MatchEnv) (insns asm.Instructions, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("builder panicked: %v", r)
		}
	}()
	return m.build(env)
}

// Validate refuses an empty filter and matches that cannot be used, as
// Instructions would, without assembling anything.
func Validate(matches, except []Match) error {
	if len(matches) == 0 {
		return fmt.Errorf("%w: no filter: without one the program would take every packet from the kernel, SSH and ARP included; "+
			"name the traffic, take everything on purpose with MatchAll(), or take nothing with MatchNone()",
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

// NeedsVLAN reports whether any match reads the VLAN tag a driver may
// strip, which Program.VLANKfunc then fetches.
func NeedsVLAN(ms ...[]Match) bool {
	for _, l := range ms {
		for _, m := range l {
			if m.needsVLAN {
				return true
			}
		}
	}
	return false
}

// Instructions assembles the whole program: prologue, exceptions, matches,
// and the pass and verdict tails. It refuses (with packetio.ErrUnsupported)
// a program with no matches, a match that carries an error or breaks the
// block contract, and a program longer than the kernel takes.
//
// The result is optimized (optimize): the blocks' repeated guards, the
// fillers that hold their labels and whatever no packet reaches are
// gone, and what the program kept in callee-saved registers (R6-R9) moves
// into free argument registers where no call is in the way, so the JIT
// saves and restores none of them: a packet the sweep's filter (a
// destination prefix and a UDP port) takes runs 38 instructions where it
// ran 51, and one that SteeringFilter{Promiscuous: true} takes 5 where it
// ran 20 (testdata/optimized). The registers a block is given (MatchEnv)
// are unchanged: the renaming runs on the assembled program.
func (pc Program) Instructions() (asm.Instructions, error) {
	return pc.assemble(true)
}

// assemble is Instructions, optimized or as the blocks were assembled.
func (pc Program) assemble(optimized bool) (asm.Instructions, error) {
	if err := Validate(pc.Matches, pc.Except); err != nil {
		return nil, err
	}
	insns := prologue(pc)
	blocks := make([]Match, 0, len(pc.Except)+len(pc.Matches))
	blocks = append(blocks, pc.Except...)
	blocks = append(blocks, pc.Matches...)
	for i, m := range blocks {
		env := MatchEnv{Redirect: labelRedirect, Next: labelPass}
		if i < len(pc.Except) {
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
	if optimized {
		insns = optimize(insns)
	}
	if len(insns) > maxProgramInsns {
		return nil, fmt.Errorf("%w: the filter program is %d instructions, more than the kernel's %d", packetio.ErrUnsupported, len(insns), maxProgramInsns)
	}
	return insns, nil
}

// prologue loads the packet bounds and the queue into R6-R8, computes the
// frame base in R9, saves the context for the tail, and fetches a stripped
// VLAN tag where a match needs one.
func prologue(pc Program) asm.Instructions {
	var insns asm.Instructions
	if pc.VLANKfunc && NeedsVLAN(pc.Matches, pc.Except) {
		insns = append(insns,
			asm.Mov.Reg(asm.R9, asm.R1),
			storeImm64(asm.R10, stackTmp, 0),
			asm.Mov.Reg(asm.R2, asm.R10),
			asm.Add.Imm(asm.R2, stackTmp),
			asm.Mov.Reg(asm.R3, asm.R10),
			asm.Add.Imm(asm.R3, stackTmp+4),
			pc.Kfuncs.call(pc.Kfuncs.VLANTag),
			asm.Mov.Imm(asm.R1, noVLAN),
			asm.JNE.Imm(asm.R0, 0, "vlan_done"),
			asm.LoadMem(asm.R1, asm.R10, stackTmp+4, asm.Half),
			asm.And.Imm(asm.R1, 0x0fff),
			asm.StoreMem(asm.R10, stackVLAN, asm.R1, asm.DWord).WithSymbol("vlan_done"),
			asm.Mov.Reg(asm.R1, asm.R9),
		)
	} else if NeedsVLAN(pc.Matches, pc.Except) {
		insns = append(insns, storeImm64(asm.R10, stackVLAN, noVLAN))
	}
	if pc.Stamp != StampNone {
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
func tail(pc Program) asm.Instructions {
	if pc.Verdict == VerdictTX {
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
	if pc.Stamp != StampNone {
		// R9 = stamp, R7 = clock: the blocks are done with them.
		if pc.Stamp == StampDevice {
			insns = append(insns,
				sym(asm.LoadMem(asm.R1, asm.R10, stackCtx, asm.DWord)),
				storeImm64(asm.R10, stackTmp, 0),
				asm.Mov.Reg(asm.R2, asm.R10),
				asm.Add.Imm(asm.R2, stackTmp),
				pc.Kfuncs.call(pc.Kfuncs.Timestamp),
				asm.JNE.Imm(asm.R0, 0, "stamp_sw"),
				asm.LoadMem(asm.R9, asm.R10, stackTmp, asm.DWord),
				asm.JEq.Imm(asm.R9, 0, "stamp_sw"),
				asm.Mov.Imm(asm.R7, ClockDevice),
				asm.Ja.Label("stamp_have"),
			)
		}
		ktime := asm.FnKtimeGetNs.Call()
		if pc.Stamp == StampDevice {
			ktime = ktime.WithSymbol("stamp_sw")
		} else {
			ktime = sym(ktime)
		}
		insns = append(insns,
			ktime,
			asm.Mov.Reg(asm.R9, asm.R0),
			asm.Mov.Imm(asm.R7, ClockMonotonic),
		)
		if pc.StampInFrame {
			return append(insns, stampInFrame(pc)...)
		}
		insns = append(insns,
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
	deliver := xskMap(pc)
	if first {
		deliver = sym(deliver)
	} else {
		deliver = deliver.WithSymbol(labelDeliver)
	}
	return append(insns, redirect(deliver, actPass)...)
}

// xskMap loads the socket map's pointer into R1.
func xskMap(pc Program) asm.Instruction {
	ins := asm.LoadMapPtr(asm.R1, max(pc.XSKMapFD, 0))
	if pc.XSKMapFD <= 0 {
		ins = ins.WithReference(XSKMapName)
	}
	return ins
}

// redirect redirects the packet to the socket at its queue; the low bits
// of the flags (orElse) are the action when the queue has no socket.
func redirect(loadMap asm.Instruction, orElse int32) asm.Instructions {
	return asm.Instructions{
		loadMap,
		asm.Mov.Reg(asm.R2, QueueRegister),
		asm.Mov.Imm(asm.R3, orElse),
		asm.FnRedirectMap.Call(),
		asm.Return(),
	}
}

// stampInFrame is the end of the tail for Program.StampInFrame, from the
// stamp in R9 and its clock in R7: a packet whose queue has a socket grows
// RxMetadataLen bytes in front (bpf_xdp_adjust_head), which take the
// stamp and clock, and is redirected, aborted should the socket have gone
// since the look (the kernel must not get it with the stamp in front). A
// packet whose queue has no socket goes to the kernel as it came
// (XDP_PASS), and so does one whose headroom cannot grow (no driver gives
// less than XDP_PACKET_HEADROOM). Neither is redirected: a socket bound
// between the look and a redirect would take the packet unstamped and
// read its first bytes as the stamp, so the one redirect is the one
// after the stamp is written.
func stampInFrame(pc Program) asm.Instructions {
	insns := asm.Instructions{
		asm.StoreMem(asm.R10, stackTmp, QueueRegister, asm.Word).WithSymbol("stamp_have"),
		xskMap(pc),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, stackTmp),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "stamp_pass"),
		asm.LoadMem(asm.R1, asm.R10, stackCtx, asm.DWord),
		asm.Mov.Imm(asm.R2, -RxMetadataLen),
		asm.FnXdpAdjustHead.Call(),
		asm.JNE.Imm(asm.R0, 0, "stamp_pass"),
		asm.LoadMem(asm.R1, asm.R10, stackCtx, asm.DWord),
		asm.LoadMem(asm.R2, asm.R1, mdData, asm.Word),
		asm.LoadMem(asm.R3, asm.R1, mdDataEnd, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, RxMetadataLen),
		// Never true after a grow that succeeded; the verifier needs
		// the bound.
		asm.JGT.Reg(asm.R4, asm.R3, "stamp_abort"),
		asm.StoreMem(asm.R2, 0, asm.R9, asm.DWord),
		asm.StoreMem(asm.R2, 8, asm.R7, asm.DWord),
	}
	insns = append(insns, redirect(xskMap(pc), actAborted)...)
	return append(insns,
		asm.Mov.Imm(asm.R0, actAborted).WithSymbol("stamp_abort"),
		asm.Return(),
		asm.Mov.Imm(asm.R0, actPass).WithSymbol("stamp_pass"),
		asm.Return(),
	)
}

// storeImm64 is *(u64 *)(dst + off) = imm, sign-extended: the kernel's
// BPF_ST | BPF_DW, which asm.StoreImm does not emit.
func storeImm64(dst asm.Register, off int16, imm int32) asm.Instruction {
	return asm.Instruction{OpCode: asm.StoreImmOp(asm.DWord), Dst: dst, Offset: off, Constant: int64(imm)}
}

// Spec assembles the program into a ProgramSpec a caller can load, pin or
// hand to a loader of its own. A non-zero ifindex binds it to that device
// (BPF_F_XDP_DEV_BOUND_ONLY), which the metadata kfuncs need.
func (pc Program) Spec(ifindex int) (*ebpf.ProgramSpec, error) {
	insns, err := pc.Instructions()
	if err != nil {
		return nil, err
	}
	spec := &ebpf.ProgramSpec{
		Name:    programName,
		Type:    ebpf.XDP,
		License: programLicense,
		// The BTF of int xsk_filter(struct xdp_md *): what lets the
		// program take a slot of libxdp's dispatcher (freplace).
		Instructions: xdpbtf.Mark(insns, programName),
	}
	if pc.Frags {
		spec.Flags |= unix.BPF_F_XDP_HAS_FRAGS
	}
	if ifindex != 0 {
		spec.Flags |= unix.BPF_F_XDP_DEV_BOUND_ONLY
		spec.Ifindex = uint32(ifindex)
	}
	return spec, nil
}

// Load assembles and loads the program (bound to ifindex when it is not
// 0). A verifier rejection is returned as a wrapped *ebpf.VerifierError
// (print it with %+v for the listing; IsVerifierError tells it apart).
func (pc Program) Load(ifindex int) (*ebpf.Program, error) {
	spec, err := pc.Spec(ifindex)
	if err != nil {
		return nil, err
	}
	prog, err := ebpf.NewProgram(spec)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			if pc.Stamp != StampNone && !pc.StampInFrame && strings.Contains(err.Error(), "bpf_xdp_adjust_meta") {
				return nil, fmt.Errorf("the kernel's verifier refused the filter program: this kernel's XDP programs may not call bpf_xdp_adjust_meta, which a stamp in the metadata area needs (StampInFrame writes it into the frame instead): %w", err)
			}
			return nil, fmt.Errorf("the kernel's verifier refused the filter program: %w", err)
		}
		return nil, fmt.Errorf("load the filter program (needs CAP_BPF and CAP_NET_ADMIN, or root): %w", err)
	}
	return prog, nil
}
