// Package netstack runs gVisor's TCP/IP stack over a packetio device and
// hands back the standard library's net.Listener, net.Conn and
// net.PacketConn, so a TCP or UDP program runs in user space on any packetio
// backend with the kernel's network stack nowhere on its path.
//
//	dev, _ := afpacket.Open("veth0", afpacket.WithGSO(), afpacket.WithLowLatency())
//	defer dev.Close()
//	s, err := netstack.New(dev, netstack.Config{Addr: netip.MustParsePrefix("192.0.2.10/24")})
//	if err != nil { ... }
//	defer s.Close()
//	l, _ := s.Listen("tcp", ":8080")
//
// # What it speaks
//
// IPv4 with ARP and IPv6 with neighbour discovery (one address of each, or
// one only), TCP (CUBIC, SACK, receive-buffer auto-tuning) and UDP. Hosts and
// ports are literal: the stack resolves no names. There are no ICMP
// sockets.
//
// # How it sits on the device
//
// One stack owns every queue of one device. Each receive queue has its own
// goroutine that fills, polls (blocking where Capabilities().BlockingPoll,
// spinning with back-off elsewhere), checks each frame (VLAN, destination
// MAC, IPv4 header and TCP/UDP checksums unless the device set
// OptChecksumOK) and copies it once into a gVisor buffer; TCP segments are
// merged (GRO) before the stack sees them. The frame goes back to the ring
// when the batch is done.
//
// Transmit runs on the goroutine that writes, one writer per queue at a
// time. The stack hands down TCP packets of up to 64 KiB (GSO). Where the
// device segments and checksums (a packetio.OffloadTransmitter with
// Capabilities().Offload, such as afpacket with WithGSO) such a packet goes
// out as one frame with its offload metadata; elsewhere the endpoint cuts it
// into MSS-sized segments straight into device frames. It finishes every
// TCP checksum in software, unless the device finishes checksums without
// segmenting (an OffloadTransmitter with Capabilities().TxChecksumOffload,
// such as afxdp with WithTxChecksumOffload): then each frame carries a
// checksum request and the device is never asked to segment. A packet
// leaves on the transmit queue matching the receive queue its flow last
// arrived on.
//
// On afpacket, open the device WithLowLatency: the default TPACKET_V3 ring
// hands received packets over in blocks, when a block is full or 1 ms after
// its first packet, which bounds request/response on one connection at
// about 1,000 round trips a second. The README has the figures.
//
// # Which address
//
// Give the stack an address the kernel does not own on the interface, with
// the interface's MAC. On afpacket, a tap, the kernel would otherwise reset
// the stack's connections. On afxdp the kernel keeps the interface and sees
// only what the XDP program leaves it; package afxdpsteer builds steering
// that takes the stack's own traffic and its own ARP and neighbour
// discovery, and nothing of the kernel's. The README says more.
//
// A full transmit queue is waited on for up to Config.TxWait, then the
// packet is dropped and counted (Stats.TxDropped); TCP retransmits it. A
// queue that fails stops the stack: Done closes and Err says why.
//
// # Errors
//
// Errors are *net.OpError values holding what the net package would hold:
// net.ErrClosed after Close (of the socket or the stack),
// os.ErrDeadlineExceeded for deadlines, and syscall errnos such as
// ECONNREFUSED, ECONNRESET and EADDRINUSE. Config refusals wrap
// ErrInvalidConfig; device refusals wrap packetio.ErrUnsupported.
package netstack
