package xdp

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/cpu"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
	"github.com/packetio/packetio/internal/callgate"
	"github.com/packetio/packetio/internal/fdwait"
	"github.com/packetio/packetio/internal/pool"
	"github.com/packetio/packetio/internal/xskopt"
)

// Desc names one frame's bytes in the UMEM: struct xdp_desc's fields, and
// the same type as packetio.Desc, so the packetio backend passes descriptors
// through without converting them.
type Desc = packetio.Desc

// The errors of this package are packetio's sentinels, wrapped with context.
var (
	// ErrClosed: the socket or fleet is closed (also when Close woke a
	// Poll).
	ErrClosed = packetio.ErrClosed
	// ErrBadLength: a SendFunc build returned a length outside its frame,
	// or a payload does not fit.
	ErrBadLength = packetio.ErrBadLength
	// ErrUnsupported: an option or a filter this kernel, driver or
	// combination cannot honour.
	ErrUnsupported = packetio.ErrUnsupported
)

// Socket is one AF_XDP socket (an XSK) bound to one queue of one interface:
// the UMEM frames it owns and its four rings, held in two halves. The
// receive half (fill and rx rings, the receive pool, its scratch and
// counters) and the transmit half (tx and completion rings, the transmit
// pool, its scratch and counters) each sit on cache lines of their own;
// what both read (the descriptor of the UMEM, the closing flag) is written
// only at open and Close.
//
// Concurrency: one goroutine may drive the receive side (Fill, Poll,
// Receive, Recycle, WakeupRx) while one other drives the transmit side
// (Alloc, Transmit, Complete, CompleteInto, Kick, SendBatch, SendFunc),
// with no locks: each side has its own ring pair and its own frame pool.
// Within a side calls must not overlap. Stats, the Num gauges and Close are
// safe from any goroutine; Close wakes a blocked Poll and waits for calls
// in progress before it unmaps anything.
type Socket struct {
	fd, efd        int
	waiter         *fdwait.Waiter // Poll's sleep on the runtime's poller (fd and efd)
	ifindex, queue int
	ifname         string // for errors
	umem           *umem
	frameSize      int
	first, count   int // the frames this socket owns, by index in the UMEM
	txHeadroom     uint64
	needWakeup     bool
	zeroCopy       bool
	multiBuffer    bool
	stamps         bool          // the stamp leads the packet in the frame: receive strips it
	spin           time.Duration // how long Poll spins before it sleeps; 0 never
	txMeta         bool
	reuseRx        bool
	bindFlags      uint16
	shared         bool // bound to another socket's UMEM
	onForeign      func(addr uint64)
	pinCPU         int         // the CPU the driving goroutine is placed on, -1 for none
	pinned         atomic.Bool // placement done (or declined)
	pinRefused     atomic.Uint64
	pins           *threadPins // shared by a fleet's sockets
	owner          *Fleet      // keeps the fleet, and its program, reachable
	maps           [][]byte

	calls   callgate.Calls // calls of neither half in progress (Stats), for Close
	closing atomic.Bool
	closeMu sync.Mutex

	// failed latches the first permanent failure (the device went away,
	// the transmit ring wedged): Err reports it and the data calls stop.
	// It is read once per call, never per packet.
	failed    atomic.Pointer[failure]
	rxStopped atomic.Bool // CloseRx ran: Poll answers ErrClosed
	maxTxLen  uint32      // the longest packet the link carries, from its MTU at open
	epoch     time.Time   // when the socket opened: the origin of rxHalf.probed

	r rxHalf
	t txHalf
}

