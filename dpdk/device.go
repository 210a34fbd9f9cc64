//go:build dpdk && linux && amd64 && cgo

package dpdk

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/dpdk/internal/eal"
	"github.com/packetio/packetio/dpdk/internal/flow"
	"github.com/packetio/packetio/dpdk/internal/queue"
	"github.com/packetio/packetio/internal/callgate"
	"github.com/packetio/packetio/internal/devqueues"
)

// Compile-time checks of the contract.
var (
	_ packetio.Device             = (*Device)(nil)
	_ packetio.TxQueue            = (*TxQueue)(nil)
	_ packetio.RxQueue            = (*RxQueue)(nil)
	_ packetio.OffloadTransmitter = (*TxQueue)(nil)
)

// ctlMu serialises DPDK control calls: ethdev's control functions are not
// safe to call concurrently.
var (
	ctlMu     sync.Mutex
	openPorts = map[uint16]bool{}
	regionSeq int
)

// Info describes an open device.
type Info struct {
	// Name is the device as given to Open, Port its DPDK port id.
	Name string
	Port uint16
	// Driver is the PMD's name, e.g. "net_af_packet".
	Driver string
	// IfIndex is the kernel interface behind the port, or 0 when the
	// port owns the device outright.
	IfIndex uint32
	// MAC is the port's address.
	MAC [6]byte
	// FrameSize and MaxPacket are the frame and the largest packet one
	// frame carries.
	FrameSize, MaxPacket int
	// EALArgs are the arguments the process's EAL was started with.
	EALArgs []string
	// Steering describes the installed filter.
	Steering string
	// TxBudget is, on net_af_xdp, the most frames one kick of a transmit
	// queue sends: the kernel's XDP_MAX_TX_SKB_BUDGET of the driver's
	// sockets (the least of them, with several queues). packetio raises it
	// from the kernel's 32 to the socket's transmit ring, so the driver
	// sends a burst with one sendto rather than one per 32 frames, where
	// the kernel has the option (6.18 does). It stays 32 where the kernel
	// has no such option, or where the driver's sockets cannot be told
	// from others this process opened at the same moment, and
	// TxBudgetKept then says why. 0 on other drivers.
	TxBudget     int
	TxBudgetKept string
}

// Device is an open DPDK port.
type Device struct {
	info                                Info
	port                                uint16
	ns                                  netns.NsHandle
	region                              *eal.Region
	pools                               []*eal.Mempool
	devqueues.Lists[*TxQueue, *RxQueue]            // Tx and Rx, with the Device lookups
	pairs                               []*xskPair // net_af_xdp's queue pairs, closed before teardown
	caps                                packetio.Capabilities
	closed                              atomic.Bool
	mu                                  sync.Mutex // Close
	owned                               bool       // the port is ours to close and remove
	started                             bool
	watch                               *watcher // nil for a port without a kernel interface
}

// Open opens the DPDK device name (a PCI address or a vdev spec such as
// "net_af_packet0,iface=veth0") and starts it. The EAL is started at the
// first Open in the process.
func Open(name string, opts ...Option) (*Device, error) {
	d, err := openDevice(name, opts)
	if err != nil {
		return nil, packetio.NewOpError("open", backendName, name, packetio.NoQueue, err)
	}
	return d, nil
}

// backendName is the backend's name in Capabilities and errors.
const backendName = "dpdk"

