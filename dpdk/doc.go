// Package dpdk is the packetio backend over DPDK poll-mode drivers, built
// with -tags dpdk (and cgo, on linux/amd64). Without the tag the package is
// this comment and nothing else.
//
// Open takes a PCI address or a DPDK virtual device: "net_null0",
// "net_af_packet0,iface=veth0", "net_af_xdp0,iface=veth0", "net_tap0". The
// EAL starts once per process, at the first Open, with its own file prefix
// and --no-shconf, so test binaries and programs run side by side; later
// Opens reuse it and ignore their EAL options.
//
// # Frames are mbufs
//
// The Region is one memzone cut into power-of-two frames, and every frame is
// one mbuf of a mempool whose objects are laid out exactly on frame
// boundaries:
//
//	[ 64 B mempool header | 128 B struct rte_mbuf | 128 B headroom | packet ... ]
//
// so a Desc becomes an mbuf, and an mbuf a Desc, with an add and a mask. The
// mempool's operations are two single-producer rings shared with Go: the
// driver allocates receive buffers from a supply ring that Fill pushes to,
// and frees transmitted mbufs into a returned ring that Complete and Reclaim
// pop from. Frames therefore come back on the driver's schedule (some
// drivers hold completions until 32 packets have built up); NumInFlight
// says how many it still holds.
//
// # Costs
//
// The packet path crosses into C once per burst: one rte_eth_rx_burst per
// Receive or Poll, one rte_eth_tx_burst per Transmit, and one completion
// nudge when Complete finds nothing waiting. Every mbuf field is read and
// written from Go. Poll spins (BlockingPoll is false): there is nothing to
// sleep on. It yields the processor between its first 256 looks, then
// sleeps between looks, 20 µs at first and twice as long each time up to
// 0.5 ms (plus the thread's timer slack), so an idle queue costs about 5%
// of a core: see internal/spinwait.
//
// # Control calls and namespaces
//
// Open and Close run DPDK's control functions on the calling goroutine's
// thread, and Close returns to the network namespace Open ran in. A virtual
// device over a kernel interface (net_af_packet, net_af_xdp) opens its
// sockets in the namespace of the thread that calls Open: to use an
// interface inside a namespace, call Open from a thread switched into it.
//
// # Faults
//
// A port over a kernel interface (net_af_packet, net_af_xdp) runs one
// watcher goroutine that asks the kernel every WatchInterval (100 ms)
// whether the interface's index still exists; when it does not, every queue
// latches packetio.ErrDeviceGone: Poll (blocked or not) returns it, Err
// reports it with no other call, SendFunc returns (0, err), Transmit 0,
// Stats stay readable. A link that goes down and up is not a loss: both
// drivers carry frames again once it is up. Close stops the watcher.
// Capabilities().MaxTxLen is the interface's MTU plus 14 (else the port's
// rte_eth_dev_get_mtu), and Transmit refuses a longer descriptor up front,
// counting it in TxStats.Refused. PCI ports have no watcher: a removed NIC
// is not detected.
//
// # Memory after Close
//
// Close gives the memzone back to DPDK (rte_memzone_free): Region's methods
// then return nil (NumFrames 0), but a slice taken from Bytes, Frame or
// Writable before Close still points into it and must not be used. With
// WithNoHuge the EAL's memory is one mapping made at start that is never
// unmapped, so such a slice does not fault, but the memory is DPDK's again
// and the next Open reuses it: a read sees another device's frames, a
// write corrupts them. With hugepages DPDK may unmap the pages of a freed
// memzone (it reserves their addresses PROT_NONE), and then any access
// through such a slice is a SIGSEGV. The slices cannot be revoked, so drop
// them before Close.
//
// # What the software drivers can do
//
// net_null, net_af_packet and net_af_xdp have no rte_flow engine: every
// SteeringFilter with matches is refused with packetio.ErrUnsupported (a
// promiscuous filter is a port setting and is accepted). net_af_packet copies
// every packet and needs frames of 4096 bytes (chosen by default for it);
// net_af_xdp starts packets 256 bytes further into the buffer (so it too
// gets 4096-byte frames by default) and transmits through the XDP socket of
// the receive queue with the same index, copying each packet that is not
// from that queue's pool into a buffer of it. The pair shares one pool,
// the transmit queue's frames after the receive queue's, so a built frame
// and a forwarded one are both sent in place: it needs a receive queue per
// transmit queue, and the two queues of a pair share a lock around their
// bursts. Only net_tap
// keeps checksum offloads after configure. See README.md for numbers.
package dpdk