// rxHalf is what the receive side writes on every call: its two rings, its
// frame pool, its scratch and its counters. The pads keep it on cache
// lines of its own, so a receive goroutine and a transmit goroutine on two
// cores never write the same line.
type rxHalf struct {
	_    cpu.CacheLinePad
	fill prodRing[uint64]
	ring consRing[unix.XDPDesc]
	pool *pool.Frames

	// Scratch, reused by every call.
	addrs []uint64
	descs []Desc
	stamp []uint64
	pkts  []Packet
	mbuf  [2][]Desc       // ReceivePackets' buffers, used in turn
	mbi   int             // the one in use
	held  [maxRxSegs]Desc // a chain whose tail has not arrived
	nheld int
	whole []Desc // ReceiveWhole's result
	// inPacket: the last descriptor receive took had XDP_PKT_CONTD, so
	// the next is not a packet's first and carries no stamp in front
	// (stripStamp). ReceiveStamped takes whole packets only.
	inPacket bool
	// chainStamp is the stamp of the packet inPacket is inside, which
	// ReceiveTimestamps gives the rest of its descriptors.
	chainStamp uint64

	probed atomic.Int64 // when Poll last asked whether the device is there, since epoch
	// spinCold is set when Poll's last spin found nothing: the next Poll
	// sleeps at once, until one finds packets already waiting or a sleep
	// ends with packets sooner than a spin lasts.
	spinCold atomic.Bool

	calls callgate.Calls // receive calls in progress, for Close
	st    rxCounters
	_     cpu.CacheLinePad
}

// txHalf is the transmit side's counterpart of rxHalf.
type txHalf struct {
	_              cpu.CacheLinePad
	comp           consRing[uint64]
	ring           prodRing[unix.XDPDesc]
	pool           *pool.Frames
	budget         int   // descriptors one kick moves in copy mode
	budgetKept     error // why budget is not the ring's, for Info
	kickRetryBound int
	kickPending    bool // the last kick left work behind (EBUSY, EAGAIN): the next call kicks again
	wedge          wedgeWatch

	// Scratch, reused by every call.
	addrs []uint64
	descs []Desc

	calls callgate.Calls // transmit calls in progress, for Close
	st    txCounters
	_     cpu.CacheLinePad
}

// rxCounters are the receive side's counters: cumulative, 64-bit, added
// once per batch.
type rxCounters struct {
	filled, received, rxBatches, polls, rxKicks atomic.Uint64
	fillPoolEmpty, rejected                     atomic.Uint64
	rxBytes                                     atomic.Uint64
	unstamped                                   atomic.Uint64
	stampsDevice, stampsMonotonic               atomic.Uint64
	spinHits, spinMisses                        atomic.Uint64
}

// txCounters are the transmit side's counters.
type txCounters struct {
	transmitted, completed, txBatches   atomic.Uint64
	kicks, kicksSuppressed, kickRetries atomic.Uint64
	kickGaveUp, kickBusy, kickErrors    atomic.Uint64
	ringFull, poolEmpty, rejected       atomic.Uint64
	foreign                             atomic.Uint64
	txBytes                             atomic.Uint64
	tooLong, wedged, linkDown           atomic.Uint64
	sendReq, sendGot                    atomic.Uint64
	inflightHigh                        atomic.Uint64
	compBatches                         atomic.Uint64
}

// socketSpec is what openSocket builds.
type socketSpec struct {
	ifindex, queue int
	geo            socketGeometry
	cfg            *config
	bindFlags      uint16 // XDP_COPY/XDP_ZEROCOPY | XDP_USE_NEED_WAKEUP | XDP_USE_SG
	umem           *umem  // nil: a private UMEM of geo.numFrames frames
	first          int    // first frame index of this socket in umem
	shareFD        int    // >= 0: bind to this socket's UMEM (XDP_SHARED_UMEM)
}

// NewSocket opens one socket on queue queueID of the interface with index
// ifindex, with its own UMEM, fills its fill ring and binds it. It attaches
// no program and registers nowhere: that is Open's job (or the caller's,
// with Program). Options that concern the filter are ignored.
func NewSocket(ifindex, queueID int, opts ...Option) (*Socket, error) {
	c := newConfig(opts)
	g, err := c.geometry()
	if err == nil {
		err = c.chooseNode(ifaceName(ifindex), ifindex)
	}
	if err != nil {
		return nil, packetio.NewOpError("open", "afxdp", ifaceName(ifindex), queueID, err)
	}
	flags := uint16(0)
	switch c.mode {
	case ModeZeroCopy:
		flags = unix.XDP_ZEROCOPY
	case ModeGeneric:
		flags = unix.XDP_COPY
	}
	if c.needWakeup {
		flags |= unix.XDP_USE_NEED_WAKEUP
	}
	if c.multiBuf {
		flags |= unix.XDP_USE_SG
	}
	return openSocket(socketSpec{ifindex: ifindex, queue: queueID, geo: g, cfg: c, bindFlags: flags, shareFD: -1})
}