// openDevice is Open with the cause of a failure unwrapped.
func openDevice(name string, opts []Option) (*Device, error) {
	c := defaults()
	if err := c.apply(opts); err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if name == "" || strings.ContainsRune(name, 0) {
		return nil, fmt.Errorf("%w: device name %q", packetio.ErrInvalid, name)
	}
	driver := eal.DriverOf(name)
	if !eal.IsPCI(name) && driver == "" {
		return nil, fmt.Errorf("%w: %q is neither a PCI address nor a net_ virtual device", packetio.ErrInvalid, name)
	}
	if c.frameSize == 0 {
		c.frameSize = DefaultFrameSize
		switch driver {
		case "net_af_packet":
			c.frameSize = 4096 // its 2048-byte ring frames need 2016 bytes of data room
		case "net_af_xdp":
			// Its packets start 576 bytes into the frame, so a
			// 2048-byte frame holds 1472: the kernel would drop
			// (as missed) every frame a 1500-byte MTU allows past that.
			c.frameSize = 4096
		}
	}
	if driver == "net_af_xdp" && c.frameSize < minXDPFrameSize {
		return nil, fmt.Errorf("%w: WithFrameSize(%d): net_af_xdp's frames are its AF_XDP UMEM's chunks, which the kernel takes from %d bytes", packetio.ErrInvalid, c.frameSize, minXDPFrameSize)
	}

	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := eal.Init(eal.Args{NoHuge: c.noHuge, Memory: c.memory, FilePrefix: c.filePrefix, LogLevel: c.logLevel, Extra: c.ealArgs}); err != nil {
		return nil, fmt.Errorf("starting the EAL: %w", err)
	}
	ns, err := netns.Get()
	if err != nil {
		return nil, fmt.Errorf("reading this thread's network namespace: %w", err)
	}
	d := &Device{ns: ns}
	ctlMu.Lock()
	defer ctlMu.Unlock()
	if err := d.open(name, driver, &c); err != nil {
		if terr := d.teardown(); terr != nil {
			err = errors.Join(err, fmt.Errorf("undoing the open: %w", terr))
		}
		return nil, err
	}
	if err := d.startWatch(); err != nil {
		if terr := d.teardown(); terr != nil {
			err = errors.Join(err, fmt.Errorf("undoing the open: %w", terr))
		}
		return nil, err
	}
	return d, nil
}

// startWatch starts the watcher of a port over a kernel interface, on the
// thread Open runs on, which is in the interface's namespace.
func (d *Device) startWatch() error {
	if d.info.IfIndex == 0 {
		return nil
	}
	w, err := newWatcher(d.info.IfIndex)
	if err != nil {
		return err
	}
	d.watch = w
	mtu, err := w.mtu()
	if err != nil {
		return err
	}
	d.setMaxTxLen(mtu)
	go w.run(WatchInterval, d.lost)
	return nil
}

// setMaxTxLen bounds what Transmit takes by the link's MTU plus the
// Ethernet header, and by what a frame holds.
func (d *Device) setMaxTxLen(mtu int) {
	d.caps.MaxTxLen = d.info.MaxPacket
	if mtu > 0 {
		d.caps.MaxTxLen = min(mtu+ethHeader, d.info.MaxPacket)
	}
	for _, q := range d.Tx {
		q.maxLen = uint32(d.caps.MaxTxLen)
	}
}

// ethHeader is the Ethernet header the MTU does not count.
const ethHeader = 14

// supplyDepth is how many free frames a receive queue keeps in its supply
// ring once the driver is set up (queue.Config.SupplyDepth): two bursts.
// The driver allocates the frame posted longest ago, so a supply of every
// free frame handed it frames long out of cache.
const supplyDepth = 2 * queue.MaxBurst

// lost latches the loss of the interface into every queue.
func (d *Device) lost(cause error) {
	err := errGone(d.info.Name, d.info.IfIndex, cause)
	for _, q := range d.Tx {
		q.q.Fail(err)
	}
	for _, q := range d.Rx {
		q.q.Fail(err)
	}
}

// portSetup is what the steps of open share.
type portSetup struct {
	d                  *Device
	name, driver       string
	c                  *config
	port               uint16
	in                 eal.Info
	xsk                bool // net_af_xdp: tx queue i shares rx queue i's rings
	txDepth, rxDepth   int
	flows              []flow.Flow
	promisc            bool
	kept               eal.Offloads
	txFrames, rxFrames int
	pairs              []*xskPair
	hosts              []xskHost      // net_af_xdp: pair i's mempool, holding both queues' frames
	first              int            // next free frame of the region
	numaBound          bool           // in.Socket is a node whose hugepages hold the region
	xskBefore          map[uint64]int // net_af_xdp: this process's XDP sockets before setupRx
	xskListErr         error          // listing them failed
}

// open brings the port up in named steps; the caller tears down whatever
// the steps got to when one fails.
func (d *Device) open(name, driver string, c *config) error {
	ps := &portSetup{d: d, name: name, driver: driver, c: c, promisc: c.promiscuous}
	for _, step := range []func() error{
		ps.claimPort,
		ps.checkPort,
		ps.compileSteering, // compile first, isolate before configure, install after start
		ps.configure,
		ps.reserveRegion,
		ps.setupTx,
		ps.snapshotSockets,
		ps.setupRx,
		ps.start,
		ps.raiseTxBudget,
	} {
		if err := step(); err != nil {
			return err
		}
	}
	d.caps = ps.capabilities()
	mtu, err := eal.MTU(ps.port)
	if err != nil {
		mtu = 0 // no MTU: bounded by the frame alone
	}
	d.setMaxTxLen(mtu)
	return nil
}

