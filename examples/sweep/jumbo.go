package main

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/packetio/packetio"
	"github.com/packetio/packetio/internal/spinwait"
)

// Jumbo frames. -sizes takes one size above 1518: 9000 bytes on the wire
// (an 8996-byte frame, an 8982-byte IP packet), measured on a pair of its
// own whose ends both have an MTU of 9000, with multi-buffer on the
// backends (a packet spans frames: 3 of afxdp's 4 KiB frames, 5 of
// afpacket's 2 KiB ones), fed by afpacket on the peer (the live-frames
// generator's frames are at most a page).
const (
	jumboSize = 9000 // on the wire, FCS included
	jumboMTU  = 9000
	// jumboFrameSize is afxdp's frame size on a jumbo pair: the largest
	// an aligned UMEM takes, so a 9000-byte packet is a chain of 3.
	jumboFrameSize = 4096
	// jumboRingFrameSize is the region frame size of afpacket's transmit
	// (the afpacket column's, and the feeder's) on a jumbo pair: its
	// SendFunc builds a frame in a TX ring slot (16 KiB there, sized from
	// the MTU) but no longer than a region frame holds. On that ring it
	// sent 1.55 times the rate of WithMultiBuffer's chains of 2 KiB frames
	// over sendmmsg (0.954 against 0.616 Mpps, median of 5 interleaved,
	// 2026-12-04, load 2.4).
	jumboRingFrameSize = 16384
	// maxPlainSize is the largest size on the wire a 1500-byte MTU
	// carries.
	maxPlainSize = 1518
)

// isJumbo reports whether a size on the wire needs the jumbo pair.
func isJumbo(size int) bool { return size > maxPlainSize }

// validSize reports whether -sizes takes n.
func validSize(n int) bool { return n >= 64 && n <= maxPlainSize || n == jumboSize }

// jumboNA says why column has no jumbo cells, "" when it has them: those
// whose backend or tool moves a 9000-byte frame here.
func jumboNA(column string) string {
	switch column {
	case colKernel, colAfpacket, colAfxdp, colAfxdpBusy, colCxsk, colCxskBusy, colTrafgen, colTcpdump, colNetsniff:
		return ""
	case colDpdkPacket, colDpdkXDP:
		return "n/a: the dpdk backend has no multi-buffer (a packet is one mbuf; backend.Config.MultiBuffer is refused)"
	case colTestpmdPacket, colTestpmdXDP:
		return "n/a: testpmd, the dpdk columns' reference, is not measured where the dpdk backend cannot be"
	}
	return "n/a: no jumbo support known"
}

// jumboNote describes the jumbo pair for the notes under the table.
func jumboNote() string {
	return "9000 bytes on the wire: an 8996-byte frame (an 8982-byte IP packet) on a veth pair of its own whose ends both have an MTU of " + strconv.Itoa(jumboMTU) +
		"; afxdp and afpacket open WithMultiBuffer (a packet is a chain of frames marked OptContinued: afxdp's frames are " + strconv.Itoa(jumboFrameSize) +
		" bytes there, so 3 a packet, and its XDP program is loaded with frags support, without which the kernel refuses a native program on that MTU; afpacket's receive and forward use 2048-byte region frames, 5 a packet, and forward transmits its chains by sendmmsg); " +
		"afpacket's transmit instead opens without multi-buffer and with 16 KiB region frames, so SendFunc builds each packet in one slot of its PACKET_TX_RING (16 KiB slots, sized from the MTU): 1.55 times the rate of chains over sendmmsg when measured; " +
		"afxdp's transmit builds each packet as a chain (Alloc, copy, Transmit); receive and forward check every packet's length over its chain, and forward rewrites the chain's first frame and sends the whole chain; " +
		"receive and forward are fed by afpacket on the peer (its PACKET_TX_RING, whose slots are sized from the MTU, 16 KiB, with 16 KiB region frames, since SendFunc builds no longer a frame than a region frame holds; one sender per queue of the row, sender i pinned to CPU i, as the live generators are), since the live-frames generator's frames are at most a page; " +
		"C xsk runs with -m, multi-buffer too (see its note); the dpdk and testpmd columns are n/a there (the reason in each cell)"
}

// packetLen is the length of the packet that starts at descs[0]: the sum
// over its chain (every descriptor but the last marked OptContinued), and
// how many descriptors it takes. A chain cut short counts what is there.
func packetLen(descs []packetio.Desc) (length, n int) {
	for n < len(descs) {
		length += int(descs[n].Len)
		n++
		if descs[n-1].Options&packetio.OptContinued == 0 {
			break
		}
	}
	return length, n
}

// chainSender transmits copies of a frame too big for one of the
// device's frames, each as a chain: Alloc, copy the frame across as many
// frames as it takes, Transmit.
type chainSender struct {
	tx    packetio.TxQueue
	reg   packetio.Region
	tmpl  []byte
	l4    int // where the UDP header starts, for setFlow
	flows int
}

// send builds and transmits up to batch packets, the first of flow flow,
// and returns how many packets the queue took.
func (c *chainSender) send(batch, flow int) int {
	c.tx.Complete(1 << 20)
	descs := c.tx.Alloc(batch * c.per())
	built, packets := 0, 0
	for packets < batch && built < len(descs) {
		n := c.build(descs[built:], flow+packets)
		if n == 0 {
			break
		}
		built += n
		packets++
	}
	c.tx.Free(descs[built:])
	sent := c.tx.Transmit(descs[:built])
	c.tx.Free(descs[sent:built])
	return whole(descs[:sent])
}

// sendChainsUntil sends chains on cs until ctx ends, counting packets
// in total, as startTx's loop does with SendFunc.
func sendChainsUntil(ctx context.Context, cs *chainSender, batch, flow int, total *atomic.Uint64) error {
	for ctx.Err() == nil {
		n := cs.send(batch, flow)
		if n == 0 {
			if err := cs.tx.Err(); err != nil {
				return err
			}
			spinwait.Sleep(20 * time.Microsecond)
		}
		flow += n
		total.Add(uint64(n))
	}
	return nil
}

// per is how many frames a packet takes, from the first frame's room.
func (c *chainSender) per() int {
	room := c.reg.FrameSize() - 256 // at most the headroom any backend keeps
	return (len(c.tmpl) + room - 1) / room
}

// build writes one packet of flow flow across descs and returns how many
// it took, 0 when they are too few for the whole packet.
func (c *chainSender) build(descs []packetio.Desc, flow int) int {
	off := 0
	for i := range descs {
		w := c.reg.Writable(descs[i])
		m := copy(w, c.tmpl[off:])
		if m == 0 {
			return 0
		}
		if off == 0 {
			setFlow(w, c.l4, flow%c.flows, false)
		}
		off += m
		descs[i].Len = uint32(m)
		if off == len(c.tmpl) {
			descs[i].Options &^= packetio.OptContinued
			return i + 1
		}
		descs[i].Options |= packetio.OptContinued
	}
	return 0
}

// whole counts the packets that end in descs (descriptors without
// OptContinued).
func whole(descs []packetio.Desc) int {
	n := 0
	for i := range descs {
		if descs[i].Options&packetio.OptContinued == 0 {
			n++
		}
	}
	return n
}
