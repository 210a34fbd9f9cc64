package xdp

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/afxdp/xdp/internal/hook"
	"github.com/packetio/packetio/afxdp/xdp/internal/libxdp"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/callgate"
	"github.com/packetio/packetio/internal/host"
)

// Fleet is one XDP program attached to an interface and one socket per
// bound receive queue, registered in the program's socket map: the whole of
// what it takes to receive from (and transmit on) every queue of a NIC.
type Fleet struct {
	ifname  string
	ifindex int
	prog    *ebpf.Program
	xsks    *ebpf.Map
	lnk     link.Link
	sockets []*Socket
	umem    *umem // the shared region, with WithSharedMemory
	extra   uint64
	info    Info
	progCfg filter.Program // what the attached program was built from
	feat    devFeatures
	tuning  hostTuning
	pins    threadPins      // the worker threads its sockets pinned
	foreign *foreignProgram // replaced under WithReplaceProgram, put back on Close
	user    *userProgram    // the caller's program (WithProgram)
	share   *sharedHook     // packetio's slot in libxdp's dispatcher
	// borrowed is true when prog and xsks are the caller's: Close
	// neither closes them nor touches other entries of the map.
	borrowed   bool
	registered []int // the socket map keys this fleet inserted

	closeMu sync.Mutex
	closed  bool
}

// bindGroup is one way of attaching the program, with the bind flags to
// try under it, best first.
type bindGroup struct {
	name      string
	xdpFlags  link.XDPAttachFlags
	bindFlags []uint16
	native    bool
}

func modeGroups(m Mode, zcPossible bool) []bindGroup {
	native := bindGroup{name: "native", xdpFlags: link.XDPDriverMode, bindFlags: []uint16{unix.XDP_ZEROCOPY, unix.XDP_COPY}, native: true}
	if !zcPossible {
		native.bindFlags = []uint16{unix.XDP_COPY}
	}
	generic := bindGroup{name: "generic", xdpFlags: link.XDPGenericMode, bindFlags: []uint16{unix.XDP_COPY}}
	switch m {
	case ModeZeroCopy:
		return []bindGroup{{name: "native", xdpFlags: link.XDPDriverMode, bindFlags: []uint16{unix.XDP_ZEROCOPY}, native: true}}
	case ModeNative:
		return []bindGroup{native}
	case ModeGeneric:
		return []bindGroup{generic}
	}
	return []bindGroup{native, generic}
}

// Open attaches the filter program to the interface named ifname (in the
// network namespace of the calling thread), opens one socket per receive
// queue (all of them unless WithQueues narrows it), and registers each in
// the program's socket map. It requires a filter: see WithFilter.
//
// The mode is chosen as the driver allows: native zero-copy, then native
// copy, then generic, unless an option forces one; Info says what was
// granted, read back from the kernel. The program is attached through a BPF
// link, which the kernel removes if the process dies. Every step is undone
// if a later one fails.
//
// Open never detaches a program packetio did not attach: another program on
// the interface is refused with packetio.ErrBusy naming its id and name,
// unless it was attached the legacy (netlink) way and WithReplaceProgram
// says to replace it (Close puts it back). A program held by a BPF link is
// never touched. The one program removed without asking is a provable
// leftover of packetio's own: named as filter.Program names its programs
// ("xsk_filter"), redirecting into an XSKMap named "xsks", and attached the
// legacy way, which packetio never does (an older version, or a process
// that died mid-attach, left it); Info().Decisions says so.
//
// Options are checked first, without I/O (see Validate): a value out of
// range is packetio.ErrInvalid naming the option and the value. A name no
// interface can have is ErrInvalid, a missing interface ErrNoDevice, an
// interface that is down ErrUnsupported.
func Open(ifname string, opts ...Option) (*Fleet, error) {
	if err := CheckInterfaceName(ifname); err != nil {
		// The message quotes the name; a NUL or a newline has no place
		// in the error's text.
		return nil, packetio.NewOpError("open", "afxdp", "", packetio.NoQueue, err)
	}
	c := newConfig(opts)
	f, err := open(ifname, c)
	if err != nil {
		return nil, packetio.NewOpError("open", "afxdp", ifname, packetio.NoQueue, err)
	}
	return f, nil
}