// openSocket brings a socket up in named steps; whatever a failed step
// and those before it set up is undone (teardown releases what exists).
func openSocket(sp socketSpec) (*Socket, error) {
	g, c := sp.geo, sp.cfg
	s := &Socket{fd: -1, efd: -1, ifindex: sp.ifindex, ifname: ifaceName(sp.ifindex), queue: sp.queue, frameSize: g.frameSize,
		first: sp.first, count: g.numFrames, txHeadroom: uint64(g.txHeadroom),
		multiBuffer: c.multiBuf, stamps: c.stamps, spin: c.spinTime(), txMeta: c.txMeta, reuseRx: c.reuseRx,
		onForeign: c.onForeign, bindFlags: sp.bindFlags, shared: sp.shareFD >= 0, pinCPU: -1, pins: new(threadPins)}
	s.maxTxLen = linkMaxTxLen(sp.ifindex, g.frameSize)
	s.epoch = time.Now()
	for _, step := range []func(socketSpec) (string, error){
		s.openFDs,
		s.attachUMEM,
		s.mapAllRings,
		s.makePools,
		s.bind,
		s.setSocketOptions,
	} {
		if what, err := step(sp); err != nil {
			s.teardown()
			return nil, fmt.Errorf("queue %d: %s: %w", sp.queue, what, err)
		}
	}
	return s, nil
}

// openFDs makes the AF_XDP socket, the eventfd Close wakes Poll with, and
// the waiter Poll sleeps on.
func (s *Socket) openFDs(socketSpec) (string, error) {
	var err error
	if s.fd, err = unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0); err != nil {
		return "socket(AF_XDP) (needs CAP_NET_RAW)", err
	}
	if s.efd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return "eventfd", err
	}
	if s.waiter, err = fdwait.New(s.rxWoken, s.fd, s.efd); err != nil {
		return "poll waiter", err
	}
	return "", nil
}

// attachUMEM maps a private UMEM or takes a reference to a shared one,
// and registers it with the socket unless the socket binds to another
// socket's UMEM.
func (s *Socket) attachUMEM(sp socketSpec) (string, error) {
	g, c := sp.geo, sp.cfg
	if sp.umem == nil {
		var err error
		if s.umem, err = newUMEM(g.numFrames*g.frameSize, g.frameSize, c.hugePages, c.umemNode()); err != nil {
			return "umem", err
		}
	} else {
		s.umem = sp.umem
		s.umem.acquire()
	}
	if sp.shareFD >= 0 {
		return "", nil
	}
	var flags, metaLen uint32
	if c.txMeta {
		flags, metaLen = unix.XDP_UMEM_TX_METADATA_LEN|unix.XDP_UMEM_TX_SW_CSUM, TxMetadataLen
	}
	if g.colours {
		s.umem.colour()
		if err := s.colourFits(); err != nil {
			return "WithCacheColours", err
		}
		flags |= unix.XDP_UMEM_UNALIGNED_CHUNK_FLAG
	}
	if err := registerUMEM(s.fd, s.umem.mem, uint32(s.umem.chunk), 0, flags, metaLen); err != nil {
		switch {
		case errors.Is(err, unix.EINVAL) && c.txMeta:
			return "register the UMEM with transmit metadata (needs Linux 6.8)", err
		case errors.Is(err, unix.EINVAL) && g.colours:
			return "register the UMEM in unaligned-chunk mode for WithCacheColours (needs Linux 5.4)", err
		}
		return "register the UMEM (XDP_UMEM_REG; raise RLIMIT_MEMLOCK)", err
	}
	return "", nil
}

// colourFits refuses colours, once the UMEM has them, on a link whose MTU
// carries packets longer than a coloured frame holds (MaxPacket): the
// kernel would drop them.
func (s *Socket) colourFits() error {
	if need := int(linkMaxTxLen(s.ifindex, s.frameSize)); need > s.MaxPacket() {
		return fmt.Errorf("%w: %s carries packets of up to %d bytes (its MTU, the Ethernet header and a VLAN tag), and a coloured frame holds %d: lower the MTU, or open without colours", packetio.ErrUnsupported, s.ifname, need, s.MaxPacket())
	}
	return nil
}

// umemRings are the fill and completion ring sizes: a socket that owns or
// shares a UMEM across queues needs both, even for a direction it does not
// use.
func umemRings(g socketGeometry) (fill, comp int) {
	fill, comp = g.fill, g.comp
	if g.rx == 0 {
		fill = 2
	}
	if g.tx == 0 {
		comp = 2
	}
	return fill, comp
}

