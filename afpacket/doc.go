// Package afpacket is the packetio backend on AF_PACKET sockets: it works on
// any Linux interface, with no driver support, no XDP and no cgo, at the
// price of one copy per packet each way.
//
// # What it needs
//
// Linux and CAP_NET_RAW (root in practice; WithFrames-sized memory plus an
// 8 MiB receive ring per receive queue, locked when RLIMIT_MEMLOCK allows).
// The interface must be up; Open refuses a down one instead of opening a
// device that never sends or receives. Open works in the network namespace
// of the calling thread.
//
// # How it works
//
// Each receive queue is a packet socket with a TPACKET_V3 ring mapped into
// the process. The kernel packs arriving frames into a block and hands the
// block over when it is full or 1 ms after its first packet; Receive copies
// each packet into a frame of the queue's own pool and gives the block back
// at once, so a received Desc obeys the loan rule exactly as on a zero-copy
// backend, and nothing the kernel writes is trusted: every offset and length
// in a block is checked against the block before it is used, and a block
// that does not add up is skipped and counted (RxStats.Backend["malformed"]).
// A VLAN tag the kernel stripped is put back, so the caller sees the frame
// as it was on the wire. Two or more receive queues join one
// PACKET_FANOUT_HASH group with rollover: each flow stays on one queue
// (Capabilities().RSS).
//
// Transmit goes through a PACKET_TX_RING (TPACKET_V2) on a packet socket of
// each transmit queue's own, with PACKET_QDISC_BYPASS (WithQdisc keeps the
// qdisc): a batch is written into consecutive ring slots and handed to the
// kernel with one send(2), MSG_DONTWAIT. SendFunc builds every frame straight
// into its slot and takes no pool frame; Transmit and TransmitGather copy
// into slots, and a transmitted region frame still waits on a pending list
// until Complete or Reclaim hands it back, so ownership, forwarding and
// NumInFlight work as on every other backend. Every slot carries a
// virtio_net_hdr asking the kernel to copy the whole frame into the skb
// head, which for small frames is cheaper than pinning the slot's page. A
// slot the kernel refuses (TP_STATUS_WRONG_FORMAT) is counted
// (TxStats.Backend["wrong_format"], Errors), reported by Err (matching
// packetio.ErrBadLength) and dropped alone: the frames behind it move down a
// slot and go. WithGSO and WithMultiBuffer transmit with batched sendmmsg(2)
// instead (up to 256 frames per system call, iovecs into the region): a GSO
// super-frame would need 64 KiB slots, and the kernel gathers a chain from
// its frames. Either way a full device queue or socket buffer (EAGAIN,
// ENOBUFS) is back-pressure: a short count, counted in
// TxStats.Backend["eagain"], never an error and never a retry loop.
//
// Receive queues are packetio.TimestampReceiver (the kernel's CLOCK_REALTIME
// stamp of when the frame entered the ring; it can step with the clock) and
// Poll sleeps in poll(2), woken by Close through an eventfd
// (Capabilities().BlockingPoll). Transmit queues are
// packetio.GatherTransmitter: TransmitGather sends straight from the
// caller's memory, which is legal here because the kernel copies.
//
// With WithGSO every packet carries a virtio_net_hdr both ways
// (PACKET_VNET_HDR): queues are packetio.OffloadReceiver and
// packetio.OffloadTransmitter, a 64 KiB TCP super-frame crosses as one
// packet, and the kernel segments and checksums on transmit. On receive a
// partial checksum (OffloadNeedsCsum) of an unsegmented packet is finished in
// software and the flag cleared; a segmented super-frame keeps its metadata
// for the caller. Without WithGSO the offload calls return
// packetio.ErrUnsupported.
//
// # What it costs
//
// A copy per packet in each direction, and a system call per batch on
// transmit (TxStats.Backend["sends"]; BenchmarkTransmit reports it per
// packet: 1/256) and per wait on receive (RxStats.Backend["syscalls"]).
// On a veth pair between two namespaces, 64-byte frames, one CPU each,
// transmit measures 1.12 to 1.14 times trafgen's rate (trafgen 0.6.8 from
// netsniff-ng, the same TX ring with qdisc bypass) in the same quiet run of
// scripts/trafgen-compare.sh, 1.04 times on a loaded machine; see
// README.md. The kernel does all its usual work on every frame: AF_PACKET is
// a tap, not a bypass.
//
// # Low latency
//
// A TPACKET_V3 block reaches the program when it is full or 1 ms after its
// first packet (the kernel's minimum retire timeout), so at low rates a lone
// packet waits up to 1 ms: BenchmarkRoundTrip measures a median round trip
// of 1.00 ms on a veth pair, and a request/response protocol is capped near
// 1,000 exchanges a second per connection. WithLowLatency makes the receive
// rings TPACKET_V2 instead: fixed slots with a status word each, the kernel
// wakes Poll for every packet, and Receive hands each slot back as soon as
// it has copied the packet out. The same benchmark then measures a median
// round trip of 4.9 us. Everything else is unchanged: the same bounds checks
// (a slot whose offsets do not fit it is skipped and counted as malformed),
// VLAN tags put back, kernel stamps, WithGSO and WithMultiBuffer, counters
// and Close waking Poll. The price is paid under load: one poll(2) wake-up
// and its system calls per packet at low rates, small receive batches (about
// 7 packets instead of about 400 under a flood) and slots as big as the
// largest packet accepted (64 KiB with WithGSO or WithMultiBuffer), so
// BenchmarkReceive drops from 1.28 to 0.75 Mpps on the same veth, with
// kernel drops. Use it for request/response traffic, not for bulk capture.
//
// # What it refuses
//
// There is no steering option at all. A packet socket receives a copy of what
// the kernel receives; the kernel processes the original anyway, so a filter
// could only choose which copies arrive, and calling that steering would
// mislead. Select in the receive loop. There is no hardware timestamp, and
// no fragment reassembly in the fanout (fragments of one datagram may reach
// different queues).
//
// # Packets bigger than a frame
//
// Without WithMultiBuffer a received packet that does not fit one frame
// (frame size less 64 bytes of headroom) is dropped and counted as oversize.
// With it, such a packet arrives as a chain of descriptors, every one but
// the last marked packetio.OptContinued, whole or not at all; a chain longer
// than the caller's max can never be taken and is dropped and counted
// (batch_too_small). Transmit takes chains the same way, as one packet per
// chain. The Offload of a chain rides its first descriptor, and a partial
// checksum on a chain is left for the caller to finish after reassembly.
//
// A packet is never delivered truncated: one the kernel clipped is dropped
// and counted as oversize too. On a NIC with GRO, TCP arrives as super-frames
// far beyond the MTU: open it WithGSO (or WithMultiBuffer), or turn GRO off.
package afpacket