func open(ifname string, c *config) (f *Fleet, err error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	lk, err := netlink.LinkByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("%w: no interface %q in this network namespace: %w", packetio.ErrNoDevice, ifname, err)
	}
	attrs := lk.Attrs()
	if attrs.Flags&net.FlagUp == 0 {
		return nil, fmt.Errorf("%w: interface is down (bring it up with `ip link set %s up`); an AF_XDP socket on it would never send or receive", packetio.ErrUnsupported, ifname)
	}
	f = &Fleet{ifname: ifname, ifindex: attrs.Index}
	f.info = Info{Interface: ifname, Ifindex: attrs.Index, Driver: host.Driver(ifname)}
	fl := f // the named result is nil by the time a failure's cleanup runs
	defer func() {
		if err != nil {
			fl.teardown()
		}
	}()

	switch {
	case c.colours && c.mode != ModeGeneric && f.info.Driver == "ena":
		f.info.Decisions = append(f.info.Decisions, "WithCacheColours gives the kernel 2048-byte buffers, and ena's zero-copy needs page-sized ones: expect copy mode")
	case !c.frameSizeSet && c.mode != ModeGeneric && f.info.Driver == "ena":
		// ENA's zero-copy needs page-sized chunks; with 2048 it binds in
		// copy mode without a word.
		c.frameSize = 4096
		f.info.Decisions = append(f.info.Decisions, "frame size 4096 (ena zero-copy needs page-sized frames)")
	}
	g, err := c.geometry()
	if err != nil {
		return nil, err
	}
	if err := c.chooseNode(ifname, attrs.Index); err != nil {
		return nil, err
	}
	f.info.NUMABound, f.info.NUMANode = c.bindNode > 0, max(c.umemNode(), 0)
	ch, err := host.ReadChannels(ifname)
	total := ch.RxQueues()
	if err != nil || total <= 0 {
		total = max(attrs.NumRxQueues, 1)
	}
	nq := total
	if c.queues > 0 {
		if c.queues > total {
			return nil, fmt.Errorf("%w: WithQueues(%d), but %s has %d receive queues", packetio.ErrInvalid, c.queues, ifname, total)
		}
		nq = c.queues
	}
	if nq > MaxQueues {
		nq = MaxQueues
		f.info.Decisions = append(f.info.Decisions, fmt.Sprintf("%d of the %d receive queues bound (MaxQueues); traffic on the others goes to the kernel", MaxQueues, total))
	}
	f.info.Queues, f.info.QueuesTotal = nq, total
	f.info.FrameSize, f.info.NumFrames, f.info.TxFrames = g.frameSize, g.numFrames, g.txFrames
	if err := rlimit.RemoveMemlock(); err != nil {
		f.info.Decisions = append(f.info.Decisions, "RLIMIT_MEMLOCK left as it is: "+err.Error())
	}

	if c.userOpt != "" {
		if err := f.inspectUser(c, nq); err != nil {
			return nil, err
		}
	}
	except := c.except
	mgmt := ""
	if c.keepMgmt {
		local, err := localPrefixes(f.ifindex)
		if err != nil {
			return nil, fmt.Errorf("%w: WithKeepManagement: %w", ErrUnsupported, err)
		}
		except = append(filter.ManagementRules(c.mgmtPorts, local), except...)
		mgmt = filter.ManagementDesc(c.mgmtPorts, local)
	}
	f.info.Filter = filter.Describe(c.matches, c.except, mgmt)
	if f.user != nil {
		f.info.Filter = "your program's"
	}

	feat := queryFeatures(f.ifindex)
	f.feat = feat
	f.info.Features = feat.String()
	kf, kfErr := filter.LookupKfuncs()

	if err := f.clearXDP(c); err != nil {
		return nil, err
	}
	if err := f.tuneBeforeAttach(c, nq); err != nil {
		return nil, err
	}
	var tried []string
	for _, grp := range modeGroups(c.mode, feat.zeroCopyPossible()) {
		pc := filter.Program{Matches: c.matches, Except: except, Frags: c.multiBuf, Verdict: filter.VerdictRedirect, Kfuncs: kf}
		if c.stamps {
			// In the frame rather than the metadata area: every
			// driver and kernel takes it, and no slot needs
			// clearing in each frame Fill posts (afxdp README,
			// "Arrival stamps").
			pc.Stamp, pc.StampInFrame = filter.StampMonotonic, true
		}
		devBound := grp.native && kfErr == nil
		// veth's timestamp kfunc hands back the skb's hardware stamp,
		// which no veth has: asking costs a call per packet for a zero.
		if devBound && c.stamps && feat.rxTimestamp() && kf.Timestamp != 0 && f.info.Driver != "veth" {
			pc.Stamp = filter.StampDevice
		}
		if devBound && filter.NeedsVLAN(c.matches, except) && feat.rxVLANTag() && kf.VLANTag != 0 {
			pc.VLANKfunc = true
		}
		if pc.Stamp != filter.StampDevice && !pc.VLANKfunc {
			devBound = false
		}
		ok, reason, err := f.tryGroup(c, g, grp, pc, devBound, nq)
		if err != nil {
			return nil, err
		}
		if ok {
			f.info.Tried = tried
			f.fillInfo(c, f.progCfg, grp)
			if err := f.tune(c, grp); err != nil {
				return nil, err
			}
			if c.onOpened != nil {
				if err := c.onOpened(f); err != nil {
					return nil, err
				}
			}
			return f, nil
		}
		tried = append(tried, grp.name+": "+reason)
	}
	return nil, fmt.Errorf("%w: could not open %d queues: %s", ErrUnsupported, nq, strings.Join(tried, "; "))
}

