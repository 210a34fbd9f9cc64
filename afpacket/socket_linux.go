//go:build linux

package afpacket

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"golang.org/x/sys/unix"

	"github.com/packetio/packetio"
)

// retireTimeoutMs is how long the kernel keeps a partly filled block before
// handing it over (tp_retire_blk_tov): the worst added latency at a trickle.
const retireTimeoutMs = 1

// ringFrameSize is tp_frame_size. TPACKET_V3 packs packets into a block by
// their real size and limits them by the block, not by this; the kernel only
// needs block_size to be a multiple of it.
const ringFrameSize = 2048

// sock is one AF_PACKET socket of a Device, with its receive ring if it has
// one.
type sock struct {
	fd    int
	mem   []byte  // the mmapped ring, nil on a transmit-only socket
	ring  *ring   // the TPACKET_V3 walk, nil with WithLowLatency
	ring2 *ring2  // the TPACKET_V2 walk (WithLowLatency), else nil
	txr   *txRing // the transmit ring of a transmit socket, nil on the sendmmsg path
}

// htons converts a 16-bit value to network order for the protocol fields of
// socket(2) and sockaddr_ll.
func htons(v uint16) uint16 { return v<<8 | v>>8 }

// interfaceIndex looks name up through fd's network namespace (an ioctl on
// the socket itself, so it sees the namespace the socket lives in) and
// refuses an interface that is not up.
func interfaceIndex(fd int, name string) (int, error) {
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, fmt.Errorf("%w: bad interface name: %w", packetio.ErrInvalid, err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, fmt.Errorf("%w in this network namespace (SIOCGIFINDEX: %w)", packetio.ErrNoDevice, err)
	}
	index := int(ifr.Uint32())
	ifr, _ = unix.NewIfreq(name)
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return 0, fmt.Errorf("read flags: %w", err)
	}
	if ifr.Uint16()&unix.IFF_UP == 0 {
		return 0, fmt.Errorf("%w: interface is down (bring it up with `ip link set %s up`); a packet socket on it would never send or receive", packetio.ErrUnsupported, name)
	}
	return index, nil
}

// etherHeaderLen is the Ethernet header in front of an MTU's worth of
// payload: MaxTxLen is the MTU plus this.
const etherHeaderLen = 14

// interfaceMTU reads the MTU of the interface through fd's namespace.
func interfaceMTU(fd int, name string) (int, error) {
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, fmt.Errorf("%w: bad interface name: %w", packetio.ErrInvalid, err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFMTU, ifr); err != nil {
		return 0, fmt.Errorf("read the MTU (SIOCGIFMTU): %w", err)
	}
	return int(int32(ifr.Uint32())), nil
}

// openSocket makes one packet socket bound to ifindex. A socket with a ring
// gets it before it is bound with ETH_P_ALL, so no frame ever lands in the
// socket's ordinary receive queue (which would keep poll(2) readable for
// ever); a transmit-only socket stays bound with protocol 0, which registers
// no receive hook, so the kernel copies nothing to it.
func openSocket(ifindex int, cfg resolved, withRing bool) (s *sock, err error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket(AF_PACKET) (needs CAP_NET_RAW): %w", err)
	}
	s = &sock{fd: fd}
	defer func() {
		if err != nil {
			s.close()
			s = nil
		}
	}()
	// Best effort: not seeing our own transmissions (4.20+), going
	// straight to the driver (a full device queue drops rather than
	// queues), bigger socket buffers (FORCE works for root and ignores
	// the sysctl ceiling).
	_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	if !cfg.qdisc {
		_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1)
	}
	for _, o := range [][2]int{{unix.SO_SNDBUFFORCE, unix.SO_SNDBUF}, {unix.SO_RCVBUFFORCE, unix.SO_RCVBUF}} {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[0], socketBuffer) != nil {
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, o[1], socketBuffer)
		}
	}
	if cfg.gso {
		// Every socket, transmit-only ones too: without it the kernel
		// would send our virtio header as packet data.
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1); err != nil {
			return s, fmt.Errorf("PACKET_VNET_HDR (open without WithGSO): %w", err)
		}
	}
	proto := uint16(0)
	if withRing {
		// The filter goes on first: the socket is not bound yet, so
		// nothing has been queued to it that the filter did not see.
		if err := attachFilter(fd, cfg.rxFilterRaw); err != nil {
			return s, fmt.Errorf("%s: %w", cfg.rxFilterBy, err)
		}
		setup := s.setupRing
		if cfg.lowLatency {
			setup = s.setupRing2
		}
		if err := setup(cfg); err != nil {
			return s, err
		}
		proto = htons(unix.ETH_P_ALL)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifindex}); err != nil {
		return s, fmt.Errorf("bind: %w", err)
	}
	return s, nil
}

