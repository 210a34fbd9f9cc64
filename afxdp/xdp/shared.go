package xdp

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp/xdp/internal/hook"
	"github.com/packetio/packetio/afxdp/xdp/internal/libxdp"
	"github.com/packetio/packetio/filter"
)

// sharedHook is packetio's place in libxdp's dispatcher on the interface.
type sharedHook struct {
	door     *hook.Door // route sockets of Open's namespace, for Close
	priority int
	found    uint32 // hook.Attached* of a dispatcher Open found, 0 for none
	member   *libxdp.Member
}

// planShare sets the fleet to go through libxdp's dispatcher: found is how
// a dispatcher already on the hook is attached (0 when the hook is empty
// and WithSharedHook asked for one).
func (f *Fleet) planShare(c *config, found uint32) error {
	door, err := hook.OpenDoor()
	if err != nil {
		return err
	}
	prio := c.priority
	if !c.sharedHook || prio == 0 {
		prio = DefaultPriority
	}
	f.share = &sharedHook{door: door, priority: prio, found: found}
	if found != 0 && !c.sharedHook {
		f.info.Decisions = append(f.info.Decisions, fmt.Sprintf("joined the libxdp dispatcher already on the interface at priority %d", prio))
	}
	return nil
}

// attachShared adds packetio's program, built for grp's mode, to the
// dispatcher (creating one on an empty hook). A dispatcher it cannot join
// is an error no other mode fixes.
func (f *Fleet) attachShared(grp bindGroup, pc filter.Program, nq int) (bool, string, error) {
	sh := f.share
	if sh.found != 0 && grp.native != (sh.found == hook.AttachedDriver) {
		return false, "the dispatcher runs in " + hook.ModeName(sh.found) + " mode", nil
	}
	xsks, err := f.newSocketMap(nq)
	if err != nil {
		return false, "", err
	}
	// A dispatcher slot is no device-bound program: the stamp comes from
	// bpf_ktime_get_ns and VLAN matches read the tag in the frame.
	pc.XSKMapFD, pc.VLANKfunc = xsks.FD(), false
	pc.Stamp = min(pc.Stamp, filter.StampMonotonic)
	spec, err := pc.Spec(0)
	if err != nil {
		xsks.Close()
		return false, "", err
	}
	mode := unix.XDP_FLAGS_SKB_MODE
	if grp.native {
		mode = unix.XDP_FLAGS_DRV_MODE
	}
	m, err := libxdp.Add(sh.door, f.ifindex, libxdp.Component{Spec: spec, Priority: sh.priority, Frags: pc.Frags}, libxdp.Options{Mode: mode})
	if err != nil {
		xsks.Close()
		switch {
		case errors.Is(err, libxdp.ErrNotShared), errors.Is(err, libxdp.ErrFull):
			return false, "", fmt.Errorf("%w: %w", packetio.ErrBusy, err)
		case errors.Is(err, libxdp.ErrNoBPFFS):
			return false, "", fmt.Errorf("%w: %w (libxdp keeps a shared hook's state in bpffs: mount one with `mount -t bpf bpf /sys/fs/bpf`, or name one in LIBXDP_BPFFS)", ErrUnsupported, err)
		case errors.Is(err, libxdp.ErrNoFreplace):
			return false, "", fmt.Errorf("%w: %w", ErrUnsupported, err)
		}
		return false, fmt.Sprintf("joining the dispatcher refused (%v)", err), nil
	}
	sh.member = m
	f.prog, f.xsks, f.progCfg = m.Program(), xsks, pc
	return true, "", nil
}

// newSocketMap creates the fleet's own XSKMAP, with a key for every queue
// of the interface.
func (f *Fleet) newSocketMap(nq int) (*ebpf.Map, error) {
	xsks, err := ebpf.NewMap(&ebpf.MapSpec{Name: filter.XSKMapName, Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: uint32(max(f.info.QueuesTotal, nq))})
	if err != nil {
		return nil, fmt.Errorf("create the socket map: %w", err)
	}
	return xsks, nil
}

// leave takes packetio's program out of the dispatcher (libxdp removes the
// dispatcher with its last program); the program goes with it.
func (sh *sharedHook) leave() error {
	if sh.member == nil {
		return nil
	}
	err := sh.member.Remove()
	sh.member = nil
	if err != nil {
		return fmt.Errorf("leave the libxdp dispatcher: %w", err)
	}
	return nil
}

// describe names packetio's slot and its neighbours for Info.
func (sh *sharedHook) describe(ifindex int, id ebpf.ProgramID) string {
	st, err := libxdp.Read(sh.door, ifindex, "")
	if err != nil {
		return fmt.Sprintf("packetio's %q (id %d) in a libxdp dispatcher at priority %d (%v)", programName, id, sh.priority, err)
	}
	var others []string
	pos := 0
	for i, e := range st.Entries {
		if e.ID == id {
			pos = i + 1
			continue
		}
		others = append(others, fmt.Sprintf("%q (id %d, priority %d)", e.Name, e.ID, e.Priority))
	}
	s := fmt.Sprintf("packetio's %q (id %d) in libxdp dispatcher %d (version %d, %s), priority %d, runs %d of %d",
		programName, id, st.DispatcherID, st.Version, hook.ModeName(st.Mode), sh.priority, pos, len(st.Entries))
	if len(others) > 0 {
		s += "; beside " + strings.Join(others, ", ")
	}
	return s
}

// ProbeSharedHook says whether this kernel can put packetio's program in
// libxdp's dispatcher (WithSharedHook): nil where it takes freplace
// programs, which every dispatcher slot is, and an error matching
// packetio.ErrUnsupported saying why where it does not (some kernels, and
// some virtual machines' kernels, forbid BPF trampolines outright). It
// loads two one-instruction programs and closes them; nothing on the host
// changes.
func ProbeSharedHook() error {
	if err := libxdp.Probe(); err != nil {
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	return nil
}
