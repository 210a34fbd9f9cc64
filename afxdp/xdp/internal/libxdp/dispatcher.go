package libxdp

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/internal/xdpbtf"
)

const (
	// dispatcherName is the program and main-function name libxdp looks
	// for.
	dispatcherName = "xdp_dispatcher"
	// configMapName names the config map (and the symbol the program's
	// load of its value refers to).
	configMapName = "xdp_disp_conf"
	outLabel      = "xdp_dispatcher_out"
)

// slotName is the stub function of slot i.
func slotName(i int) string { return "prog" + strconv.Itoa(i) }

// attachTarget is the function of a dispatcher with n components that the
// component in slot i replaces: the main function itself when it is alone
// (what libxdp does), else the slot's stub.
func attachTarget(i, n int) string {
	if n == 1 {
		return dispatcherName
	}
	return slotName(i)
}

// dispatcherInsns is the dispatcher program: the main function, then the
// ten stubs, each a global function int progN(struct xdp_md *ctx) with
// its BTF. The config map is referenced by symbol (configMapName).
//
//	for i in 0..9:
//		if conf.num_progs_enabled < i+1: return XDP_PASS
//		ret = prog_i(ctx)
//		if !((1 << ret) & conf.chain_call_actions[i]): return ret
//	return XDP_PASS
func dispatcherInsns() asm.Instructions {
	main := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1), // ctx, kept across the calls
		asm.LoadMapValue(asm.R8, 0, 0).WithReference(configMapName),
		asm.LoadMem(asm.R7, asm.R8, 2, asm.Byte), // num_progs_enabled
	}
	for i := range MaxComponents {
		main = append(main,
			asm.Mov.Imm(asm.R0, xdpPass),
			asm.JLT.Imm(asm.R7, int32(i+1), outLabel),
			asm.Mov.Reg(asm.R1, asm.R6),
			asm.Call.Label(slotName(i)),
			asm.LoadMem(asm.R1, asm.R8, int16(4+4*i), asm.Word), // chain_call_actions[i]
			asm.Mov.Reg32(asm.R2, asm.R0),
			asm.RSh.Reg(asm.R1, asm.R2),
			asm.And.Imm(asm.R1, 1),
			asm.JEq.Imm(asm.R1, 0, outLabel),
		)
	}
	main = append(main, asm.Mov.Imm(asm.R0, xdpPass), asm.Return().WithSymbol(outLabel))
	insns := xdpbtf.Mark(main, dispatcherName)
	for i := range MaxComponents {
		insns = append(insns, xdpbtf.Mark(asm.Instructions{
			asm.Mov.Imm(asm.R0, dispatcherRetval),
			asm.Return(),
		}, slotName(i))...)
	}
	return insns
}

// loadDispatcher creates the frozen config map for c and loads a
// dispatcher reading it (with BPF_F_XDP_HAS_FRAGS when c.Frags). The
// program holds the only reference to the map.
func loadDispatcher(c *config) (*ebpf.Program, error) {
	return loadDispatcherValue(c.marshal(), c.Frags)
}

// loadDispatcherValue is loadDispatcher for a config map value given as
// bytes (tests make dispatchers of other versions with it).
func loadDispatcherValue(value []byte, frags bool) (*ebpf.Program, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{
		Name:       configMapName,
		Type:       ebpf.Array,
		KeySize:    4,
		ValueSize:  uint32(len(value)),
		MaxEntries: 1,
		Flags:      unix.BPF_F_RDONLY_PROG,
		Contents:   []ebpf.MapKV{{Key: uint32(0), Value: value}},
	})
	if err != nil {
		return nil, fmt.Errorf("create the dispatcher's config map: %w", err)
	}
	defer m.Close()
	// Frozen, the verifier reads the config as constants and drops the
	// slots it does not enable.
	if err := m.Freeze(); err != nil {
		return nil, fmt.Errorf("freeze the dispatcher's config map: %w", err)
	}
	insns := dispatcherInsns()
	if err := insns.AssociateMap(configMapName, m); err != nil {
		return nil, fmt.Errorf("dispatcher config map: %w", err)
	}
	spec := &ebpf.ProgramSpec{Name: dispatcherName, Type: ebpf.XDP, License: "GPL", Instructions: insns}
	if frags {
		spec.Flags = unix.BPF_F_XDP_HAS_FRAGS
	}
	p, err := ebpf.NewProgram(spec)
	if err != nil {
		return nil, fmt.Errorf("load the dispatcher: %w", err)
	}
	return p, nil
}

