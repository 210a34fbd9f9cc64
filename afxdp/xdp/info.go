package xdp

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/filter"
)

// Info is how an open fleet is really running: every automatic decision,
// read back from the kernel where it can be.
type Info struct {
	Interface string
	Ifindex   int
	// Driver is the interface's driver, "" where it reports none.
	Driver string
	// Queues is the number of bound queues, QueuesTotal the number the
	// interface has: traffic on the others goes to the kernel.
	Queues, QueuesTotal int
	// Hook says whose program steers frames into the sockets: packetio's
	// own (HookOwn), the caller's (HookUser, WithProgram), or packetio's
	// in libxdp's dispatcher beside others (HookShared).
	Hook Hook
	// Program names that program and how it sits on the hook, e.g.
	// `packetio's "xsk_filter" (id 42), through a BPF link`.
	Program string
	// Mode is the attach mode read back from the kernel: "native",
	// "generic", "hardware", "multi" or "none".
	Mode string
	// ZeroCopy is true when the kernel granted zero-copy to every socket
	// (XDP_OPTIONS), not merely when it was asked.
	ZeroCopy bool
	// BindFlags are the flags the sockets were bound with.
	BindFlags uint16
	// NeedWakeup is whether the sockets use XDP_USE_NEED_WAKEUP.
	NeedWakeup bool
	// BusyPoll is the busy-polling of the sockets: SO_BUSY_POLL and
	// SO_PREFER_BUSY_POLL as the kernel reports them, and the
	// SO_BUSY_POLL_BUDGET that was set (the kernel does not report it);
	// "off" when SO_BUSY_POLL is 0.
	BusyPoll string
	// TxBudget is the most frames one kick of a transmit queue sends in
	// copy mode: the kernel's XDP_MAX_TX_SKB_BUDGET of the sockets (the
	// least of them), which Open raises from the kernel's 32 to the
	// transmit ring so a batch costs one sendto. It stays 32 on kernels
	// without the option (before 6.16), and Decisions then says why. 0
	// where no socket transmits in copy mode (zero-copy, or receive only).
	TxBudget int
	// FrameSize and NumFrames describe each socket's frames, TxFrames how
	// many of them transmit.
	FrameSize, NumFrames, TxFrames int
	// Colours is how many offsets the kernel's receive buffers start at
	// inside their frames with WithCacheColours (32), 0 without.
	Colours int
	// NUMABound is true when the frame memory is bound (MPOL_BIND) to
	// NUMANode, the node WithNUMANode named or the NIC's; false when no
	// policy was set and the kernel placed it.
	NUMABound bool
	NUMANode  int // meaningful when NUMABound
	// SharedUMEM is true when every socket is registered with one region
	// (WithSharedMemory).
	SharedUMEM bool
	// MultiBuffer is whether packets may span frames.
	MultiBuffer bool
	// Filter summarises the matches and exceptions.
	Filter string
	// Timestamps says which clock stamps received frames, or "off".
	Timestamps string
	// VLAN says how VLAN matches see tags, where the filter has one.
	VLAN string
	// Features is what the kernel reports of the device.
	Features string
	// Tuning lists the host settings changed (and restored on Close).
	Tuning []string
	// Affinity says where the queues' workers run.
	Affinity string
	// Decisions lists the other choices Open made for you, with reasons.
	Decisions []string
	// Tried lists the modes tried before the one that worked, and why
	// each failed.
	Tried []string
}