// tryGroup attaches a program in one mode and binds the sockets with each
// of the group's flags in turn. It returns false with the reason when the
// driver refuses the mode, and an error only for what no other mode can
// fix.
func (f *Fleet) tryGroup(c *config, g socketGeometry, grp bindGroup, pc filter.Program, devBound bool, nq int) (bool, string, error) {
	if f.user != nil {
		if ok, reason := f.attachUser(c, grp); !ok {
			return false, reason, nil
		}
	} else if f.share != nil {
		if ok, reason, err := f.attachShared(grp, pc, nq); !ok || err != nil {
			return ok, reason, err
		}
	} else if ok, reason, err := f.attachOwn(grp, pc, devBound, nq); !ok || err != nil {
		return ok, reason, err
	}
	var reasons []string
	for _, bf := range grp.bindFlags {
		flags := bf
		if c.needWakeup {
			flags |= unix.XDP_USE_NEED_WAKEUP
		}
		if c.multiBuf {
			flags |= unix.XDP_USE_SG
		}
		err := f.openSockets(c, g, flags, nq)
		if err != nil && c.sharePref && c.shared && nq > 1 {
			// The kernel refused to share: one UMEM per socket.
			shared := *c
			shared.shared = false
			if err2 := f.openSockets(&shared, g, flags, nq); err2 == nil {
				f.info.Decisions = append(f.info.Decisions, "one UMEM per socket: the kernel refused to share one ("+err.Error()+")")
				err = nil
			}
		}
		if err == nil {
			return true, "", nil
		}
		if errors.Is(err, packetio.ErrBusy) {
			f.detach()
			return false, "", err // no other mode frees a taken map entry
		}
		reasons = append(reasons, fmt.Sprintf("bind %s: %v", bindName(bf), err))
	}
	f.detach()
	return false, strings.Join(reasons, ", "), nil
}