// inspection is what a look at a program on the hook found.
type inspection struct {
	ok      bool   // a libxdp dispatcher, of any version
	why     string // why not, when !ok
	version int
	value   []byte // the config map's value
}

// inspect tells whether p is a libxdp dispatcher the way libxdp 1.3.1's
// check_dispatcher_version does: named xdp_dispatcher, exactly one map,
// that map an array-like one with 4-byte keys, values of at least 2 bytes,
// one entry and BPF_F_RDONLY_PROG; the version is the value's second byte
// when its first is the magic 236, else the dispatcher_version recorded in
// the program's BTF (datasec xdp_metadata), as version 1 dispatchers have
// it. An error is a failed look, not a negative answer.
func inspect(p *ebpf.Program) (inspection, error) {
	info, err := p.Info()
	if err != nil {
		return inspection{}, fmt.Errorf("program info: %w", err)
	}
	if info.Name != dispatcherName {
		return inspection{why: "its name is not " + dispatcherName}, nil
	}
	if info.Type != ebpf.XDP {
		return inspection{why: "it is a " + info.Type.String() + " program"}, nil
	}
	if _, hasBTF := info.BTFID(); !hasBTF {
		return inspection{why: "it has no BTF"}, nil
	}
	ids, _ := info.MapIDs()
	if len(ids) != 1 {
		return inspection{why: fmt.Sprintf("it uses %d maps, a dispatcher exactly one", len(ids))}, nil
	}
	m, err := ebpf.NewMapFromID(ids[0])
	if err != nil {
		return inspection{}, fmt.Errorf("open its map %d: %w", ids[0], err)
	}
	defer m.Close()
	mi, err := m.Info()
	if err != nil {
		return inspection{}, fmt.Errorf("map %d info: %w", ids[0], err)
	}
	if mi.KeySize != 4 || mi.ValueSize < 2 || mi.MaxEntries != 1 || mi.Flags&unix.BPF_F_RDONLY_PROG == 0 {
		return inspection{why: fmt.Sprintf("its map %d (key %d, value %d bytes, %d entries, flags %#x) is no dispatcher config",
			ids[0], mi.KeySize, mi.ValueSize, mi.MaxEntries, mi.Flags)}, nil
	}
	v, err := m.LookupBytes(uint32(0))
	if err != nil || v == nil {
		return inspection{}, fmt.Errorf("read its config map %d: %v", ids[0], errOr(err, "no entry 0"))
	}
	ver, err := valueVersion(v)
	if errors.Is(err, errNoMagic) {
		var found bool
		ver, found = btfVersion(p)
		if !found {
			return inspection{why: "its config has no magic and its BTF no dispatcher_version"}, nil
		}
	} else if err != nil {
		return inspection{why: err.Error()}, nil
	}
	return inspection{ok: true, version: ver, value: v}, nil
}

func errOr(err error, s string) error {
	if err != nil {
		return err
	}
	return errors.New(s)
}

// btfVersion reads dispatcher_version from the xdp_metadata datasec of
// p's BTF: a variable of type pointer to an array whose length is the
// version (libbpf's __uint encoding).
func btfVersion(p *ebpf.Program) (int, bool) {
	h, err := p.Handle()
	if err != nil {
		return 0, false
	}
	defer h.Close()
	spec, err := h.Spec(nil)
	if err != nil {
		return 0, false
	}
	var ds *btf.Datasec
	if err := spec.TypeByName("xdp_metadata", &ds); err != nil {
		return 0, false
	}
	for _, vs := range ds.Vars {
		v, ok := vs.Type.(*btf.Var)
		if !ok || v.Name != "dispatcher_version" {
			continue
		}
		ptr, ok := btf.UnderlyingType(v.Type).(*btf.Pointer)
		if !ok {
			return 0, false
		}
		arr, ok := btf.UnderlyingType(ptr.Target).(*btf.Array)
		if !ok {
			return 0, false
		}
		return int(arr.Nelems), true
	}
	return 0, false
}

// IsDispatcher tells whether p is a libxdp dispatcher (by libxdp 1.3.1's
// rules, see the package doc) and which version. An error means p could
// not be examined.
func IsDispatcher(p *ebpf.Program) (version int, ok bool, err error) {
	in, err := inspect(p)
	if err != nil {
		return 0, false, err
	}
	return in.version, in.ok, nil
}