// openTxSocket makes the packet socket of one transmit queue: bound with
// protocol 0 (no receive hook), and with a PACKET_TX_RING whose slots hold
// maxLen bytes unless the queue takes the sendmmsg path (WithGSO,
// WithMultiBuffer).
func openTxSocket(ifindex int, cfg resolved, maxLen int) (s *sock, err error) {
	s, err = openSocket(ifindex, cfg, false)
	if err != nil || cfg.gso || cfg.multiBuffer {
		return s, err
	}
	if err := s.setupTxRing(maxLen); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// setupTxRing asks for a TPACKET_V2 transmit ring and maps it. PACKET_LOSS
// stays off, so a frame the kernel refuses is marked in its slot
// (TP_STATUS_WRONG_FORMAT) instead of vanishing. On a failed mapping the
// ring is released again.
func (s *sock) setupTxRing(maxLen int) error {
	if err := unix.SetsockoptInt(s.fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return fmt.Errorf("PACKET_VERSION TPACKET_V2 (transmit ring): %w", err)
	}
	// Best effort: without it the kernel pins each slot's page into the
	// skb instead of copying the frame (see txRing.linear).
	linear := unix.SetsockoptInt(s.fd, unix.SOL_PACKET, unix.PACKET_VNET_HDR, 1) == nil
	frameSize, slots, blockSize := txRingGeometry(maxLen + vnetLen)
	req := unix.TpacketReq{
		Block_size: uint32(blockSize),
		Block_nr:   uint32(slots * frameSize / blockSize),
		Frame_size: uint32(frameSize),
		Frame_nr:   uint32(slots),
	}
	if err := unix.SetsockoptTpacketReq(s.fd, unix.SOL_PACKET, unix.PACKET_TX_RING, &req); err != nil {
		return fmt.Errorf("PACKET_TX_RING (%d slots of %d bytes): %w", slots, frameSize, err)
	}
	mem, err := mapRing(s.fd, slots*frameSize)
	if err == nil && testHookTxMap != nil {
		if err = testHookTxMap(); err != nil {
			unmap(mem)
		}
	}
	if err != nil {
		var zero unix.TpacketReq
		_ = unix.SetsockoptTpacketReq(s.fd, unix.SOL_PACKET, unix.PACKET_TX_RING, &zero)
		return fmt.Errorf("map the transmit ring: %w", err)
	}
	s.mem = mem
	s.txr = newTxRing(mem, frameSize, slots, linear)
	return nil
}

// testHookTxMap, when set by a test, runs after a transmit ring is mapped;
// an error is taken as a failed mapping, to prove the rollback.
var testHookTxMap func() error

// setupRing asks for a TPACKET_V3 ring and maps it. On a failed mapping the
// ring is released again (a configured, unmapped ring would still take
// packets).
func (s *sock) setupRing(cfg resolved) error {
	if err := unix.SetsockoptInt(s.fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V3); err != nil {
		return fmt.Errorf("PACKET_VERSION TPACKET_V3: %w", err)
	}
	req := unix.TpacketReq3{
		Block_size:     uint32(cfg.blockSize),
		Block_nr:       uint32(cfg.blocks),
		Frame_size:     ringFrameSize,
		Frame_nr:       uint32(cfg.blocks * (cfg.blockSize / ringFrameSize)),
		Retire_blk_tov: retireTimeoutMs,
	}
	if err := unix.SetsockoptTpacketReq3(s.fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return fmt.Errorf("PACKET_RX_RING (%d blocks of %d bytes): %w", cfg.blocks, cfg.blockSize, err)
	}
	mem, err := mapRing(s.fd, cfg.blocks*cfg.blockSize)
	if err != nil {
		var zero unix.TpacketReq3
		_ = unix.SetsockoptTpacketReq3(s.fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &zero)
		return fmt.Errorf("map the receive ring: %w", err)
	}
	s.mem = mem
	s.ring = newRing(mem, cfg.blockSize, cfg.blocks, cfg.gso)
	return nil
}

// setupRing2 asks for a TPACKET_V2 ring (WithLowLatency) and maps it, with
// the same rollback as setupRing.
func (s *sock) setupRing2(cfg resolved) error {
	if err := unix.SetsockoptInt(s.fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		return fmt.Errorf("PACKET_VERSION TPACKET_V2 (WithLowLatency): %w", err)
	}
	perBlock := cfg.v2BlockSize / cfg.v2FrameSize
	req := unix.TpacketReq{
		Block_size: uint32(cfg.v2BlockSize),
		Block_nr:   uint32(cfg.v2Blocks),
		Frame_size: uint32(cfg.v2FrameSize),
		Frame_nr:   uint32(cfg.v2Blocks * perBlock),
	}
	if err := unix.SetsockoptTpacketReq(s.fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &req); err != nil {
		return fmt.Errorf("PACKET_RX_RING TPACKET_V2 (%d blocks of %d bytes, %d-byte frames): %w",
			cfg.v2Blocks, cfg.v2BlockSize, cfg.v2FrameSize, err)
	}
	mem, err := mapRing(s.fd, cfg.v2Blocks*cfg.v2BlockSize)
	if err != nil {
		var zero unix.TpacketReq
		_ = unix.SetsockoptTpacketReq(s.fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &zero)
		return fmt.Errorf("map the receive ring: %w", err)
	}
	s.mem = mem
	s.ring2 = newRing2(mem, cfg.v2BlockSize, cfg.v2FrameSize, cfg.v2Blocks, cfg.gso)
	return nil
}

// close unmaps the ring and closes the socket. Closing the socket releases
// the kernel's ring; our mapping must go first or it would keep the pages.
func (s *sock) close() {
	if s == nil {
		return
	}
	unmap(s.mem)
	s.mem = nil
	if s.fd >= 0 {
		_ = unix.Close(s.fd)
		s.fd = -1
	}
}

// joinFanout puts every ring socket into one new PACKET_FANOUT_HASH group
// with rollover: one flow stays on one queue, and a queue that is behind
// spills to another instead of dropping. (No FANOUT_FLAG_DEFRAG: it costs a
// reassembly per fragment, so fragments of one datagram may land on
// different queues.) The group id is random, so two Devices on one interface
// never share a group by accident; an id already taken is retried.
func joinFanout(socks []*sock) error {
	const mode = unix.PACKET_FANOUT_HASH | unix.PACKET_FANOUT_FLAG_ROLLOVER
	var err error
	for range 16 {
		id := int(rand.Uint32() & 0xffff)
		err = nil
		joined := 0
		for _, s := range socks {
			// Group id in the low 16 bits, mode and flags in the high.
			if err = unix.SetsockoptInt(s.fd, unix.SOL_PACKET, unix.PACKET_FANOUT, id|mode<<16); err != nil {
				break
			}
			joined++
		}
		if err == nil {
			return nil
		}
		if joined > 0 || !(errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EADDRINUSE)) {
			// A socket cannot leave a group; the caller closes them all.
			return fmt.Errorf("PACKET_FANOUT: %w", err)
		}
	}
	return fmt.Errorf("PACKET_FANOUT: no free group id: %w", err)
}