// attachOwn loads packetio's program and its socket map and attaches the
// program in grp's mode through a BPF link.
func (f *Fleet) attachOwn(grp bindGroup, pc filter.Program, devBound bool, nq int) (bool, string, error) {
	xsks, err := f.newSocketMap(nq)
	if err != nil {
		return false, "", err
	}
	pc.XSKMapFD = xsks.FD()
	if err := filter.Validate(pc.Matches, pc.Except); err != nil {
		xsks.Close()
		return false, "", err
	}
	ifindex := 0
	if devBound {
		ifindex = f.ifindex
	}
	prog, err := pc.Load(ifindex)
	if err != nil && devBound {
		// The kernel or driver refused the metadata kfuncs: go on
		// without them, and say so.
		f.info.Decisions = append(f.info.Decisions, "metadata kfuncs refused ("+err.Error()+"); program not device-bound")
		pc.Stamp, pc.VLANKfunc = min(pc.Stamp, filter.StampMonotonic), false
		prog, err = pc.Load(0)
	}
	if err != nil {
		xsks.Close()
		return false, "", err
	}
	lnk, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: f.ifindex, Flags: grp.xdpFlags})
	if err != nil {
		prog.Close()
		xsks.Close()
		return false, fmt.Sprintf("attach refused (%v)", err), nil
	}
	f.prog, f.xsks, f.lnk = prog, xsks, lnk
	f.progCfg = pc
	return true, "", nil
}

// openSockets opens and registers a socket per queue, sharing one UMEM
// when asked; on failure none is left open.
func (f *Fleet) openSockets(c *config, g socketGeometry, flags uint16, nq int) (err error) {
	defer func() {
		if err != nil {
			_ = f.closeSockets()
		}
	}()
	var u *umem
	if c.shared {
		extra := (c.extra + g.frameSize - 1) &^ (g.frameSize - 1)
		if u, err = newUMEM(nq*g.numFrames*g.frameSize+extra, g.frameSize, c.hugePages, c.umemNode()); err != nil {
			return err
		}
		f.umem, f.extra = u, uint64(nq*g.numFrames*g.frameSize)
		defer u.release() // the sockets hold their own references
	}
	for q := range nq {
		sp := socketSpec{ifindex: f.ifindex, queue: q, geo: g, cfg: c, bindFlags: flags, shareFD: -1}
		if u != nil {
			sp.umem, sp.first = u, q*g.numFrames
			if q > 0 {
				sp.shareFD = f.sockets[0].fd
			}
		}
		s, err := openSocket(sp)
		if err != nil {
			return err
		}
		// A program that keeps only the sockets must not let the
		// collector finalise the Fleet, whose BPF link would then
		// close and detach the program under live sockets (bound,
		// and silently receiving nothing): each socket holds it.
		s.owner, s.pins = f, &f.pins
		f.sockets = append(f.sockets, s)
		if err := f.register(q, s.fd); err != nil {
			return err
		}
	}
	return nil
}

func bindName(flags uint16) string {
	if flags&unix.XDP_ZEROCOPY != 0 {
		return "zero-copy"
	}
	return "copy"
}

// attachMode reads back how the program is attached.
func attachMode(ifindex int) string {
	st, err := (*hook.Door)(nil).Query(ifindex)
	if err != nil {
		return "unknown"
	}
	return hook.ModeName(st.Attached)
}

// Features returns what the kernel reported of the device when Open ran,
// and false when it could not be asked (a kernel before 6.3).
func (f *Fleet) Features() (XSKFeatures, bool) {
	if f == nil {
		return XSKFeatures{}, false
	}
	return f.feat.Features, f.feat.known
}

// Sockets returns the sockets, indexed by queue.
func (f *Fleet) Sockets() []*Socket {
	if f == nil {
		return nil
	}
	return f.sockets
}

