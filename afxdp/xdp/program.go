package xdp

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
)

// Hook says whose XDP program steers frames into a fleet's sockets.
type Hook uint8

const (
	// HookOwn is packetio's own program, compiled from the filter and
	// attached alone through a BPF link: the default.
	HookOwn Hook = iota
	// HookUser is the caller's program (WithProgram): packetio only binds
	// the sockets and registers them in the caller's socket map.
	HookUser
	// HookShared is packetio's program in one slot of libxdp's
	// multi-program dispatcher, beside other programs (WithSharedHook, or
	// a dispatcher already on the interface).
	HookShared
)

// String is "packetio", "user" or "shared".
func (h Hook) String() string {
	switch h {
	case HookOwn:
		return "packetio"
	case HookUser:
		return "user"
	case HookShared:
		return "shared"
	}
	return fmt.Sprintf("hook(%d)", h)
}

// WithProgram makes prog, the caller's XDP program, the one that steers
// frames, and xsks, an XSKMAP it redirects into by receive queue
// (bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS) or its like),
// the map the sockets are registered in. Open attaches prog through a BPF
// link (detached again on Close), or leaves it as it is when it is
// already the interface's program; it inserts one entry per bound queue,
// refusing a queue whose entry is taken (packetio.ErrBusy), and Close
// deletes exactly those entries. prog and xsks stay the caller's: Close
// never closes them.
//
// The program is the steering: WithFilter, WithUDPPorts, WithExcept,
// WithKeepManagement, WithRxTimestamps (the stamp is written by packetio's
// program) and WithSharedHook are refused with packetio.ErrInvalid. Info
// says Hook HookUser and names the program.
func WithProgram(prog *ebpf.Program, xsks *ebpf.Map) Option {
	return func(c *config) { c.userProg, c.userMap, c.userOpt = prog, xsks, "WithProgram" }
}

// WithSharedHook attaches packetio's program through libxdp's
// multi-program dispatcher (the protocol of xdp-tools' libxdp, dispatcher
// version 2) at run priority priority (lower runs first; 0 is
// DefaultPriority, libxdp's default), so other programs can share the interface: xdp-loader, xdp-filter
// or any libxdp user can add theirs before or after, and Close removes
// exactly packetio's. Frames packetio's filter does not take go on to the
// next program (its chain-call action is XDP_PASS). Without this option a
// dispatcher already on the interface is joined at DefaultPriority; with
// it, an empty hook gets a new dispatcher. Its state lives in bpffs
// ($LIBXDP_BPFFS, else /sys/fs/bpf, which must be a mounted bpffs), as
// libxdp keeps it. Info says Hook HookShared and names the dispatcher.
// A negative priority is refused with packetio.ErrInvalid.
func WithSharedHook(priority int) Option {
	return func(c *config) { c.sharedHook, c.priority = true, priority }
}

// DefaultPriority is the run priority packetio's program takes in a
// libxdp dispatcher without WithSharedHook: libxdp's own default.
const DefaultPriority = 50

// WithCollection is WithProgram with the program and the socket map taken
// from coll by name; a name coll lacks is refused with packetio.ErrInvalid.
func WithCollection(coll *ebpf.Collection, program, xskMap string) Option {
	return func(c *config) {
		c.userOpt = fmt.Sprintf("WithCollection(%q, %q)", program, xskMap)
		c.userProg, c.userMap, c.userMissing = nil, nil, ""
		switch {
		case coll == nil:
			c.userMissing = "the collection is nil"
		case coll.Programs[program] == nil:
			c.userMissing = fmt.Sprintf("the collection has no program %q", program)
		case coll.Maps[xskMap] == nil:
			c.userMissing = fmt.Sprintf("the collection has no map %q", xskMap)
		default:
			c.userProg, c.userMap = coll.Programs[program], coll.Maps[xskMap]
		}
	}
}