// claimPort finds or probes the port and marks it open in this process.
func (ps *portSetup) claimPort() error {
	devName := eal.DeviceName(ps.name)
	port, found := eal.FindPort(devName)
	if found && openPorts[port] {
		return fmt.Errorf("%w: already open in this process", packetio.ErrBusy)
	}
	if !found {
		if err := checkIface(ps.name, ps.driver); err != nil {
			return err
		}
		p, err := eal.Probe(ps.name, devName)
		if err != nil {
			return probeErr(err)
		}
		port = p
	}
	ps.port = port
	ps.d.port, ps.d.owned = port, true
	openPorts[port] = true
	return nil
}

// probeErr gives a failed probe its sentinel. DPDK 22.11's drivers return
// -1 (EPERM) for any failure of theirs, and the vdev bus EFAULT for a
// driver it does not know, so the errno is read with that in mind.
func probeErr(err error) error {
	var ee *eal.Error
	if !errors.As(err, &ee) {
		return fmt.Errorf("opening: %w", err)
	}
	switch ee.Errno {
	case unix.ENODEV, unix.ENOENT:
		return fmt.Errorf("opening: %w: %w", packetio.ErrNoDevice, err)
	case unix.EFAULT:
		return fmt.Errorf("opening: no DPDK driver of that name is loaded (is its PMD installed?): %w: %w", packetio.ErrNoDevice, err)
	case unix.EPERM:
		if os.Geteuid() != 0 {
			return fmt.Errorf("opening: %w: %w", packetio.ErrPermission, err)
		}
		return fmt.Errorf("opening: the driver refused the device or its arguments (its log says why): %w: %w", packetio.ErrSetup, err)
	}
	return fmt.Errorf("opening: %w", err)
}

// checkPort reads what the port offers and refuses what it cannot do.
func (ps *portSetup) checkPort() error {
	c, d := ps.c, ps.d
	in, err := eal.PortInfo(ps.port)
	if err != nil {
		return err
	}
	ps.in = in
	if err := ps.chooseSocket(); err != nil {
		return err
	}
	d.info = Info{Name: ps.name, Port: ps.port, Driver: in.Driver, IfIndex: in.IfIndex, MAC: in.MAC, FrameSize: c.frameSize, EALArgs: eal.Started()}
	if c.txQueues > in.MaxTxQueues || c.rxQueues > in.MaxRxQueues {
		return fmt.Errorf("%d tx and %d rx queues asked, the port has %d and %d: %w", c.txQueues, c.rxQueues, in.MaxTxQueues, in.MaxRxQueues, packetio.ErrUnsupported)
	}
	ps.xsk = in.Driver == "net_af_xdp"
	if ps.xsk && c.rxQueues < c.txQueues {
		return fmt.Errorf("net_af_xdp transmits through the XDP socket of the receive queue with the same index: %d transmit queues need as many receive queues, %d asked: %w", c.txQueues, c.rxQueues, packetio.ErrUnsupported)
	}
	if ps.xsk && c.frames != 0 && c.frames < xskRxFrames {
		// The driver posts half of xskRxFrames to the fill ring at setup
		// and allocates as many as it received before it hands a burst
		// on: with fewer, every receive finds the pool short and returns
		// nothing, without an error. (Every net_af_xdp device has a
		// receive queue: the check above.)
		return fmt.Errorf("WithFrames(%d): net_af_xdp takes %d frames of each receive queue at setup and needs as many again to receive: want at least %d: %w", c.frames, xskRxFrames/2, xskRxFrames, packetio.ErrInvalid)
	}
	ps.txDepth, ps.rxDepth = c.txDepth, c.rxDepth
	if in.TxDescMax > 0 {
		ps.txDepth = min(ps.txDepth, in.TxDescMax)
	}
	if in.RxDescMax > 0 {
		ps.rxDepth = min(ps.rxDepth, in.RxDescMax)
	}
	headroom := queue.DataStart
	if ps.xsk {
		headroom += 256 // XDP_PACKET_HEADROOM: af_xdp's packets start further in
	}
	d.info.MaxPacket = c.frameSize - headroom
	if d.info.MaxPacket < 64 {
		return fmt.Errorf("frame size %d leaves %d bytes for a packet: %w", c.frameSize, d.info.MaxPacket, packetio.ErrUnsupported)
	}
	return nil
}