// mapAllRings sizes the rings the socket has and maps them.
func (s *Socket) mapAllRings(sp socketSpec) (string, error) {
	g := sp.geo
	fill, comp := umemRings(g)
	for _, r := range []struct {
		opt  int
		size int
		name string
	}{
		{unix.XDP_UMEM_FILL_RING, fill, "fill"},
		{unix.XDP_UMEM_COMPLETION_RING, comp, "completion"},
		{unix.XDP_RX_RING, g.rx, "rx"},
		{unix.XDP_TX_RING, g.tx, "tx"},
	} {
		if r.size == 0 {
			continue
		}
		if err := unix.SetsockoptInt(s.fd, unix.SOL_XDP, r.opt, r.size); err != nil {
			return "set the " + r.name + " ring size", err
		}
	}
	off, err := mmapOffsets(s.fd)
	if err != nil {
		return "read the ring offsets", err
	}
	if err := s.mapRings(off, fill, comp, g); err != nil {
		return "map the rings", err
	}
	return "", nil
}

// makePools cuts the socket's frames into a receive and a transmit pool
// and allocates the scratch every later call reuses.
func (s *Socket) makePools(sp socketSpec) (string, error) {
	g := sp.geo
	rxFrames := g.numFrames - g.txFrames
	var err error
	if s.r.pool, err = pool.New(sp.first, rxFrames, g.frameSize); err != nil {
		return "receive pool", err
	}
	txFirst, txFrames := sp.first+rxFrames, g.txFrames
	if txFirst == 0 && g.txHeadroom == 0 && txFrames > 1 {
		// Alloc would hand out frame 0 as the zero descriptor, which
		// Free and Recycle must refuse as unset: leave that frame unused.
		txFirst, txFrames = 1, txFrames-1
	}
	if s.t.pool, err = pool.New(txFirst, txFrames, g.frameSize); err != nil {
		return "transmit pool", err
	}
	s.r.addrs = make([]uint64, 0, max(g.fill, 64))
	s.r.descs = make([]Desc, 0, max(g.rx, 64))
	s.r.stamp = make([]uint64, 0, max(g.rx, 64))
	if sp.cfg.multiBuf {
		for i := range s.r.mbuf {
			s.r.mbuf[i] = make([]Desc, 0, max(g.rx, 64)+maxRxSegs)
		}
		s.r.pkts = make([]Packet, 0, max(g.rx, 64))
		s.r.whole = make([]Desc, 0, max(g.rx, 64)+maxRxSegs)
	}
	s.t.addrs = make([]uint64, 0, max(g.tx, 64))
	s.t.descs = make([]Desc, 0, max(g.tx, 64))
	return "", nil
}

// bind fills the fill ring, binds the socket to its queue and reads back
// what the kernel granted.
func (s *Socket) bind(sp socketSpec) (string, error) {
	// Fill before bind: a zero-copy driver that binds against an empty
	// fill ring can wedge its queue in a buffer-allocation loop (mlx5).
	if sp.geo.rx > 0 {
		s.Fill(sp.geo.fill)
	}
	sa := &unix.SockaddrXDP{Flags: sp.bindFlags, Ifindex: uint32(sp.ifindex), QueueID: uint32(sp.queue)}
	if sp.shareFD >= 0 {
		// A sharing socket takes its mode from the UMEM's owner; the
		// kernel refuses any other flag.
		sa.Flags, sa.SharedUmemFD = unix.XDP_SHARED_UMEM, uint32(sp.shareFD)
	}
	if err := bindRetry(s.fd, sa); err != nil {
		return fmt.Sprintf("bind (flags %#x)", sa.Flags), err
	}
	if zc, err := xskopt.Options(s.fd); err == nil {
		s.zeroCopy = zc
	}
	// The wake-up protocol follows the owner of a shared UMEM.
	s.needWakeup = sp.bindFlags&unix.XDP_USE_NEED_WAKEUP != 0
	return "", nil
}