// checkUserProgram refuses what cannot work with the caller's program,
// without I/O: a missing program or map, one of the wrong type, and the
// options that would need packetio's program.
func (c *config) checkUserProgram() error {
	if c.userOpt == "" {
		return nil
	}
	switch {
	case c.userMissing != "":
		return invalid("%s: %s", c.userOpt, c.userMissing)
	case c.userProg == nil || c.userMap == nil:
		return invalid("%s: the program and the socket map must both be given", c.userOpt)
	case c.userProg.Type() != ebpf.XDP:
		return invalid("%s: the program is of type %v, not XDP", c.userOpt, c.userProg.Type())
	case c.userMap.Type() != ebpf.XSKMap:
		return invalid("%s: the map is of type %v, not XSKMap", c.userOpt, c.userMap.Type())
	case len(c.matches) > 0 || len(c.except) > 0 || c.keepMgmt:
		return invalid("%s with WithFilter, WithUDPPorts, WithExcept or WithKeepManagement: your program is the steering, packetio compiles none", c.userOpt)
	case c.stamps:
		return invalid("%s with WithRxTimestamps: the arrival stamp is written by packetio's program, which does not run", c.userOpt)
	case c.sharedHook:
		return invalid("%s with WithSharedHook: a program joins libxdp's dispatcher as an extension loaded for its slot; load yours with libxdp, or let packetio's program share the hook", c.userOpt)
	}
	return nil
}

// userProgram is the caller's program as Open found it.
type userProgram struct {
	id       ebpf.ProgramID
	name     string
	attached uint32 // the XDP_FLAGS_*_MODE it runs in when the caller attached it, else 0
}

// describe names the program for Info.
func (u *userProgram) describe() string {
	by := "attached by packetio (detached on Close)"
	if u.attached != 0 {
		by = "attached by you (left attached on Close)"
	}
	return fmt.Sprintf("yours: %q (id %d), %s", u.name, u.id, by)
}

// inspectUser reads the caller's program's id and name, and checks that
// its socket map has a key for every queue.
func (f *Fleet) inspectUser(c *config, nq int) error {
	pi, err := c.userProg.Info()
	if err != nil {
		return fmt.Errorf("%s: read the program's id: %w", c.userOpt, err)
	}
	id, _ := pi.ID()
	if n := c.userMap.MaxEntries(); int(n) < nq {
		return invalid("%s: the socket map has %d entries, fewer than the %d queues to bind (narrow them with WithQueues)", c.userOpt, n, nq)
	}
	f.user = &userProgram{id: id, name: pi.Name}
	return nil
}

// attachUser puts the caller's program on the hook in grp's mode, unless
// the caller already attached it (then only the mode it runs in is
// tried).
func (f *Fleet) attachUser(c *config, grp bindGroup) (bool, string) {
	f.prog, f.xsks, f.borrowed = c.userProg, c.userMap, true
	if f.user.attached != 0 {
		if grp.native != (f.user.attached == unix.XDP_FLAGS_DRV_MODE) {
			return false, "your program runs in the other mode"
		}
		return true, ""
	}
	lnk, err := link.AttachXDP(link.XDPOptions{Program: c.userProg, Interface: f.ifindex, Flags: grp.xdpFlags})
	if err != nil {
		return false, fmt.Sprintf("attach refused (%v)", err)
	}
	f.lnk = lnk
	return true, ""
}

// register puts socket fd in the socket map at queue q, refusing a queue
// whose entry another socket holds (only possible in the caller's map).
func (f *Fleet) register(q int, fd int) error {
	err := f.xsks.Update(uint32(q), uint32(fd), ebpf.UpdateNoExist)
	if errors.Is(err, ebpf.ErrKeyExist) {
		return fmt.Errorf("%w: queue %d of the socket map already holds a socket (another process's, or another fleet's)", packetio.ErrBusy, q)
	}
	if err != nil {
		return fmt.Errorf("register queue %d in the socket map: %w", q, err)
	}
	f.registered = append(f.registered, q)
	return nil
}

// describeProgram says whose program steers, for Info.
func (f *Fleet) describeProgram() (Hook, string) {
	if f.user != nil {
		return HookUser, f.user.describe()
	}
	id := ebpf.ProgramID(0)
	if f.prog != nil {
		if pi, err := f.prog.Info(); err == nil {
			id, _ = pi.ID()
		}
	}
	if f.share != nil {
		return HookShared, f.share.describe(f.ifindex, id)
	}
	return HookOwn, fmt.Sprintf("packetio's %q (id %d), through a BPF link", programName, id)
}