// compileSteering builds the flow rules and isolates the port, so that
// only what they name reaches it.
func (ps *portSetup) compileSteering() error {
	c, in := ps.c, ps.in
	ps.d.info.Steering = "every packet the port delivers"
	f := c.steering
	if f == nil {
		return nil
	}
	ps.d.info.Steering = f.String()
	if f.Promiscuous {
		ps.promisc = true
	}
	if len(f.Match) == 0 {
		return nil
	}
	queues := make([]uint16, c.rxQueues)
	for i := range queues {
		queues[i] = uint16(i)
	}
	var mac *[6]byte
	if in.IfIndex != 0 {
		mac = &in.MAC
	}
	var err error
	if ps.flows, err = flow.BuildFilter(*f, queues, mac); err != nil {
		return err
	}
	if in.IfIndex != 0 {
		return flow.Isolate(eal.FlowEngine{Port: ps.port})
	}
	return nil
}

// configure sets the queue counts and offloads and checks what the driver
// kept.
func (ps *portSetup) configure() error {
	c := ps.c
	want := eal.Offloads(0)
	if c.checksums {
		want |= eal.RxChecksum | eal.TxChecksum
	}
	if c.tso {
		want |= eal.TxTSO
	}
	kept, err := eal.Configure(ps.port, c.rxQueues, c.txQueues, want)
	if err != nil {
		return err
	}
	ps.kept = kept
	if c.tso && kept&eal.TxTSO == 0 {
		return fmt.Errorf("driver %s did not keep TCP segmentation offload: %w", ps.in.Driver, packetio.ErrUnsupported)
	}
	return nil
}

// reserveRegion reserves the frame region: every transmit queue's frames,
// then every receive queue's, each slice a whole number of pages.
func (ps *portSetup) reserveRegion() error {
	c := ps.c
	ps.txFrames = c.framesFor(ps.txDepth, 0)
	rxAtLeast := 0
	if ps.xsk {
		rxAtLeast = xskRxFrames
	}
	ps.rxFrames = c.framesFor(ps.rxDepth, rxAtLeast)
	total := c.txQueues*ps.txFrames + c.rxQueues*ps.rxFrames
	regionSeq++
	var err error
	if ps.d.region, err = eal.ReserveRegion(fmt.Sprintf("pio_region_%d_%d", ps.port, regionSeq), total*c.frameSize, max(c.frameSize, 4096), ps.in.Socket); err != nil {
		return err
	}
	if ps.xsk {
		ps.pairs = make([]*xskPair, c.rxQueues)
		for i := range ps.pairs {
			ps.pairs[i] = &xskPair{}
		}
		ps.d.pairs = ps.pairs
	}
	return nil
}

// xskHost is the mempool of a net_af_xdp pair: receive queue i's frames
// from rxFirst, then transmit queue i's, so the socket's UMEM (the
// mempool) holds both and the driver sends the transmit queue's frames
// without a copy (see afxdp.go).
type xskHost struct {
	mp      *eal.Mempool
	rxFirst int
}

// setupTx sets up the transmit queues, each over its own mempool, or on
// net_af_xdp over its pair's.
func (ps *portSetup) setupTx() error {
	c, d := ps.c, ps.d
	for i := 0; i < c.txQueues; i++ {
		mp, first, returned, err := ps.txPool(i)
		if err != nil {
			return err
		}
		if err := eal.TxQueueSetup(ps.port, i, ps.txDepth, ps.in.Socket); err != nil {
			return err
		}
		pmd := &eal.Queue{Port: ps.port, Index: uint16(i)}
		var driver queue.PMD = pmd
		if ps.xsk {
			driver = xskTx{q: pmd, p: ps.pairs[i], returned: returned}
		}
		q, err := queue.NewTx(queue.Config{
			Region: d.region.Bytes, RegionVA: d.region.VA, PoolVA: mp.VA, FrameSize: c.frameSize,
			FirstFrame: first, Frames: ps.txFrames, Depth: ps.txDepth, Returned: returned,
			TxChecksums: ps.kept&eal.TxChecksum != 0, TSO: ps.kept&eal.TxTSO != 0, PMD: driver,
			Name: fmt.Sprintf("%s tx %d", ps.name, i),
		})
		if err != nil {
			return err
		}
		d.Tx = append(d.Tx, &TxQueue{d: d, index: i, q: q, mp: mp, pmd: pmd})
		ps.first = first + ps.txFrames
	}
	return nil
}