// setSocketOptions applies busy polling when asked, and the transmit
// budget of one kick.
func (s *Socket) setSocketOptions(sp socketSpec) (string, error) {
	g, c := sp.geo, sp.cfg
	if c.busyUsecs > 0 && c.busyBudget > 0 {
		for _, o := range [][2]int{{unix.SO_PREFER_BUSY_POLL, 1}, {unix.SO_BUSY_POLL, c.busyUsecs}, {unix.SO_BUSY_POLL_BUDGET, c.busyBudget}} {
			if err := unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, o[0], o[1]); err != nil {
				return "busy-poll socket options (Linux 5.11+)", err
			}
		}
	}
	// In copy mode one kick moves at most the socket's transmit budget
	// (32 by default); raise it to the ring so a batch needs one system
	// call. Kernels before 6.16 have no such option and keep 32, which
	// Info reports with the kernel's answer.
	s.t.budget = xskopt.DefaultTxBudget
	if g.tx > 0 && !s.zeroCopy {
		s.t.budget, s.t.budgetKept = xskopt.RaiseTxBudget(s.fd, g.tx)
	}
	s.t.kickRetryBound = g.tx/s.t.budget + 8
	return "", nil
}

// The link-layer overhead a link carries on top of its MTU: the kernel
// forwards (is_skb_forwardable, which veth applies to every frame) up to
// mtu + hard_header_len + VLAN_HLEN bytes and drops anything longer, which
// in copy mode the socket sees as a consumed frame and EBUSY.
const (
	ethHeaderLen  = 14
	vlanHeaderLen = 4
)

// linkMaxTxLen is the longest frame the interface with index ifindex
// carries: its MTU plus the Ethernet and one VLAN header, read now (in the
// calling thread's namespace); with no MTU to read, one frame.
func linkMaxTxLen(ifindex, frameSize int) uint32 {
	ifi, err := net.InterfaceByIndex(ifindex)
	if err != nil || ifi.MTU <= 0 {
		return uint32(frameSize)
	}
	return uint32(min(ifi.MTU+ethHeaderLen+vlanHeaderLen, 1<<24))
}

// MaxTxLen is the longest packet Transmit and SendFunc accept: the link's
// MTU when the socket opened plus the Ethernet header and one VLAN tag, the
// limit the kernel forwards; a longer one is refused up front (counted in
// Stats().TxTooLong) because the kernel would consume and drop it.
func (s *Socket) MaxTxLen() int { return int(s.maxTxLen) }

// failure is a latched permanent error: its cause, which each call that
// reports it wraps with its own operation.
type failure struct{ cause error }

// fail latches cause as the socket's permanent failure unless one is
// already latched, and returns the one that stands as op's error.
func (s *Socket) fail(op string, cause error) error {
	if s.failed.CompareAndSwap(nil, &failure{cause: cause}) {
		s.wakePoll()
	}
	return s.failure(op)
}

// wakePoll wakes every Poll blocked on the socket, through the eventfd it
// also waits on. Each woken Poll tells why (Close, CloseRx, a failure);
// the eventfd stays readable, so no later Poll blocks.
func (s *Socket) wakePoll() {
	var one = [8]byte{1}
	_, _ = unix.Write(s.efd, one[:])
}

// failure returns the latched failure as op's error, nil while the
// socket is healthy. It allocates only when there is one.
func (s *Socket) failure(op string) error {
	if f := s.failed.Load(); f != nil {
		return s.opErr(op, f.cause)
	}
	return nil
}

// errGone is the cause of a socket whose device went away: the kernel
// unbound it (NETDEV_UNREGISTER sets sk_err to ENETDOWN, and every later
// sendto or recvfrom answers ENXIO).
func errGone(no unix.Errno) error {
	return fmt.Errorf("%w: the kernel unbound the socket (%w)", packetio.ErrDeviceGone, no)
}

// probe asks the kernel whether the socket still stands: SO_ERROR, which
// the kernel sets to ENETDOWN when it unbinds the socket from a device
// being unregistered. Reading clears it, so what it finds is latched. One
// system call; never on a per-packet path (Err, and Poll wake-ups at most
// every probeEvery).
func (s *Socket) probe(op string) error {
	if err := s.failure(op); err != nil {
		return err
	}
	v, err := unix.GetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_ERROR)
	switch {
	case err != nil || v == 0:
		return s.failure(op)
	case unix.Errno(v) == unix.ENETDOWN:
		return s.fail(op, errGone(unix.ENETDOWN))
	default:
		return s.fail(op, fmt.Errorf("%w: socket error %w", packetio.ErrQueueFailed, unix.Errno(v)))
	}
}