// String is one line: "veth0: 2/2 queues, copy, native XDP, 4096x2048B
// frames, filter udp/9, ...".
func (i Info) String() string {
	zc := "copy"
	if i.ZeroCopy {
		zc = "zero-copy"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d/%d queues, %s, %s XDP, %dx%dB frames", i.Interface, i.Queues, i.QueuesTotal, zc, i.Mode, i.NumFrames, i.FrameSize)
	if i.Colours > 0 {
		fmt.Fprintf(&b, " in %d cache colours", i.Colours)
	}
	if i.Driver != "" {
		fmt.Fprintf(&b, ", driver %s", i.Driver)
	}
	if i.NUMABound {
		fmt.Fprintf(&b, ", frames on NUMA node %d", i.NUMANode)
	}
	if i.SharedUMEM {
		b.WriteString(", one shared UMEM")
	}
	if i.MultiBuffer {
		b.WriteString(", multi-buffer")
	}
	if !i.NeedWakeup {
		b.WriteString(", no need-wakeup")
	}
	if i.BusyPoll != "" && i.BusyPoll != "off" {
		fmt.Fprintf(&b, ", busy-poll %s", i.BusyPoll)
	}
	fmt.Fprintf(&b, ", filter %s", i.Filter)
	if i.Hook != HookOwn {
		fmt.Fprintf(&b, ", program %s", i.Program)
	}
	if i.Timestamps != "" && i.Timestamps != "off" {
		fmt.Fprintf(&b, ", rx stamps: %s", i.Timestamps)
	}
	if i.VLAN != "" {
		fmt.Fprintf(&b, ", vlan: %s", i.VLAN)
	}
	if len(i.Tuning) == 0 {
		b.WriteString(", untuned")
	} else {
		fmt.Fprintf(&b, ", tuned: %s", strings.Join(i.Tuning, "; "))
	}
	if i.Affinity != "" {
		fmt.Fprintf(&b, ", affinity: %s", i.Affinity)
	}
	for _, d := range i.Decisions {
		fmt.Fprintf(&b, ", %s", d)
	}
	if len(i.Tried) > 0 {
		fmt.Fprintf(&b, " (tried: %s)", strings.Join(i.Tried, "; "))
	}
	return b.String()
}

// fillInfo records what the successful mode group gave.
func (f *Fleet) fillInfo(c *config, pc filter.Program, grp bindGroup) {
	in := &f.info
	in.Mode = attachMode(f.ifindex)
	in.Hook, in.Program = f.describeProgram()
	in.ZeroCopy = len(f.sockets) > 0
	for _, s := range f.sockets {
		in.ZeroCopy = in.ZeroCopy && s.zeroCopy
	}
	if len(f.sockets) > 0 {
		in.BindFlags = f.sockets[0].bindFlags
		in.NeedWakeup = f.sockets[0].needWakeup
		in.BusyPoll = busyPollSetting(f.sockets[0].fd, c.busyBudget)
	}
	var kept error
	if in.TxBudget, kept = txBudget(f.sockets); kept != nil {
		in.Decisions = append(in.Decisions, fmt.Sprintf("transmit budget kept at %d frames a kick (setsockopt XDP_MAX_TX_SKB_BUDGET: %v)", in.TxBudget, kept))
	}
	in.SharedUMEM = f.umem != nil
	in.MultiBuffer = c.multiBuf
	if len(f.sockets) > 0 {
		in.Colours = f.sockets[0].umem.colours()
	}
	switch pc.Stamp {
	case filter.StampNone:
		in.Timestamps = "off"
	case filter.StampMonotonic:
		in.Timestamps = "CLOCK_MONOTONIC (bpf_ktime_get_ns) at the XDP hook"
	case filter.StampDevice:
		in.Timestamps = "the driver's hardware clock (bpf_xdp_metadata_rx_timestamp) where it gives one, else CLOCK_MONOTONIC at the XDP hook; counted per clock in Stats"
	}
	if pc.StampInFrame {
		in.Timestamps += "; written into the frame ahead of the packet and stripped on receive"
	}
	if filter.NeedsVLAN(pc.Matches, pc.Except) {
		if pc.VLANKfunc {
			in.VLAN = "the tag in the frame, or the one the driver stripped (bpf_xdp_metadata_rx_vlan_tag)"
		} else {
			in.VLAN = "the tag in the frame only (a tag the driver strips before XDP is not seen: turn rx-vlan-offload off)"
		}
	}
	if grp.native && c.mode == ModeAuto && len(f.info.Tried) == 0 && !in.ZeroCopy {
		in.Decisions = append(in.Decisions, "zero-copy not granted by the driver: native copy mode")
	}
	if d := longPackets(f.sockets, c.multiBuf); d != "" {
		in.Decisions = append(in.Decisions, d)
	}
}

// longPackets says, when the link carries packets longer than a receive
// frame holds and packets may not span frames, what happens to them: the
// kernel drops them (counted in the socket's Kernel.RxDropped, the afxdp
// queue's Dropped), and what would take them. "" when every packet fits.
func longPackets(socks []*Socket, multiBuf bool) string {
	for _, s := range socks {
		if multiBuf || s.r.ring.ents == nil || s.MaxTxLen() <= s.MaxPacket() {
			continue
		}
		room := fmt.Sprintf("%d-byte frames less the kernel's %d-byte headroom", s.umem.chunk, RxHeadroom)
		if s.stamps {
			room += fmt.Sprintf(" and the %d-byte stamp", filter.RxMetadataLen)
		}
		return fmt.Sprintf("the link carries packets of up to %d bytes (its MTU, the Ethernet header and a VLAN tag) and a frame holds %d (%s): the kernel drops longer ones, counted in Stats (rx_dropped); WithMultiBuffer, or WithFrameSize(%d), takes them",
			s.MaxTxLen(), s.MaxPacket(), room, ceilPow2(s.MaxTxLen()+s.frameSize-s.MaxPacket()))
	}
	return ""
}

// txBudget is the least transmit budget of the sockets that transmit in
// copy mode (0 when none does), and why one of them kept the kernel's.
func txBudget(socks []*Socket) (budget int, kept error) {
	for _, s := range socks {
		if s.t.ring.ents == nil || s.zeroCopy {
			continue
		}
		if budget == 0 || s.t.budget < budget {
			budget = s.t.budget
		}
		if kept == nil {
			kept = s.t.budgetKept
		}
	}
	return budget, kept
}

// busyPollSetting reads back a socket's busy-polling options: "off", or
// "50us budget 64, preferred". budget is the SO_BUSY_POLL_BUDGET that was
// set, which getsockopt does not report.
func busyPollSetting(fd, budget int) string {
	usecs, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_BUSY_POLL)
	if err != nil || usecs == 0 {
		return "off"
	}
	s := fmt.Sprintf("%dus budget %d", usecs, budget)
	if pref, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PREFER_BUSY_POLL); err == nil && pref != 0 {
		s += ", preferred"
	}
	return s
}

