package libxdp

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio/afxdp/xdp/internal/hook"
)

// Sentinels; the errors of this package wrap them with the detail.
var (
	// ErrNotShared: the hook holds no dispatcher this package can rebuild
	// (nothing, another program, a dispatcher of another version, or one
	// whose pins are missing).
	ErrNotShared = errors.New("the XDP hook is not shared through a libxdp dispatcher")
	// ErrFull: the dispatcher already holds MaxComponents components.
	ErrFull = errors.New("the dispatcher already holds 10 components")
	// ErrNoBPFFS: the top bpffs directory is not a mounted bpffs.
	ErrNoBPFFS = errors.New("no bpffs mounted")
	// ErrNoFreplace: the kernel refuses freplace (BPF_PROG_TYPE_EXT)
	// programs, which every component is.
	ErrNoFreplace = errors.New("the kernel refuses freplace (BPF_PROG_TYPE_EXT) programs")
)

// maxAttempts bounds how often Add and Remove start over because the hook
// changed under them (libxdp's MAX_RETRY is 10).
const maxAttempts = 10

// Error is the error of an operation on an interface's dispatcher. It
// names what was found there.
type Error struct {
	// Op is "add", "remove" or "read".
	Op string
	// Ifindex is the interface.
	Ifindex int
	// Prog and Name are the program on the hook the error is about, if
	// any.
	Prog ebpf.ProgramID
	Name string
	// Dir is the dispatcher's pin directory, if it matters.
	Dir string
	// Err is what went wrong; it wraps a sentinel where one applies.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "libxdp %s ifindex %d", e.Op, e.Ifindex)
	if e.Prog != 0 {
		fmt.Fprintf(&b, ": program %d %q", e.Prog, e.Name)
	}
	if e.Dir != "" {
		fmt.Fprintf(&b, " (%s)", e.Dir)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Component is a program to add to an interface's dispatcher.
type Component struct {
	// Spec is an XDP program whose first instruction carries the BTF of
	// int name(struct xdp_md *ctx) (xdpbtf.Mark). Add loads a copy as an
	// extension of the dispatcher; the maps it references must be
	// resolved (created and associated) already.
	Spec *ebpf.ProgramSpec
	// Priority is the run priority, lower running first; 0 means
	// DefaultPriority (so libxdp's priority 0 is not available: ask for 1).
	// Negative priorities are refused.
	Priority int
	// ChainActions is the bitmap of XDP verdicts (1<<XDP_PASS, ...) on
	// which the next component runs; 0 means 1<<XDP_PASS. Bit 31 belongs
	// to the dispatcher and is refused.
	ChainActions uint32
	// Frags says the program handles multi-buffer frames
	// (BPF_F_XDP_HAS_FRAGS); the dispatcher takes the flag only when
	// every component has it.
	Frags bool
}

// Options are how Add reaches bpffs and attaches a new dispatcher.
type Options struct {
	// BPFFS is the top bpffs directory; "" means $LIBXDP_BPFFS, else
	// /sys/fs/bpf.
	BPFFS string
	// Mode is unix.XDP_FLAGS_DRV_MODE or unix.XDP_FLAGS_SKB_MODE for a
	// dispatcher Add puts on an empty hook; 0 lets the kernel choose
	// (driver mode where the driver has it, else generic), as libxdp's
	// unspecified mode does. A dispatcher already there keeps its mode.
	Mode int
}

// Entry is one component of a dispatcher, in run order.
type Entry struct {
	// ID and Name are the component program's.
	ID   ebpf.ProgramID
	Name string
	// Priority, ChainActions (without the dispatcher's bit 31) and Frags
	// are what the dispatcher's config records for it.
	Priority     int
	ChainActions uint32
	Frags        bool
}

// State is the dispatcher on an interface.
type State struct {
	// DispatcherID is the dispatcher program's id.
	DispatcherID ebpf.ProgramID
	// Version is its protocol version (2).
	Version int
	// Mode is how it is attached, a hook.Attached* value.
	Mode uint32
	// Entries are its components in run order.
	Entries []Entry
	// Dir is its pin directory.
	Dir string
}

// Member is a component this process added. Its methods are safe for
// concurrent use.
type Member struct {
	door    *hook.Door
	ifindex int
	top     string
	id      ebpf.ProgramID

	mu      sync.Mutex
	prog    *ebpf.Program
	removed bool
}

// Program is the loaded extension program (its Info gives the id the
// dispatcher lists); nil after Remove.
func (m *Member) Program() *ebpf.Program {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.prog
}

// slot is one component while a dispatcher is read or built.
type slot struct {
	prog     *ebpf.Program // nil for the new one until it is loaded
	spec     *ebpf.ProgramSpec
	id       ebpf.ProgramID
	name     string
	tag      string
	loadTime time.Duration
	prio     uint32
	chain    uint32
	frags    bool
	isNew    bool
}

func (s *slot) entry() Entry {
	return Entry{ID: s.id, Name: s.name, Priority: int(s.prio), ChainActions: s.chain, Frags: s.frags}
}

// cmpSlots orders components as libxdp's cmp_xdp_programs: run priority,
// name, attached before new, tag, load time.
func cmpSlots(a, b *slot) int {
	if c := cmp.Compare(a.prio, b.prio); c != 0 {
		return c
	}
	if c := strings.Compare(a.name, b.name); c != 0 {
		return c
	}
	if a.isNew != b.isNew {
		if b.isNew {
			return -1
		}
		return 1
	}
	if c := strings.Compare(a.tag, b.tag); c != 0 {
		return c
	}
	return cmp.Compare(a.loadTime, b.loadTime)
}

// sortSlots puts components in run order.
func sortSlots(slots []*slot) { slices.SortStableFunc(slots, cmpSlots) }

// configFor is the config of a dispatcher running slots in this order.
func configFor(slots []*slot) config {
	c := config{NumProgs: uint8(len(slots)), Frags: len(slots) > 0}
	for i, s := range slots {
		c.ChainActions[i] = s.chain | 1<<dispatcherRetval
		c.RunPrios[i] = s.prio
		if s.frags {
			c.ProgFlags[i] = fragsFlag
		} else {
			c.Frags = false
		}
	}
	return c
}

// newSlot checks c and makes the slot Add inserts.
func newSlot(c Component) (*slot, error) {
	if c.Spec == nil {
		return nil, errors.New("component has no program spec")
	}
	if c.Spec.Type != ebpf.XDP {
		return nil, fmt.Errorf("component %q is a %s program, want XDP", c.Spec.Name, c.Spec.Type)
	}
	if c.Priority < 0 || int64(c.Priority) > int64(^uint32(0)>>1) {
		return nil, fmt.Errorf("component priority %d out of range", c.Priority)
	}
	if c.ChainActions&(1<<dispatcherRetval) != 0 {
		return nil, fmt.Errorf("chain actions %#x: bit %d is the dispatcher's", c.ChainActions, dispatcherRetval)
	}
	s := &slot{spec: c.Spec, name: kernelName(c.Spec.Name), prio: uint32(c.Priority), chain: c.ChainActions, frags: c.Frags, isNew: true}
	if s.prio == 0 {
		s.prio = DefaultPriority
	}
	if s.chain == 0 {
		s.chain = 1 << xdpPass
	}
	return s, nil
}

// kernelName is the name the kernel will report for a program named n
// (BPF_OBJ_NAME_LEN-1 bytes), so a new component sorts as it will once
// loaded.
func kernelName(n string) string {
	if len(n) > 15 {
		return n[:15]
	}
	return n
}

// dispatcher is a dispatcher found on the hook, with its components.
type dispatcher struct {
	prog  *ebpf.Program
	id    ebpf.ProgramID
	mode  uint32
	dir   string
	slots []*slot
}

func (d *dispatcher) close() {
	d.prog.Close()
	closeSlots(d.slots)
}

func closeSlots(slots []*slot) {
	for _, s := range slots {
		if s.prog != nil && !s.isNew {
			s.prog.Close()
		}
	}
}

func (d *dispatcher) state() State {
	st := State{DispatcherID: d.id, Version: dispatcherVersion, Mode: d.mode, Dir: d.dir}
	for _, s := range d.slots {
		st.Entries = append(st.Entries, s.entry())
	}
	return st
}

// foreignError says the program on the hook is no dispatcher at all.
type foreignError string

func (e foreignError) Error() string { return "not a libxdp dispatcher (" + string(e) + ")" }

// errRetry says the hook changed while it was read or replaced: start over.
var errRetry = errors.New("the XDP hook changed meanwhile")

// openDispatcher reads the dispatcher on the hook (hook state st) and its
// components from their pins; the caller holds the lock. The error is an
// *Error, or errRetry.
func openDispatcher(op string, ifindex int, st hook.State, top string) (*dispatcher, error) {
	fail := func(id ebpf.ProgramID, name, dir string, err error) error {
		return &Error{Op: op, Ifindex: ifindex, Prog: id, Name: name, Dir: dir, Err: err}
	}
	switch st.Attached {
	case hook.AttachedNone:
		return nil, fail(0, "", "", fmt.Errorf("%w: no program on the hook", ErrNotShared))
	case hook.AttachedDriver, hook.AttachedGeneric:
	default:
		return nil, fail(ebpf.ProgramID(st.ProgID), "", "", fmt.Errorf("%w: a program is attached in %s mode", ErrNotShared, hook.ModeName(st.Attached)))
	}
	id := ebpf.ProgramID(st.ProgID)
	p, err := ebpf.NewProgramFromID(id)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errRetry
	}
	if err != nil {
		return nil, fail(id, "", "", fmt.Errorf("open the program on the hook: %w", err))
	}
	d := &dispatcher{prog: p, id: id, mode: st.Attached}
	ok := false
	defer func() {
		if !ok {
			d.close()
		}
	}()
	name := ""
	if info, err := p.Info(); err == nil {
		name = info.Name
	}
	in, err := inspect(p)
	if err != nil {
		return nil, fail(id, name, "", err)
	}
	if !in.ok {
		return nil, fail(id, name, "", fmt.Errorf("%w: %w", ErrNotShared, foreignError(in.why)))
	}
	if in.version != dispatcherVersion {
		return nil, fail(id, name, "", fmt.Errorf("%w: a version %d dispatcher, this package rebuilds version %d only", ErrNotShared, in.version, dispatcherVersion))
	}
	cfg, err := parseConfig(in.value)
	if err != nil {
		return nil, fail(id, name, "", fmt.Errorf("%w: %v", ErrNotShared, err))
	}
	d.dir = dispatchDir(top, ifindex, id)
	if _, err := os.Stat(d.dir); err != nil {
		return nil, fail(id, name, d.dir, fmt.Errorf("%w: its pin directory is missing (%v)", ErrNotShared, err))
	}
	for i := range int(cfg.NumProgs) {
		cp, err := ebpf.LoadPinnedProgram(progPin(d.dir, i), nil)
		if err != nil {
			return nil, fail(id, name, d.dir, fmt.Errorf("%w: component %d: %v", ErrNotShared, i, err))
		}
		s := &slot{prog: cp, prio: cfg.RunPrios[i], chain: cfg.ChainActions[i] &^ (1 << dispatcherRetval), frags: cfg.ProgFlags[i]&fragsFlag != 0}
		d.slots = append(d.slots, s)
		info, err := cp.Info()
		if err != nil {
			return nil, fail(id, name, d.dir, fmt.Errorf("component %d: %w", i, err))
		}
		s.id, _ = info.ID()
		s.name, s.tag = info.Name, info.Tag
		s.loadTime, _ = info.LoadTime()
	}
	ok = true
	return d, nil
}

// built is a new dispatcher with its components linked, not yet pinned.
type built struct {
	prog  *ebpf.Program
	id    ebpf.ProgramID
	links []link.Link
	progs []*ebpf.Program
}

func (b *built) close() {
	for _, l := range b.links {
		l.Close()
	}
	b.prog.Close()
}

// build loads a dispatcher for slots (in this order) and links each
// component into it, loading the new one as an extension first. On
// failure everything it made is closed, the new slot's program too.
func build(slots []*slot) (b *built, err error) {
	cfg := configFor(slots)
	p, err := loadDispatcher(&cfg)
	if cfg.Frags && errors.Is(err, unix.EINVAL) {
		// A kernel before 5.18 knows no BPF_F_XDP_HAS_FRAGS: as libxdp,
		// go without.
		cfg.Frags = false
		p, err = loadDispatcher(&cfg)
	}
	if err != nil {
		return nil, err
	}
	b = &built{prog: p}
	defer func() {
		if err != nil {
			b.close()
			for _, s := range slots {
				if s.isNew && s.prog != nil {
					s.prog.Close()
					s.prog = nil
				}
			}
			b = nil
		}
	}()
	info, err := p.Info()
	if err != nil {
		return b, fmt.Errorf("dispatcher info: %w", err)
	}
	b.id, _ = info.ID()
	for i, s := range slots {
		target := attachTarget(i, len(slots))
		if s.isNew {
			spec := s.spec.Copy()
			spec.Type = ebpf.Extension
			spec.AttachType = ebpf.AttachNone
			spec.AttachTarget = p
			spec.AttachTo = target
			spec.Flags &^= unix.BPF_F_XDP_HAS_FRAGS
			if s.prog, err = ebpf.NewProgram(spec); err != nil {
				return b, noFreplace(fmt.Sprintf("load component %q as an extension of %s", s.spec.Name, target), err)
			}
			if pi, err := s.prog.Info(); err == nil {
				s.id, _ = pi.ID()
				s.name = pi.Name
			}
		}
		l, err := link.AttachFreplace(p, target, s.prog)
		if err != nil {
			return b, noFreplace(fmt.Sprintf("link component %d %q into %s", s.id, s.name, target), err)
		}
		b.links = append(b.links, l)
		b.progs = append(b.progs, s.prog)
	}
	return b, nil
}

// noFreplace is the error of step what: ErrNoFreplace where the kernel
// answered EPERM (it forbids extensions outright; the loader's guess
// about RLIMIT_MEMLOCK does not apply), err as it is otherwise.
func noFreplace(what string, err error) error {
	if errors.Is(err, unix.EPERM) {
		return fmt.Errorf("%w: %s: %w", ErrNoFreplace, what, unix.EPERM)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// install pins b under top and puts it on the hook: on an empty hook
// (old == nil) only if it is still empty, else in place of old. On failure
// b's pins are gone; errRetry says the hook changed.
func install(door *hook.Door, ifindex int, top string, b *built, old *dispatcher, mode int) (string, error) {
	dir := dispatchDir(top, ifindex, b.id)
	if err := pinAll(dir, b.links, b.progs); err != nil {
		return dir, err
	}
	var err error
	if old == nil {
		err = door.Set(ifindex, b.prog.FD(), -1, unix.XDP_FLAGS_UPDATE_IF_NOEXIST|mode)
		if errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EEXIST) {
			err = errRetry
		}
	} else {
		err = door.Set(ifindex, b.prog.FD(), old.prog.FD(), hook.ModeFlags(old.mode))
		if errors.Is(err, unix.EEXIST) {
			err = errRetry
		}
	}
	if err != nil {
		removeDir(dir)
		if err != errRetry {
			err = fmt.Errorf("attach the new dispatcher %d: %w", b.id, err)
		}
		return dir, err
	}
	return dir, nil
}

// retry runs once until it stops asking to start over, at most
// maxAttempts times.
func retry(op string, ifindex int, once func() error) error {
	for attempt := range maxAttempts {
		err := once()
		if err != errRetry {
			return err
		}
		time.Sleep(time.Duration(1<<attempt) * time.Microsecond * 100)
	}
	return &Error{Op: op, Ifindex: ifindex, Err: fmt.Errorf("%w: gave up after %d attempts", errRetry, maxAttempts)}
}

// Add puts c on the XDP hook of the interface with index ifindex (reached
// through door, which may be nil for the calling thread's namespace): on
// an empty hook in a new dispatcher of its own, else in a new dispatcher
// holding the present components and c, in run order, swapped in
// atomically. See the package doc for what is refused.
func Add(door *hook.Door, ifindex int, c Component, o Options) (*Member, error) {
	fail := func(err error) (*Member, error) {
		var e *Error
		if errors.As(err, &e) {
			return nil, err
		}
		return nil, &Error{Op: "add", Ifindex: ifindex, Err: err}
	}
	if o.Mode != 0 && o.Mode != unix.XDP_FLAGS_DRV_MODE && o.Mode != unix.XDP_FLAGS_SKB_MODE {
		return fail(fmt.Errorf("mode %#x: want XDP_FLAGS_DRV_MODE, XDP_FLAGS_SKB_MODE or 0", o.Mode))
	}
	top, err := resolveTop(o.BPFFS)
	if err != nil {
		return fail(err)
	}
	var m *Member
	err = retry("add", ifindex, func() error {
		s, err := newSlot(c)
		if err != nil {
			return err
		}
		unlock, err := lock(top, true)
		if err != nil {
			return err
		}
		defer unlock()
		m, err = addOnce(door, ifindex, top, s, o.Mode)
		return err
	})
	if err != nil {
		return fail(err)
	}
	return m, nil
}

func addOnce(door *hook.Door, ifindex int, top string, s *slot, mode int) (*Member, error) {
	st, err := door.Query(ifindex)
	if err != nil {
		return nil, err
	}
	var old *dispatcher
	slots := []*slot{s}
	if st.Attached != hook.AttachedNone {
		if old, err = openDispatcher("add", ifindex, st, top); err != nil {
			return nil, err
		}
		defer old.close()
		if len(old.slots) >= MaxComponents {
			return nil, &Error{Op: "add", Ifindex: ifindex, Prog: old.id, Name: dispatcherName, Dir: old.dir,
				Err: fmt.Errorf("%w: %d components", ErrFull, len(old.slots))}
		}
		slots = append(slices.Clone(old.slots), s)
		sortSlots(slots)
	}
	b, err := build(slots)
	if err != nil {
		return nil, err
	}
	defer b.close()
	if _, err := install(door, ifindex, top, b, old, mode); err != nil {
		s.prog.Close()
		s.prog = nil
		return nil, err
	}
	if old != nil {
		removeDir(old.dir) // best effort, as libxdp: the swap is done
	}
	return &Member{door: door, ifindex: ifindex, top: top, id: s.id, prog: s.prog}, nil
}

// Remove takes this component off the interface: the dispatcher is
// replaced by one without it, or detached when it was the last. The other
// components stay as they are. Once it succeeds, further calls do nothing;
// a component someone else already removed counts as removed.
func (m *Member) Remove() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.removed {
		return nil
	}
	err := retry("remove", m.ifindex, func() error {
		unlock, err := lock(m.top, true)
		if err != nil {
			return err
		}
		defer unlock()
		return m.removeOnce()
	})
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			err = &Error{Op: "remove", Ifindex: m.ifindex, Err: err}
		}
		return err
	}
	m.removed = true
	m.prog.Close()
	m.prog = nil
	return nil
}

