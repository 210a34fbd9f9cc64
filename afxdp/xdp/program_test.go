package xdp

import (
	"errors"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/netns"
	"github.com/packetio/packetio/internal/testenv"
)

// userProgram loads what a user of WithProgram writes: an XDP program that
// redirects IPv4 UDP datagrams to port 9000 (no IP options) into its own
// XSKMAP by receive queue and passes everything else to the kernel.
func loadUserProgram(t *testing.T) (*ebpf.Program, *ebpf.Map) {
	t.Helper()
	testenv.NeedBPF(t)
	xsks, err := ebpf.NewMap(&ebpf.MapSpec{Name: "user_xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { xsks.Close() })
	insns := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), // data
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word), // data_end
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 38),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 12, asm.Half),
		asm.JNE.Imm(asm.R5, int32(filter.NetShort(filter.EtherTypeIPv4)), "pass"),
		asm.LoadMem(asm.R5, asm.R2, 14, asm.Byte),
		asm.JNE.Imm(asm.R5, 0x45, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 23, asm.Byte),
		asm.JNE.Imm(asm.R5, 17, "pass"),
		asm.LoadMem(asm.R5, asm.R2, 36, asm.Half),
		asm.JNE.Imm(asm.R5, int32(filter.NetShort(9000)), "pass"),
		asm.LoadMapPtr(asm.R1, xsks.FD()),
		asm.LoadMem(asm.R2, asm.R6, 16, asm.Word), // rx_queue_index
		asm.Mov.Imm(asm.R3, 2),                    // XDP_PASS where the queue has no socket
		asm.FnRedirectMap.Call(),
		asm.Return(),
		asm.Mov.Imm(asm.R0, 2).WithSymbol("pass"),
		asm.Return(),
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "user_steer", Type: ebpf.XDP, License: "MIT", Instructions: insns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prog.Close() })
	return prog, xsks
}

// TestUserProgramRefusals: what cannot work with the caller's program is
// refused before Open touches the kernel, naming the option.
func TestUserProgramRefusals(t *testing.T) {
	prog, xsks := loadUserProgram(t)
	other, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	coll := &ebpf.Collection{Programs: map[string]*ebpf.Program{"steer": prog}, Maps: map[string]*ebpf.Map{"xsks": xsks}}
	for _, tc := range []struct {
		name string
		opts []Option
		want string
	}{
		{"nil program", []Option{WithProgram(nil, xsks)}, "WithProgram: the program and the socket map must both be given"},
		{"nil map", []Option{WithProgram(prog, nil)}, "must both be given"},
		{"not an XSKMAP", []Option{WithProgram(prog, other)}, "the map is of type Array, not XSKMap"},
		{"with a filter", []Option{WithProgram(prog, xsks), WithUDPPorts(53)}, "your program is the steering"},
		{"with management kept", []Option{WithProgram(prog, xsks), WithKeepManagement()}, "your program is the steering"},
		{"with stamps", []Option{WithProgram(prog, xsks), WithRxTimestamps()}, "WithRxTimestamps: the arrival stamp is written by packetio's program"},
		{"collection lacks the program", []Option{WithCollection(coll, "nope", "xsks")}, `WithCollection("nope", "xsks"): the collection has no program "nope"`},
		{"collection lacks the map", []Option{WithCollection(coll, "steer", "nope")}, `the collection has no map "nope"`},
		{"nil collection", []Option{WithCollection(nil, "steer", "xsks")}, "the collection is nil"},
		{"bad frames still checked", []Option{WithProgram(prog, xsks), WithNumFrames(-1)}, "WithNumFrames(-1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tc.opts...)
			if !errors.Is(err, packetio.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want ErrInvalid saying %q", err, tc.want)
			}
		})
	}
	if err := Validate(WithCollection(coll, "steer", "xsks")); err != nil {
		t.Errorf("a complete collection: %v", err)
	}
}

// TestUserProgramSteers: the caller's program, attached by Open, sends its
// traffic to the fleet and the rest to the kernel's sockets; Close detaches
// it and leaves the program and its map usable.
func TestUserProgramSteers(t *testing.T) {
	prog, xsks := loadUserProgram(t)
	p := vethPair(t, netns.WithAddrs(splitA, splitB))
	f := openIn(t, p.B, WithProgram(prog, xsks), WithNeedWakeup())
	in, _ := f.Info()
	if in.Hook != HookUser || !strings.Contains(in.Program, `yours: "user_steer"`) || !strings.Contains(in.Program, "attached by packetio") {
		t.Errorf("Info: hook %v, program %q", in.Hook, in.Program)
	}
	if !strings.Contains(in.String(), "program yours") || in.Filter != "your program's" {
		t.Errorf("Info line %q does not say whose program steers", in)
	}
	pi, _ := prog.Info()
	id, _ := pi.ID()
	if got := xdpAttached(t, p.B); got != uint32(id) {
		t.Fatalf("program %d on the hook, want the caller's %d", got, id)
	}
	checkSplit(t, p, f)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if got := xdpAttached(t, p.B); got != 0 {
		t.Errorf("program %d still attached after Close; packetio attached it and should have taken it off", got)
	}
	if _, err := prog.Info(); err != nil {
		t.Errorf("the caller's program was closed: %v", err)
	}
	// The entry Close deleted is free again: a second fleet takes it.
	f2 := openIn(t, p.B, WithProgram(prog, xsks), WithNeedWakeup())
	checkSplit(t, p, f2)
}

// TestUserProgramAlreadyAttached: a program the caller attached is left on
// the hook, before and after.
func TestUserProgramAlreadyAttached(t *testing.T) {
	prog, xsks := loadUserProgram(t)
	p := vethPair(t, netns.WithAddrs(splitA, splitB))
	var lnk link.Link
	if err := p.B.Do(func() (err error) {
		lnk, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: p.B.Index, Flags: link.XDPGenericMode})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer lnk.Close()
	f := openIn(t, p.B, WithProgram(prog, xsks), WithNeedWakeup())
	if in, _ := f.Info(); !strings.Contains(in.Program, "attached by you") || in.Mode != "generic" {
		t.Errorf("Info: program %q, mode %q", in.Program, in.Mode)
	}
	checkSplit(t, p, f)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	pi, _ := prog.Info()
	id, _ := pi.ID()
	if got := xdpAttached(t, p.B); got != uint32(id) {
		t.Errorf("program %d on the hook after Close, want the caller's %d left in place", got, id)
	}
}

// TestUserMapEntryTaken: a queue whose entry another fleet holds is
// refused with ErrBusy, and the refused Open leaves the hook as it found
// it; once the holder closes, the entry is free.
func TestUserMapEntryTaken(t *testing.T) {
	prog, xsks := loadUserProgram(t)
	p1 := vethPair(t)
	p2 := vethPair(t)
	f1 := openIn(t, p1.B, WithProgram(prog, xsks))
	_, err := openErr(t, p2.B, WithProgram(prog, xsks))
	if !errors.Is(err, packetio.ErrBusy) || !strings.Contains(err.Error(), "queue 0 of the socket map already holds a socket") {
		t.Fatalf("second fleet on the same map: %v, want ErrBusy naming queue 0", err)
	}
	if got := xdpAttached(t, p2.B); got != 0 {
		t.Errorf("the refused Open left program %d on %s", got, p2.B.Link)
	}
	if err := f1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := openErr(t, p2.B, WithProgram(prog, xsks)); err != nil {
		t.Errorf("after the first fleet closed: %v", err)
	}
}
