// Package afxdp is the packetio backend on AF_XDP: the packetio API over
// packetio's own AF_XDP datapath, package afxdp/xdp. Pure Go, no cgo, no
// build tag.
//
// # What it needs
//
// Linux (6.x for everything here), root or CAP_NET_ADMIN, CAP_NET_RAW and
// CAP_BPF, and a driver with XDP (every interface has generic XDP; native
// mode and zero-copy depend on the driver). Open works in the network
// namespace of the calling thread.
//
// # How it works
//
// Open attaches one XDP program to the interface and binds one AF_XDP
// socket per queue (every queue unless WithQueues narrows it), each
// transmit and receive queue of the device one direction of one socket.
// The program redirects what the steering filter names to the socket of the
// queue it arrived on; everything else carries on into the kernel
// (Capabilities().KernelCoexistence). So Open requires WithSteering: a
// program that took everything would take SSH and ARP with it.
// SteeringFilter{Promiscuous: true} takes everything on purpose.
//
// Every rule of the filter is compiled into the program as one conjunction
// of its conditions (destination MAC, VLAN ID, EtherType, IP protocol in
// both families, source and destination prefixes in both families, TCP and
// UDP ports), so nothing wider than the filter is ever installed. The VLAN
// ID is read from the tag in the frame, or, in native mode where the driver
// strips tags before XDP and offers the bpf_xdp_metadata_rx_vlan_tag kfunc,
// from the tag the driver holds. Port matches read the IPv4 header length
// from the packet. What cannot be expressed is refused with
// packetio.ErrUnsupported and the reason.
//
// The sockets share one UMEM (XDP_SHARED_UMEM, with a fill and completion
// ring per queue), so every queue's Region is the same and a frame received
// on one queue can be transmitted on any other without a copy
// (SharedRegion); where the kernel refuses to share, each socket gets its
// own and Info says why. Reclaim names completed frames by address
// (HandsBackFrames), so forwarding is Receive, Transmit, Reclaim, Recycle,
// with no option. Need-wakeup is always on: an idle driver parks instead of
// spinning, Transmit kicks only when the kernel asks, and Fill wakes a
// parked driver (one atomic load when it did not park; counted as
// rx_kicks), so a loop that never blocks in Poll keeps receiving.
//
// # Receive timestamps
//
// Stamps are off unless asked for: they cost about a third of the receive
// rate on a veth fed flat out (BenchmarkReceiveStamped against
// BenchmarkReceive). With WithTimestamps the program stamps every frame it
// redirects, 16 bytes it grows in front of the packet
// (bpf_xdp_adjust_head), which the receive queue reads and moves the
// packet's descriptor past: the caller sees the packet as it came. The
// stamp is the driver's hardware stamp (bpf_xdp_metadata_rx_timestamp) in
// native mode where the driver gives one, else bpf_ktime_get_ns at the XDP
// hook, which is CLOCK_MONOTONIC, the clock of Go's monotonic time, so
// time.Now minus a stamp is the time the packet spent between the driver
// and the program. Info().Timestamps says which applies; Stats().Backend
// counts stamps by clock. Receive queues are packetio.TimestampReceiver.
// The stamp is not written into the XDP metadata area, which fewer
// drivers and kernels offer, and where a packet left unstamped would
// read as the frame's last stamp unless the receiver cleared a slot in
// every frame it posts: a cache line the kernel's copy then has to fetch
// from the receiving CPU, which held the stamped rate to 0.45 of the
// unstamped one on a veth against 0.69 now. A stamp that reads zero,
// which the program never writes, would be a fault: the queue says so
// (ReceiveTimestamps returns nil, nil and Capabilities().RxTimestamps
// turns false) instead of inventing a time.
//
// # What it costs
//
// The kernel half of AF_XDP (the driver, the program, the copy into the UMEM
// in copy mode) runs in softirq, outside the process: measure the machine,
// not the process. A receive queue takes about a core of its own on top of
// the program's. In copy mode (generic XDP, veth, drivers without
// zero-copy) every packet is copied once each way by the kernel.
//
// # Gotchas
//
// Bind every queue you will drive: RSS spreads flows over all of the NIC's
// queues, and a queue with no socket hands its packets to the kernel,
// silently. Narrow the NIC's channels (ethtool -L) instead of WithQueues.
// On a tagged interface, a driver with rx-vlan-filter on drops a tag no VLAN
// sub-interface claimed before XDP runs: zero packets, no error. A native
// attach resets some drivers' rings and renegotiates the link.
//
// Open never removes an XDP program it did not attach: another program on
// the interface is refused with packetio.ErrBusy naming its id and name,
// unless WithReplaceProgram says to replace one attached the legacy
// (netlink) way, which Close then puts back. A program held by a BPF link
// is never touched.
//
// Whose program steers is the caller's choice: packetio's own (compiled
// from WithSteering), the caller's (WithProgram: an XDP program and the
// XSKMAP it redirects into; SteeringSpec gives packetio's program as an
// ebpf.ProgramSpec to tail-call from it), or packetio's in a slot of
// libxdp's multi-program dispatcher beside other programs (WithSharedHook;
// a dispatcher found on the interface is joined). Capabilities().SteeringBy
// and Info().Hook say which.
package afxdp