// Err is nil while the socket is healthy. After Close it wraps ErrClosed;
// when the device went away, ErrDeviceGone; when the transmit ring stopped
// moving, ErrWedged (both wrap packetio.ErrQueueFailed and stay). It asks
// the kernel (one system call), so it finds a lost device even when no
// other call has run since. Safe from any goroutine.
func (s *Socket) Err() error {
	if !s.enter() {
		return s.opErr("err", ErrClosed)
	}
	defer s.exit()
	return s.probe("err")
}

// CloseRx ends the receive side alone: every Poll blocked on the socket
// returns at once with an error wrapping ErrClosed, and so does every Poll
// after it. The transmit side keeps working. Close still releases the
// socket.
func (s *Socket) CloseRx() {
	if s.rxStopped.Swap(true) || !s.enter() {
		return
	}
	defer s.exit()
	s.wakePoll()
}

// ifaceName is the name of the interface with index ifindex, for errors;
// empty when it has none (any more).
func ifaceName(ifindex int) string {
	if ifi, err := net.InterfaceByIndex(ifindex); err == nil {
		return ifi.Name
	}
	return ""
}

// bindBusyWait bounds how long bind waits for a queue a closed socket
// still holds.
const bindBusyWait = time.Second

// bindRetry binds, waiting out EBUSY for a moment: the kernel releases a
// closed socket's hold on its queue from a deferred work item, so a socket
// opened right after another on the same queue can find it still taken.
// A queue that stays busy (another live socket has it) is an error.
func bindRetry(fd int, sa *unix.SockaddrXDP) error {
	deadline := time.Now().Add(bindBusyWait)
	for {
		err := unix.Bind(fd, sa)
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// mapRings maps the rings the socket has.
func (s *Socket) mapRings(off unix.XDPMmapOffsets, fill, comp int, g socketGeometry) error {
	fr, fe, fm, err := mapRing[uint64](s.fd, unix.XDP_UMEM_PGOFF_FILL_RING, off.Fr, uint32(fill))
	if err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	s.maps = append(s.maps, fm)
	s.r.fill.init(fr, fe)
	cr, ce, cm, err := mapRing[uint64](s.fd, unix.XDP_UMEM_PGOFF_COMPLETION_RING, off.Cr, uint32(comp))
	if err != nil {
		return fmt.Errorf("completion: %w", err)
	}
	s.maps = append(s.maps, cm)
	s.t.comp.init(cr, ce)
	if g.rx > 0 {
		rr, re, rm, err := mapRing[unix.XDPDesc](s.fd, unix.XDP_PGOFF_RX_RING, off.Rx, uint32(g.rx))
		if err != nil {
			return fmt.Errorf("rx: %w", err)
		}
		s.maps = append(s.maps, rm)
		s.r.ring.init(rr, re)
	}
	if g.tx > 0 {
		tr, te, tm, err := mapRing[unix.XDPDesc](s.fd, unix.XDP_PGOFF_TX_RING, off.Tx, uint32(g.tx))
		if err != nil {
			return fmt.Errorf("tx: %w", err)
		}
		s.maps = append(s.maps, tm)
		s.t.ring.init(tr, te)
	}
	return nil
}

// enter counts a call of neither half in; it fails once Close has begun
// (see package callgate).
func (s *Socket) enter() bool { return s.calls.Enter(&s.closing) }
func (s *Socket) exit()       { s.calls.Exit() }

// enterRx and enterTx do the same for a call of one half, on a counter of
// that half's own cache lines.
func (s *Socket) enterRx() bool { return s.r.calls.Enter(&s.closing) }
func (s *Socket) exitRx()       { s.r.calls.Exit() }
func (s *Socket) enterTx() bool { return s.t.calls.Enter(&s.closing) }
func (s *Socket) exitTx()       { s.t.calls.Exit() }

// Closed reports whether Close has begun: the socket's frames are gone
// (a slice taken before reads zeros). One atomic load.
func (s *Socket) Closed() bool { return s.closing.Load() }

// FD is the socket's file descriptor, for registering it in an XSKMAP; -1
// once Close has begun. The number is good until Close: poll it, never
// read, write or close it.
func (s *Socket) FD() int {
	if !s.enter() {
		return -1
	}
	defer s.exit()
	return s.fd
}

// Queue is the queue the socket is bound to.
func (s *Socket) Queue() int { return s.queue }

// ZeroCopy reports whether the kernel granted zero-copy (XDP_OPTIONS), not
// whether it was asked for.
func (s *Socket) ZeroCopy() bool { return s.zeroCopy }

// MultiBuffer reports whether the socket was bound with XDP_USE_SG.
func (s *Socket) MultiBuffer() bool { return s.multiBuffer }

// UMEM returns the whole frame memory the socket is registered with (with
// WithSharedMemory, the fleet's region). It aliases the mapping; nil after
// Close.
func (s *Socket) UMEM() []byte {
	if s.Closed() {
		return nil
	}
	return s.umem.mem
}

// FrameSize is the size of one frame.
func (s *Socket) FrameSize() int { return s.frameSize }

// MaxPacket is the largest received packet one frame holds: the kernel's
// buffer in it (the frame, or its coloured half with WithCacheColours) less
// the kernel's headroom (and the timestamp metadata, with WithRxTimestamps).
func (s *Socket) MaxPacket() int {
	if s.stamps {
		return s.umem.chunk - RxHeadroom - filter.RxMetadataLen
	}
	return s.umem.chunk - RxHeadroom
}

// Writable returns the bytes from d.Addr to the end of its frame, whatever
// d.Len says, or nil outside the UMEM: room to grow a packet in place (a
// reply longer than the request). Nil after Close.
func (s *Socket) Writable(d Desc) []byte {
	if s.Closed() {
		return nil
	}
	return s.umem.rest(d.Addr)
}

// GetFrame returns the d.Len bytes at d.Addr when they lie inside one
// frame of the UMEM, else nil (and nil after Close).
func (s *Socket) GetFrame(d Desc) []byte {
	if s.Closed() {
		return nil
	}
	return s.umem.span(d.Addr, d.Len)
}

// Close wakes a goroutine blocked in Poll, waits until no call is in
// progress, then closes the socket and unmaps its rings (and the UMEM, when
// no other socket shares it). Every method afterwards returns zero or
// ErrClosed. It is idempotent and safe from any goroutine. Frame slices
// taken earlier no longer name frames, but stay safe to touch: the memory
// under them reads zeros (see umem.release).
//
// Close from inside a call on the socket (a SendFunc build function) would
// wait for that call forever: it refuses instead, with an error matching
// packetio.ErrBusy, and changes nothing; close after the call returns.
func (s *Socket) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.InsideCall() {
		return s.opErr("close", callgate.ErrInside)
	}
	if s.closing.Swap(true) {
		return nil
	}
	s.wakePoll()
	callgate.Drain(&s.calls, &s.r.calls, &s.t.calls)
	s.teardown()
	return nil
}

// InsideCall reports whether the calling goroutine runs inside a call on
// the socket that runs the caller's code, a SendFunc build function: a
// Close there would wait for that call forever. Close asks it first and
// refuses; a backend over the socket asks before it changes anything.
// False on a nil Socket.
func (s *Socket) InsideCall() bool {
	return s != nil && s.t.calls.HoldsCaller((*Socket).sendFunc) // where build runs
}

// teardown releases what bring-up got to, in reverse order.
func (s *Socket) teardown() {
	if s.waiter != nil {
		_ = s.waiter.Close()
		s.waiter = nil
	}
	if s.fd >= 0 {
		_ = unix.Close(s.fd)
		s.fd = -1
	}
	for _, m := range s.maps {
		_ = unix.Munmap(m)
	}
	s.maps = nil
	// s.umem stays set: a call that passed its Closed check before this
	// still reads it, and finds the remapped (zero) frames.
	if s.umem != nil {
		s.umem.release()
	}
	if s.efd >= 0 {
		_ = unix.Close(s.efd)
		s.efd = -1
	}
	s.closing.Store(true)
	runtime.KeepAlive(s)
}

// opErr is the socket's error for op: a *packetio.OpError naming the
// interface and queue, whose cause is err (which matches a sentinel, or
// carries an errno packetio.Classify maps to one).
func (s *Socket) opErr(op string, err error) error {
	return packetio.NewOpError(op, "afxdp", s.ifname, s.queue, err)
}
