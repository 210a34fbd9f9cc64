package netstack

import "sync/atomic"

// Stats are the stack's counters, cumulative from New. Rx and Tx count what
// crossed the device; the rest say where packets went that did not.
type Stats struct {
	// RxPackets and RxBytes count frames handed to the stack.
	RxPackets, RxBytes uint64
	// RxSuperFrames counts received packets bigger than the MTU that the
	// device delivered already merged (offload receive).
	RxSuperFrames uint64
	// RxBadChecksum counts frames dropped for a bad IPv4 header, TCP or
	// UDP checksum.
	RxBadChecksum uint64
	// RxFragments counts IP fragments, which are dropped.
	RxFragments uint64
	// RxWrongVLAN counts frames on another VLAN than Config.VLAN.
	RxWrongVLAN uint64
	// RxNotIP counts frames of an EtherType the stack does not speak.
	RxNotIP uint64
	// RxRunt counts frames too short or inconsistent to parse.
	RxRunt uint64
	// RxOtherHost counts unicast frames to another MAC address.
	RxOtherHost uint64
	// RxOwnEcho counts frames carrying the stack's own source MAC (a tap
	// showing the stack what it sent).
	RxOwnEcho uint64
	// RxChained counts packets that arrived spread over several frames
	// (copied together before the stack sees them).
	RxChained uint64
	// RxTooLong counts chained packets over 64 KiB, or cut short, which
	// are dropped.
	RxTooLong uint64
	// RxDeviceDropped counts packets the device discarded before the stack
	// saw them: its receive queues' packetio.RxStats.Dropped, summed (for
	// afpacket and afxdp, a ring the stack had not emptied in time). TCP
	// retransmits them; many, and the peers slow down.
	RxDeviceDropped uint64

	// TxPackets counts packets the stack sent; TxFrames the frames they
	// took and TxBytes their bytes.
	TxPackets, TxFrames, TxBytes uint64
	// GSOPackets counts packets cut into segments here, GSOFrames the
	// segments.
	GSOPackets, GSOFrames uint64
	// OffloadPackets counts packets the device was asked to segment.
	OffloadPackets uint64
	// OffloadChecksums counts frames, not segmented by the device, whose
	// TCP checksum the device was asked to finish.
	OffloadChecksums uint64
	// TxWaits counts packets that found their queue full and waited.
	TxWaits uint64
	// TxDropped counts frames dropped because the queue stayed full for
	// Config.TxWait or failed; TCP retransmits them.
	TxDropped uint64
	// TxPartial counts segmented packets the device took only part of.
	TxPartial uint64
	// TxChained counts packets sent spread over several frames (an MTU
	// above a frame, on a device with MultiBuffer).
	TxChained uint64
	// TxTooBig counts packets larger than a frame (or a chain) takes,
	// which are dropped.
	TxTooBig uint64
	// UnknownMAC counts packets sent to the broadcast address because no
	// link address was resolved for them.
	UnknownMAC uint64

	// TCPRetransmits, TCPChecksumErrors, TCPResetsSent and
	// TCPEstablishedResets come from the stack's own TCP counters.
	TCPRetransmits, TCPChecksumErrors, TCPResetsSent, TCPEstablishedResets uint64
	// TCPCurrentEstablished is the number of connections established now.
	TCPCurrentEstablished uint64
	// UDPReceiveBufferErrors counts datagrams dropped because a socket's
	// receive buffer was full.
	UDPReceiveBufferErrors uint64
}

type counters struct {
	rxPackets, rxBytes, rxSuperFrames, rxBadCsum, rxFragments atomic.Uint64
	rxWrongVLAN, rxNotIP, rxRunt, rxOtherHost, rxOwnEcho      atomic.Uint64
	rxChained, rxTooLong                                      atomic.Uint64

	txPackets, txFrames, txBytes, gsoPackets, gsoFrames atomic.Uint64
	offloadPackets, txWaits, txDropped, txPartial       atomic.Uint64
	offloadChecksums, txTooBig, unknownMAC, txChained   atomic.Uint64
}

func (c *counters) load() Stats {
	return Stats{
		RxPackets:        c.rxPackets.Load(),
		RxBytes:          c.rxBytes.Load(),
		RxSuperFrames:    c.rxSuperFrames.Load(),
		RxBadChecksum:    c.rxBadCsum.Load(),
		RxFragments:      c.rxFragments.Load(),
		RxWrongVLAN:      c.rxWrongVLAN.Load(),
		RxNotIP:          c.rxNotIP.Load(),
		RxRunt:           c.rxRunt.Load(),
		RxOtherHost:      c.rxOtherHost.Load(),
		RxOwnEcho:        c.rxOwnEcho.Load(),
		RxChained:        c.rxChained.Load(),
		RxTooLong:        c.rxTooLong.Load(),
		TxPackets:        c.txPackets.Load(),
		TxFrames:         c.txFrames.Load(),
		TxBytes:          c.txBytes.Load(),
		GSOPackets:       c.gsoPackets.Load(),
		GSOFrames:        c.gsoFrames.Load(),
		OffloadPackets:   c.offloadPackets.Load(),
		OffloadChecksums: c.offloadChecksums.Load(),
		TxWaits:          c.txWaits.Load(),
		TxDropped:        c.txDropped.Load(),
		TxPartial:        c.txPartial.Load(),
		TxChained:        c.txChained.Load(),
		TxTooBig:         c.txTooBig.Load(),
		UnknownMAC:       c.unknownMAC.Load(),
	}
}
