// Package xdp owns the AF_XDP mechanism: UMEM and rings, sockets, and a
// Fleet that binds every queue of an interface under one XDP program,
// attached through a BPF link with its socket map. It is packetio's AF_XDP
// datapath and usable on its own. The program's matches and their builder
// are package filter's (filter.MatchUDPPort, filter.NewMatch,
// filter.MatchPacket to test a filter without a NIC); WithFilter hands them
// here. Pure Go, on github.com/cilium/ebpf and golang.org/x/sys/unix; no
// cgo.
//
// # The model
//
// An AF_XDP socket (here a Socket; an "XSK" in the kernel's words) is bound
// to one receive queue of one interface. It shares a block of memory with
// the kernel, the UMEM, cut into frames of a power-of-two size, and four
// rings of descriptors with it:
//
//	fill        we give the kernel empty frames to receive into
//	rx          the kernel gives us frames holding received packets
//	tx          we give the kernel frames holding packets to send
//	completion  the kernel gives us back frames it has sent
//
// Each ring has one producer and one consumer and free-running 32-bit
// indices in shared memory; ring_atomic.go says, at every index access,
// which kernel side it pairs with. A frame has one owner at a time: the
// socket's pool, the caller, or the kernel. The cycles are
//
//	receive:  Fill -> Poll -> Receive -> read the frame -> Recycle
//	transmit: Alloc -> build the frame -> Transmit -> Complete
//	          (SendFunc does the whole of it in one call)
//	forward:  Receive -> rewrite in place -> Transmit -> CompleteInto -> Recycle
//
// A received packet starts RxHeadroom (256) bytes into its frame, so a frame
// carries FrameSize-256 bytes of packet (MaxPacket). With WithCacheColours
// the kernel is given a 2048-byte half of each 4096-byte frame that starts
// 64 bytes times the frame's colour in, and the packet 256 bytes into that
// (MaxPacket 1792): read a packet at its descriptor's address, never at a
// fixed offset from its frame.
//
// # Why there is a filter
//
// A socket receives nothing by itself: the driver hands a packet to a socket
// only when an XDP program, run on every packet before the kernel's stack
// sees it, redirects it there. Everything the program does not redirect
// carries on into the kernel as if nothing had happened, which is what lets
// a program take one UDP port on a live interface while SSH, ARP and
// everything else keep working. A program that redirected everything would
// cut the host off, so Open requires a filter and has no default: name the
// traffic with WithFilter, take everything on purpose with filter.MatchAll
// (and WithKeepManagement to stay reachable), or transmit only with
// filter.MatchNone. Package filter assembles the program with
// github.com/cilium/ebpf/asm from a plain description (filter.Program) that
// the options translate into, and the kernel's verifier checks it;
// filter.MatchPacket runs the same program on a packet you give it.
//
// # The host
//
// Open changes nothing on the host but attaching its program unless
// WithHostTuning asks: NAPI deferral, worker placement beside the queues'
// interrupts, mlx5's xdp_tx_mpwqe flag (Tuning; DefaultTuning is what
// measured best). Every change goes through internal/host's journal, is
// listed in Info().Tuning and is put back on Close, or when Open fails.
//
// # Concurrency
//
// One goroutine may drive a socket's receive side (Fill, Poll, Receive,
// Recycle) while another drives its transmit side (Alloc, Transmit,
// Complete, SendFunc), with no locks: the two sides have disjoint rings and
// disjoint frame pools. Two goroutines may not drive the same side.
// WithTxReuseRxFrames and forwarding with CompleteInto move frames between
// the sides, so they need one goroutine for both. Stats, the Num gauges and
// Close are safe from any goroutine; Close wakes a goroutine blocked in Poll
// and waits for calls in progress before it releases the memory.
//
// # Need-wakeup
//
// With WithNeedWakeup an idle driver parks and says so in a ring flag,
// instead of polling for nothing (without it, a starved zero-copy driver
// spins its NAPI loop at full speed forwarding nothing). Transmit then kicks
// the kernel only when the flag asks, and a receiver that never blocks in
// Poll must call WakeupRx when NeedsWakeupRx says so. In copy mode (generic
// XDP, or a driver without zero-copy, veth included) the kernel drains the
// transmit ring only inside a system call: a full ring must be kicked, and
// SendFunc and SendBatch do it.
//
// # Other programs
//
// One XDP program runs per interface and mode. Open never detaches one it
// did not attach: it refuses with packetio.ErrBusy naming the program's id
// and name, unless WithReplaceProgram says to replace one attached the
// legacy (netlink) way; Close then attaches it again. A program held by a
// BPF link belongs to a live process and is never touched. Only a provable
// leftover of packetio's own is removed unasked (see Open).
//
// Two ways share the hook instead. WithProgram runs the caller's program,
// which redirects into the caller's XSKMAP; the fleet only binds sockets
// and registers them there. WithSharedHook puts packetio's program in a
// slot of libxdp's multi-program dispatcher (the protocol xdp-loader and
// every libxdp user follow), and a dispatcher found on the interface is
// joined rather than refused; it needs a kernel that takes freplace
// programs (ProbeSharedHook) and a bpffs. Info().Hook says which way the
// fleet runs.
//
// # Modes
//
// Open tries native zero-copy, native copy and generic (SKB) mode in that
// order and reads back what it got (Info): the attach mode from the kernel,
// zero-copy from each socket's XDP_OPTIONS. The program hangs on a BPF
// link, so the kernel removes it when the process dies, however it dies.
//
// # What it needs
//
// Linux 6.x (5.10 for the basics), root or CAP_NET_ADMIN, CAP_NET_RAW and
// CAP_BPF, and locked memory for the UMEM (Open lifts RLIMIT_MEMLOCK when it
// may). Tests run on veth pairs in throwaway namespaces; the package's
// README has the filter guide and measured numbers.
package xdp