// Info reports how the fleet is running. On a closed or nil Fleet it
// returns an error matching packetio.ErrClosed.
func (f *Fleet) Info() (Info, error) {
	if f == nil {
		return Info{}, packetio.NewOpError("info", "afxdp", "", packetio.NoQueue, ErrClosed)
	}
	f.closeMu.Lock()
	defer f.closeMu.Unlock()
	if f.closed {
		return Info{}, packetio.NewOpError("info", "afxdp", f.ifname, packetio.NoQueue, ErrClosed)
	}
	in := f.info
	in.Tuning = f.tuning.changes()
	in.Affinity = f.tuning.affinityDesc()
	in.Decisions = append(append([]string(nil), in.Decisions...), f.tuning.notes...)
	return in, nil
}

// FleetStats sums the sockets' counters, with each socket's own.
type FleetStats struct {
	Queues                                      int
	RxPackets, TxPackets, TxCompleted           uint64
	RxDropped, RxRingFull, RxFillRingEmpty      uint64
	RxInvalidDescs, TxInvalidDescs, TxRingEmpty uint64
	Polls, Kicks, KicksSuppressed               uint64
	PerQueue                                    []Stats
}

// PacketsPerPoll is received packets per poll(2) over the fleet.
func (s FleetStats) PacketsPerPoll() float64 {
	if s.Polls == 0 {
		return 0
	}
	return float64(s.RxPackets) / float64(s.Polls)
}

// String is one line for a log.
func (s FleetStats) String() string {
	return fmt.Sprintf("rx=%d tx=%d packets, %.1f pkt/poll, kicks %d (%d suppressed), rx_dropped=%d rx_ring_full=%d fill_empty=%d invalid=%d/%d",
		s.RxPackets, s.TxPackets, s.PacketsPerPoll(), s.Kicks, s.KicksSuppressed, s.RxDropped, s.RxRingFull, s.RxFillRingEmpty, s.RxInvalidDescs, s.TxInvalidDescs)
}

// Stats sums every socket's Stats. On a closed or nil Fleet it returns an
// error matching packetio.ErrClosed.
func (f *Fleet) Stats() (FleetStats, error) {
	if f == nil {
		return FleetStats{}, packetio.NewOpError("stats", "afxdp", "", packetio.NoQueue, ErrClosed)
	}
	f.closeMu.Lock()
	defer f.closeMu.Unlock()
	if f.closed {
		return FleetStats{}, packetio.NewOpError("stats", "afxdp", f.ifname, packetio.NoQueue, ErrClosed)
	}
	fs := FleetStats{Queues: len(f.sockets)}
	for _, s := range f.sockets {
		st, err := s.Stats()
		if err != nil {
			return fs, err
		}
		fs.PerQueue = append(fs.PerQueue, st)
		fs.RxPackets += st.Received
		fs.TxPackets += st.Transmitted
		fs.TxCompleted += st.Completed
		fs.Polls += st.Polls
		fs.Kicks += st.Kicks
		fs.KicksSuppressed += st.KicksSuppressed
		k := st.Kernel
		fs.RxDropped += k.RxDropped
		fs.RxRingFull += k.RxRingFull
		fs.RxFillRingEmpty += k.RxFillRingEmpty
		fs.RxInvalidDescs += k.RxInvalidDescs
		fs.TxInvalidDescs += k.TxInvalidDescs
		fs.TxRingEmpty += k.TxRingEmpty
	}
	return fs, nil
}