// txPool makes transmit queue i's mempool and returns it, the queue's
// first frame and the ring its frames come back through, which takes
// every frame in flight: up to the ring depth, its own or (net_af_xdp) the
// receive queue's, sent in place.
func (ps *portSetup) txPool(i int) (mp *eal.Mempool, first int, returned *queue.Ring, err error) {
	c, d := ps.c, ps.d
	if !ps.xsk {
		mp, err = d.mempool(fmt.Sprintf("piot%d_%d_%d", ps.port, regionSeq, i), ps.first, ps.txFrames, ps.txDepth, c.frameSize, ps.in.Socket)
		if err != nil {
			return nil, 0, nil, err
		}
		return mp, ps.first, mp.Returned, nil
	}
	// net_af_xdp: receive queue i's frames, then this queue's, in the
	// pair's mempool (see xskHost). The driver frees this queue's frames
	// there, and the receive queue hands them on to a ring of this queue's.
	mp, err = d.mempool(fmt.Sprintf("piox%d_%d_%d", ps.port, regionSeq, i), ps.first, ps.rxFrames+ps.txFrames, ps.txDepth, c.frameSize, ps.in.Socket)
	if err != nil {
		return nil, 0, nil, err
	}
	ps.hosts = append(ps.hosts, xskHost{mp: mp, rxFirst: ps.first})
	return mp, ps.first + ps.rxFrames, queue.NewRing(queue.RingSize(max(ps.txFrames, ps.txDepth))), nil
}

// setupRx sets up the receive queues, each over its own mempool or its
// pair's, with its supply full before the driver sees it.
func (ps *portSetup) setupRx() error {
	c, d := ps.c, ps.d
	for i := 0; i < c.rxQueues; i++ {
		mp, first, err := ps.rxPool(i)
		if err != nil {
			return err
		}
		pmd := &eal.Queue{Port: ps.port, Index: uint16(i)}
		var driver queue.PMD = pmd
		var pair *xskPair
		if ps.xsk {
			pair = ps.pairs[i]
			driver = xskRx{q: pmd, p: pair}
		}
		q, err := queue.NewRx(queue.Config{
			Region: d.region.Bytes, RegionVA: d.region.VA, PoolVA: mp.VA, FrameSize: c.frameSize,
			FirstFrame: first, Frames: ps.rxFrames, Depth: ps.rxDepth, Supply: mp.Supply, Returned: mp.Returned, SupplyDepth: supplyDepth,
			RxChecksums: ps.kept&eal.RxChecksum != 0, PMD: driver,
			Name: fmt.Sprintf("%s rx %d", ps.name, i),
		})
		if err != nil {
			return err
		}
		// The driver may take a whole ring's worth (af_xdp: its fill
		// ring) at setup, so the supply is full before it.
		q.Prime(ps.rxFrames)
		if err := eal.RxQueueSetup(ps.port, i, ps.rxDepth, ps.in.Socket, mp); err != nil {
			return err
		}
		q.Trim()
		if pair != nil {
			pair.rx = q
			if i < len(d.Tx) {
				if err := ps.pairUp(d.Tx[i].q, q); err != nil {
					return err
				}
			}
		}
		d.Rx = append(d.Rx, &RxQueue{d: d, index: i, q: q, mp: mp, pmd: pmd, pair: pair})
	}
	return nil
}

// rxPool returns receive queue i's mempool and first frame: its pair's
// (net_af_xdp), which txPool made, or one of its own.
func (ps *portSetup) rxPool(i int) (mp *eal.Mempool, first int, err error) {
	if i < len(ps.hosts) {
		return ps.hosts[i].mp, ps.hosts[i].rxFirst, nil
	}
	mp, err = ps.d.mempool(fmt.Sprintf("pior%d_%d_%d", ps.port, regionSeq, i), ps.first, ps.rxFrames, ps.rxFrames, ps.c.frameSize, ps.in.Socket)
	if err != nil {
		return nil, 0, err
	}
	first = ps.first
	ps.first += ps.rxFrames
	return mp, first, nil
}