func (m *Member) removeOnce() error {
	st, err := m.door.Query(m.ifindex)
	if err != nil {
		return err
	}
	if st.Attached == hook.AttachedNone {
		return nil // gone with the whole dispatcher
	}
	old, err := openDispatcher("remove", m.ifindex, st, m.top)
	var foreign foreignError
	if errors.As(err, &foreign) {
		return nil // the dispatcher, and this component with it, is gone
	}
	if err != nil {
		return err
	}
	defer old.close()
	i := slices.IndexFunc(old.slots, func(s *slot) bool { return s.id == m.id })
	if i < 0 {
		return nil // someone else removed it
	}
	if len(old.slots) == 1 {
		err := m.door.Set(m.ifindex, -1, old.prog.FD(), hook.ModeFlags(old.mode))
		if errors.Is(err, unix.EEXIST) {
			return errRetry
		}
		if err != nil {
			return &Error{Op: "remove", Ifindex: m.ifindex, Prog: old.id, Name: dispatcherName, Dir: old.dir, Err: fmt.Errorf("detach the dispatcher: %w", err)}
		}
		removeDir(old.dir)
		return nil
	}
	b, err := build(slices.Delete(slices.Clone(old.slots), i, i+1))
	if err != nil {
		return &Error{Op: "remove", Ifindex: m.ifindex, Prog: old.id, Name: dispatcherName, Dir: old.dir, Err: err}
	}
	defer b.close()
	if _, err := install(m.door, m.ifindex, m.top, b, old, 0); err != nil {
		return err
	}
	removeDir(old.dir)
	return nil
}

// Read reports the dispatcher on the interface's hook and its components
// (bpffs as Options.BPFFS). A hook without a dispatcher this package can
// read is an error wrapping ErrNotShared.
func Read(door *hook.Door, ifindex int, bpffs string) (State, error) {
	fail := func(err error) (State, error) {
		var e *Error
		if errors.As(err, &e) {
			return State{}, err
		}
		return State{}, &Error{Op: "read", Ifindex: ifindex, Err: err}
	}
	top, err := resolveTop(bpffs)
	if err != nil {
		return fail(err)
	}
	var st State
	err = retry("read", ifindex, func() error {
		hs, err := door.Query(ifindex)
		if err != nil {
			return err
		}
		if _, err := os.Stat(workDir(top)); err == nil {
			unlock, err := lock(top, false)
			if err != nil {
				return err
			}
			defer unlock()
		}
		d, err := openDispatcher("read", ifindex, hs, top)
		if err != nil {
			return err
		}
		defer d.close()
		st = d.state()
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return st, nil
}