// Socket returns the socket of queue q, or nil.
func (f *Fleet) Socket(q int) *Socket {
	if f == nil || q < 0 || q >= len(f.sockets) {
		return nil
	}
	return f.sockets[q]
}

// NumQueues is the number of bound queues.
func (f *Fleet) NumQueues() int {
	if f == nil {
		return 0
	}
	return len(f.sockets)
}

// Memory returns the fleet's one region with WithSharedMemory (every
// queue's frames, then the extra area), or nil without it.
func (f *Fleet) Memory() []byte {
	if f == nil || f.umem == nil {
		return nil
	}
	return f.umem.mem
}

// Extra returns the address of the WithSharedMemory extra area (usable as a
// Desc.Addr on any socket) and the area itself, or (0, nil) without it.
func (f *Fleet) Extra() (uint64, []byte) {
	if f == nil || f.umem == nil {
		return 0, nil
	}
	return f.extra, f.umem.mem[f.extra:]
}

// WaitLinkUp waits until the interface reports its carrier up for a second
// in a row, or timeout passes. A native attach resets the driver's rings,
// and some NICs renegotiate the link for seconds afterwards.
func (f *Fleet) WaitLinkUp(timeout time.Duration) bool {
	if f == nil {
		return false
	}
	deadline := time.Now().Add(timeout)
	ups := 0
	for time.Now().Before(deadline) {
		lk, err := netlink.LinkByIndex(f.ifindex)
		if err == nil && (lk.Attrs().OperState == netlink.OperUp || lk.Attrs().OperState == netlink.OperUnknown) {
			ups++
			if ups >= 5 {
				return true
			}
		} else {
			ups = 0
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
}

// Close unregisters and closes every socket, detaches the program, and
// restores every host setting Open changed, in reverse order. It runs every
// step and returns the first error. It is idempotent. On a nil Fleet (what a
// failed Open returns) it returns an error matching packetio.ErrClosed.
func (f *Fleet) Close() error {
	if f == nil {
		return packetio.NewOpError("close", "afxdp", "", packetio.NoQueue, ErrClosed)
	}
	f.closeMu.Lock()
	defer f.closeMu.Unlock()
	if f.closed {
		return nil
	}
	if f.InsideCall() {
		return packetio.NewOpError("close", "afxdp", f.ifname, packetio.NoQueue, callgate.ErrInside)
	}
	f.closed = true
	return f.teardown()
}

// InsideCall reports whether the calling goroutine runs inside a call on
// one of the fleet's sockets that runs the caller's code (a SendFunc build
// function), where Close would wait for itself: Close refuses then. False
// on a nil Fleet.
func (f *Fleet) InsideCall() bool {
	if f == nil {
		return false
	}
	for _, s := range f.sockets {
		if s.InsideCall() {
			return true
		}
	}
	return false
}

func (f *Fleet) teardown() error {
	var errs []error
	if err := f.closeSockets(); err != nil {
		errs = append(errs, err)
	}
	if err := f.detach(); err != nil {
		errs = append(errs, err)
	}
	if f.share != nil {
		f.share.door.Close()
	}
	if err := f.restoreForeign(); err != nil {
		errs = append(errs, err)
	}
	if err := f.tuning.restore(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (f *Fleet) closeSockets() error {
	var errs []error
	for _, q := range f.registered {
		if err := f.xsks.Delete(uint32(q)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			errs = append(errs, fmt.Errorf("unregister queue %d: %w", q, err))
		}
	}
	f.registered = f.registered[:0]
	for _, s := range f.sockets {
		_ = s.Close()
	}
	f.sockets = nil
	f.umem = nil
	return errors.Join(errs...)
}

// detach takes the fleet's program off the hook (closing its link, or
// leaving the dispatcher) and closes the program and the map, unless they
// are the caller's.
func (f *Fleet) detach() error {
	var errs []error
	if f.share != nil && f.share.member != nil {
		errs = append(errs, f.share.leave())
		f.prog = nil // the dispatcher's member owned it
	}
	if f.lnk != nil {
		if e := f.lnk.Close(); e != nil {
			errs = append(errs, fmt.Errorf("detach the XDP program: %w", e))
		}
		f.lnk = nil
	}
	if !f.borrowed {
		if f.prog != nil {
			f.prog.Close()
		}
		if f.xsks != nil {
			f.xsks.Close()
		}
	}
	f.prog, f.xsks, f.borrowed = nil, nil, false
	return errors.Join(errs...)
}

// programName is the name filter.Program gives every program it loads
// (filter.Program.Spec): with an XSKMap named "xsks" in its maps, the mark
// of a packetio program.
const programName = "xsk_filter"

// foreignProgram is an XDP program Open found attached the legacy
// (netlink) way and replaced under WithReplaceProgram: Close attaches it
// again with the same mode.
type foreignProgram struct {
	prog  *ebpf.Program
	door  *hook.Door // route sockets in Open's network namespace
	id    ebpf.ProgramID
	name  string
	flags int // XDP_FLAGS_*_MODE it was attached with
}

// clearXDP makes room for the fleet's program. With no program on the
// interface it does nothing. A program held by a BPF link belongs to a live
// process and is never touched. A program attached the legacy way is
// removed when it is a leftover of packetio's own (see isLeftover), replaced
// when WithReplaceProgram says so (remembered for restoreForeign), and
// otherwise refused with packetio.ErrBusy naming it.
func (f *Fleet) clearXDP(c *config) error {
	lk, err := netlink.LinkByIndex(f.ifindex)
	if err != nil {
		return fmt.Errorf("look up interface %s: %w", f.ifname, err)
	}
	x := lk.Attrs().Xdp
	if x == nil || x.AttachMode == hook.AttachedNone || x.AttachMode == hook.AttachedHW {
		// An offloaded program has a slot of its own.
		if c.sharedHook {
			return f.planShare(c, 0)
		}
		return nil
	}
	if f.user != nil && x.ProgId == uint32(f.user.id) && x.AttachMode != hook.AttachedMulti {
		f.user.attached = uint32(hook.ModeFlags(x.AttachMode))
		return nil // the caller attached it: left as it is
	}
	if x.AttachMode == hook.AttachedMulti || x.ProgId == 0 {
		return fmt.Errorf("%w: %s already runs several XDP programs (one offloaded to the hardware); packetio replaces none of them", packetio.ErrBusy, f.ifname)
	}
	id := ebpf.ProgramID(x.ProgId)
	prog, err := ebpf.NewProgramFromID(id)
	if err != nil {
		return fmt.Errorf("%w: %s already runs XDP program %d, which packetio cannot inspect (%w)", packetio.ErrBusy, f.ifname, id, err)
	}
	name := ""
	if pi, err := prog.Info(); err == nil {
		name = pi.Name
	}
	what := fmt.Sprintf("%s already runs XDP program %d %q", f.ifname, id, name)
	if v, ok, _ := libxdp.IsDispatcher(prog); ok {
		prog.Close()
		if f.user != nil {
			return fmt.Errorf("%w: %s, libxdp's dispatcher (version %d): WithProgram cannot join it (a dispatcher's programs are extensions loaded for their slot); load yours with libxdp, or let packetio's program share the hook", packetio.ErrBusy, what, v)
		}
		return f.planShare(c, x.AttachMode)
	}
	if linkHolds(id, f.ifindex) {
		prog.Close()
		return fmt.Errorf("%w: %s (held by a BPF link of a running process, which packetio never detaches)", packetio.ErrBusy, what)
	}
	flags := hook.ModeFlags(x.AttachMode)
	leftover := isLeftover(prog, name)
	if !leftover && !c.replaceProg {
		prog.Close()
		return fmt.Errorf("%w: %s (attached by another process); WithReplaceProgram replaces it while the fleet is open", packetio.ErrBusy, what)
	}
	var door *hook.Door
	if !leftover {
		// Close may run on a thread of another network namespace: the
		// program goes back through a socket of this one.
		if door, err = hook.OpenDoor(); err != nil {
			prog.Close()
			return fmt.Errorf("%w: %s; a route socket to put it back later failed: %w", packetio.ErrBusy, what, err)
		}
	}
	if err := (*hook.Door)(nil).Set(f.ifindex, -1, prog.FD(), flags); err != nil {
		prog.Close()
		door.Close()
		return fmt.Errorf("%w: %s, and removing it failed: %w", packetio.ErrBusy, what, err)
	}
	if leftover {
		prog.Close()
		f.info.Decisions = append(f.info.Decisions, fmt.Sprintf("removed XDP program %d %q, a leftover of an earlier packetio process (attached the legacy netlink way)", id, name))
		return nil
	}
	f.foreign = &foreignProgram{prog: prog, door: door, id: id, name: name, flags: flags}
	f.info.Decisions = append(f.info.Decisions, fmt.Sprintf("replaced XDP program %d %q (WithReplaceProgram); Close attaches it again", id, name))
	return nil
}

// restoreForeign attaches the program clearXDP replaced again, with its
// mode, unless something else took the interface meanwhile.
func (f *Fleet) restoreForeign() error {
	fp := f.foreign
	if fp == nil {
		return nil
	}
	f.foreign = nil
	defer fp.prog.Close()
	defer fp.door.Close()
	var err error
	// The kernel frees the fleet's link on close; the slot may take a
	// moment to be empty.
	for range 50 {
		if err = fp.door.Set(f.ifindex, fp.prog.FD(), -1, fp.flags|unix.XDP_FLAGS_UPDATE_IF_NOEXIST); !errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.EEXIST) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("put XDP program %d %q back on %s: %w", fp.id, fp.name, f.ifname, err)
	}
	return nil
}

// isLeftover says whether a program attached the legacy way is packetio's
// own: its name is the one filter.Program gives, and it redirects into an
// XSKMap named "xsks". packetio attaches through a BPF link, which the
// kernel removes with its owner, so such a program was attached by an older
// version or by a process that died before it could take the link.
func isLeftover(prog *ebpf.Program, name string) bool {
	if name != programName || prog.Type() != ebpf.XDP {
		return false
	}
	pi, err := prog.Info()
	if err != nil {
		return false
	}
	ids, ok := pi.MapIDs()
	if !ok {
		return false
	}
	for _, id := range ids {
		m, err := ebpf.NewMapFromID(id)
		if err != nil {
			continue
		}
		mi, err := m.Info()
		m.Close()
		if err == nil && mi.Type == ebpf.XSKMap && mi.Name == "xsks" {
			return true
		}
	}
	return false
}

// linkHolds says whether a BPF link attaches program id to the interface
// with index ifindex. Link IDs are global and interface indexes are not,
// so it errs toward yes: a link of the same program on the same index in
// another namespace counts too, and the program is then left alone.
func linkHolds(id ebpf.ProgramID, ifindex int) bool {
	var it link.Iterator
	defer it.Close()
	for it.Next() {
		li, err := it.Link.Info()
		if err != nil || li.Type != link.XDPType || li.Program != id {
			continue
		}
		if x := li.XDP(); x == nil || int(x.Ifindex) == ifindex {
			return true
		}
	}
	return false
}

// CheckInterfaceName refuses, with packetio.ErrInvalid, a name no Linux
// interface can have: empty, longer than 15 bytes (IFNAMSIZ-1), "." or
// "..", or holding a NUL, a '/', a ':' or white space (the kernel's
// dev_valid_name).
func CheckInterfaceName(name string) error {
	if !host.ValidInterfaceName(name) {
		return fmt.Errorf("%w: bad interface name %q: want 1 to %d bytes, no NUL, '/', ':' or white space", packetio.ErrInvalid, name, unix.IFNAMSIZ-1)
	}
	return nil
}
