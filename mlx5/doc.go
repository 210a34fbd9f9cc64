// Package mlx5 is the packetio backend for NVIDIA/Mellanox ConnectX NICs
// through Direct Verbs: the send and receive rings live in user space and
// this package writes their work-queue entries and reads their completions
// itself, in Go, with one doorbell per batch and no system call or cgo call
// per packet.
//
// It needs -tags mlx5, cgo, Linux on amd64 or arm64 and libibverbs-dev to
// build; libibverbs1 and ibverbs-providers (libmlx5), the mlx5_ib module,
// CAP_NET_RAW and a memlock limit large enough for the frame region to run.
// Without the tag only this documentation is compiled.
//
// # Opening
//
//	dev, err := mlx5.Open("eth2", mlx5.WithQueues(4),
//		mlx5.WithSteering(packetio.SteeringFilter{Match: packetio.MatchDstPort(packetio.IPProtoUDP, 9000)}))
//
// On a machine without a ConnectX behind the interface, Open returns an
// error wrapping packetio.ErrNoDevice that says no mlx5 device backs that
// interface. It never panics: a bad or nil option or an impossible interface
// name is packetio.ErrInvalid, checked before any hardware is looked at, and
// the nil *Device a failed Open returns answers every method with a zero
// value or packetio.ErrClosed. Capabilities().MaxTxLen is the interface's
// MTU plus 14; Transmit refuses a longer packet up front.
//
// # What Open builds
//
// One protection domain, one memory registration for the whole frame region
// (mmap'd, populated, pinned), per transmit queue one or more raw-packet send
// QPs with their CQs (64-byte version-1 CQEs, uncompressed), per receive
// queue a plain receive WQ (one buffer per packet, 64 bytes of headroom) with
// its CQ, an RSS QP over the receive WQs (Toeplitz over the IPv4 addresses
// and UDP ports) and one ibv_create_flow rule per conjunction of the steering
// filter: destination MAC, VLAN ID, EtherType, IPv4 and IPv6 prefixes, IP
// protocol and TCP/UDP ports. A filter it cannot express exactly is refused
// with ErrUnsupported, never widened. Traffic no rule takes stays with the
// kernel's interface (KernelCoexistence).
//
// The transmit descriptor is chosen at Open: ordinary SEND entries with the
// header bytes the port requires inline (measured, 0 or 18); enhanced
// multi-packet entries (pointer form) where the card supports them and the
// port needs no inline header; and with two or more transmit queues and no
// receive queues, or four or more with receive queues, the copied
// multi-packet form over four hardware rings per queue, which scales per
// ring rather than sharing the device-wide pointer-fetch ceiling.
//
// # What is verified where
//
// The encoders, the rings, frame ownership, error and flush handling and the
// queue code are pure Go (mlx5/internal/...) and are tested on every machine
// against mlx5/internal/mocknic, a strict software model of the card, and
// through the shared conformance suite. The bring-up (mlx5/internal/dv) is
// only built and linked, and its error paths checked, on a machine without a
// ConnectX. See README.md in this directory for what only real hardware can
// confirm.
package mlx5