// pairUp lets net_af_xdp's transmit queue send the receive queue's frames
// (forwarded) and its own, all of the pair's mempool, without a copy.
func (ps *portSetup) pairUp(tx *queue.Tx, rx *queue.Rx) error {
	if err := tx.SendInPlace(rx.Lend()); err != nil {
		return err
	}
	return rx.HostFrames(tx.Span())
}

// start starts the port and installs the flow rules.
func (ps *portSetup) start() error {
	if ps.promisc {
		if err := eal.Promiscuous(ps.port, true); err != nil {
			return fmt.Errorf("promiscuous mode: %w", err)
		}
	}
	if err := eal.Start(ps.port); err != nil {
		return err
	}
	ps.d.started = true
	if len(ps.flows) > 0 {
		return flow.Install(eal.FlowEngine{Port: ps.port}, ps.flows)
	}
	return nil
}

// capabilities is what the started port does.
func (ps *portSetup) capabilities() packetio.Capabilities {
	c, in := ps.c, ps.in
	maxQ := min(MaxQueues, in.MaxRxQueues, in.MaxTxQueues)
	return packetio.Capabilities{
		Backend:           backendName,
		ZeroCopy:          !strings.HasPrefix(in.Driver, "net_"),
		KernelCoexistence: in.IfIndex != 0,
		RSS:               c.rxQueues > 1,
		TxChecksumOffload: ps.kept&eal.TxChecksum != 0,
		RxChecksumFlags:   ps.kept&eal.RxChecksum != 0,
		SharedRegion:      true,
		HandsBackFrames:   true,
		MaxFrameSize:      ps.d.info.MaxPacket,
		MaxQueues:         max(maxQ, c.txQueues, c.rxQueues),
		NUMABound:         ps.numaBound,
		NUMANode:          max(in.Socket, 0),
	}
}

// mempool makes the mempool of n frames from frame first, with rings of at
// least ringMin entries (and at least n).
func (d *Device) mempool(name string, first, n, ringMin, frameSize, socket int) (*eal.Mempool, error) {
	mp, err := eal.NewMempool(name, d.region, first*frameSize, n, frameSize, queue.RingSize(max(n, ringMin)), socket)
	if err != nil {
		return nil, err
	}
	d.pools = append(d.pools, mp)
	return mp, nil
}

// teardown releases whatever open got to, in reverse: port, mempools,
// region. Called with ctlMu held.
func (d *Device) teardown() error {
	var errs []error
	if d.started {
		if err := eal.Stop(d.port); err != nil {
			errs = append(errs, err)
		}
		d.started = false
	}
	if d.owned {
		if err := eal.CloseRemove(d.port); err != nil {
			errs = append(errs, err)
		}
		delete(openPorts, d.port)
		d.owned = false
	}
	for _, q := range d.Tx {
		q.drops.Store(q.mp.Drops())
	}
	for _, q := range d.Rx {
		q.drops.Store(q.mp.Drops())
		q.empty.Store(q.mp.Empty())
	}
	for _, mp := range d.pools {
		mp.Free()
	}
	d.pools = nil
	if d.region != nil {
		d.region.Free()
		d.region = nil
	}
	d.ns.Close()
	return errors.Join(errs...)
}

// Close stops the port, closes it and removes its device, and releases the
// frame memory. It waits for a goroutine in Poll to leave the driver (and
// wakes it). A second call returns nil. From inside a call on the device (a
// SendFunc build function), which it would wait for forever, it refuses
// with an error matching packetio.ErrBusy and changes nothing.
func (d *Device) Close() error {
	if d == nil {
		return errNil("close")
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.closed.Load() {
		for _, q := range d.Tx {
			if q.calls.HoldsCaller((*TxQueue).SendFunc) {
				return opErr(d, "close", packetio.NoQueue, callgate.ErrInside)
			}
		}
	}
	if d.closed.Swap(true) {
		return nil
	}
	if d.watch != nil {
		d.watch.close()
	}
	// Every other call inside the driver or the mempool is counted: wait
	// until none is (package callgate).
	for _, q := range d.Rx {
		callgate.Drain(&q.calls)
	}
	for _, q := range d.Tx {
		callgate.Drain(&q.calls)
	}
	// A poller holds its queue's lock while inside the driver: taking
	// every lock waits it out, and it sees the device closed next time.
	for _, q := range d.Rx {
		q.mu.Lock()
	}
	defer func() {
		for _, q := range d.Rx {
			q.mu.Unlock()
		}
	}()
	for _, p := range d.pairs {
		p.close() // waits out a transmit burst, and bars the next
	}
	err := d.inNS(func() error {
		ctlMu.Lock()
		defer ctlMu.Unlock()
		return d.teardown()
	})
	if err != nil {
		return packetio.NewOpError("close", backendName, d.info.Name, packetio.NoQueue, err)
	}
	return nil
}

// inNS runs fn on a locked thread in the network namespace Open ran in, so
// drivers that address a kernel interface by name find it.
func (d *Device) inNS(fn func() error) error {
	runtime.LockOSThread()
	cur, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("reading this thread's network namespace: %w", err)
	}
	defer cur.Close()
	if cur.Equal(d.ns) {
		defer runtime.UnlockOSThread()
		return fn()
	}
	if err := netns.Set(d.ns); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("entering the device's network namespace: %w", err)
	}
	defer func() {
		// A thread that cannot go back stays locked and dies with
		// its goroutine rather than serve others in the wrong namespace.
		if netns.Set(cur) == nil {
			runtime.UnlockOSThread()
		}
	}()
	return fn()
}

// Capabilities reports what the port kept; zero for a nil Device.
func (d *Device) Capabilities() packetio.Capabilities {
	if d == nil {
		return packetio.Capabilities{}
	}
	return d.caps
}

// Info describes the open device; zero for a nil Device.
func (d *Device) Info() Info {
	if d == nil {
		return Info{}
	}
	return d.info
}

// queues is the device's queue lists; nil for a nil Device, whose lookups
// then report no queues.
func (d *Device) queues() *devqueues.Lists[*TxQueue, *RxQueue] {
	if d == nil {
		return nil
	}
	return &d.Lists
}

// NumTxQueues is the number of transmit queues (0 on a nil Device).
func (d *Device) NumTxQueues() int { return d.queues().NumTxQueues() }

// NumRxQueues is the number of receive queues (0 on a nil Device).
func (d *Device) NumRxQueues() int { return d.queues().NumRxQueues() }

// TxQueue returns transmit queue i, or nil when i is out of range or the
// Device is nil.
func (d *Device) TxQueue(i int) packetio.TxQueue { return d.queues().TxQueue(i) }

// RxQueue returns receive queue i, or nil when i is out of range or the
// Device is nil.
func (d *Device) RxQueue(i int) packetio.RxQueue { return d.queues().RxQueue(i) }

// errNil is what a method of a nil Device (a failed Open's) returns.
func errNil(op string) error {
	return packetio.NewOpError(op, backendName, "", packetio.NoQueue, fmt.Errorf("a nil *dpdk.Device (from a failed Open): %w", packetio.ErrClosed))
}

// PortCounters are a port's rte_eth_stats.
type PortCounters struct {
	InPackets, OutPackets uint64
	InBytes, OutBytes     uint64
	// Missed counts packets the port dropped for want of room; InErrors
	// and OutErrors count errors; NoBuffer counts receive allocations
	// the supply could not satisfy.
	Missed, InErrors, OutErrors, NoBuffer uint64
}

// PortStats returns the port's rte_eth_stats, the counters to believe for
// what crossed the wire.
func (d *Device) PortStats() (PortCounters, error) {
	if d == nil {
		return PortCounters{}, errNil("port stats")
	}
	ctlMu.Lock()
	defer ctlMu.Unlock()
	if d.closed.Load() {
		return PortCounters{}, packetio.NewOpError("port stats", backendName, d.info.Name, packetio.NoQueue, packetio.ErrClosed)
	}
	s, err := eal.PortStats(d.port)
	if err != nil {
		return PortCounters{}, packetio.NewOpError("port stats", backendName, d.info.Name, packetio.NoQueue, err)
	}
	return PortCounters(s), nil
}

// XStats returns the port's extended counters by name. It allocates; it is
// for monitoring.
func (d *Device) XStats() (map[string]uint64, error) {
	if d == nil {
		return nil, errNil("xstats")
	}
	ctlMu.Lock()
	defer ctlMu.Unlock()
	if d.closed.Load() {
		return nil, packetio.NewOpError("xstats", backendName, d.info.Name, packetio.NoQueue, packetio.ErrClosed)
	}
	x, err := eal.XStats(d.port)
	if err != nil {
		return nil, packetio.NewOpError("xstats", backendName, d.info.Name, packetio.NoQueue, err)
	}
	return x, nil
}
