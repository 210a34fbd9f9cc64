package packetio

import "encoding/binary"

// Offload is segmentation and checksum metadata carried beside a frame. It is
// struct virtio_net_hdr field for field, the common currency of
// PACKET_VNET_HDR, tap, vhost-user and memif, so a 64 KiB TCP super-frame can
// cross a device as one packet and be cut up by the kernel or a virtio peer.
// The zero Offload is an ordinary frame.
type Offload struct {
	// Flags holds OffloadNeedsCsum when the L4 checksum field holds only
	// the pseudo-header sum and someone downstream must finish it.
	Flags uint8
	// GSOType is OffloadGSONone for an ordinary frame, else one of the
	// OffloadGSO values, possibly with OffloadGSOECN set.
	GSOType uint8
	// HdrLen is the length of the L2+L3+L4 headers repeated in every
	// segment.
	HdrLen uint16
	// GSOSize is the payload bytes per segment (the MSS).
	GSOSize uint16
	// CsumStart is the offset from the frame start to the L4 header.
	CsumStart uint16
	// CsumOff is the offset from CsumStart to the 2-byte checksum field.
	CsumOff uint16
}

// Values of Offload.Flags and Offload.GSOType.
const (
	OffloadNeedsCsum uint8 = 1    // VIRTIO_NET_HDR_F_NEEDS_CSUM
	OffloadGSONone   uint8 = 0    // not segmented
	OffloadGSOTCPv4  uint8 = 1    // TCP over IPv4
	OffloadGSOUDP    uint8 = 3    // UDP fragmentation offload
	OffloadGSOTCPv6  uint8 = 4    // TCP over IPv6
	OffloadGSOECN    uint8 = 0x80 // OR'd into GSOType: the TCP stream uses ECN
)

// OffloadHdrLen is the wire size of an Offload: struct virtio_net_hdr
// without the num_buffers field of mergeable receive buffers.
const OffloadHdrLen = 10

// Segmented reports whether the frame must be cut into segments of GSOSize.
func (o Offload) Segmented() bool { return o.GSOType&^OffloadGSOECN != OffloadGSONone }

// Marshal writes o as a little-endian virtio_net_hdr into dst[:OffloadHdrLen].
// It panics if dst is shorter than OffloadHdrLen, as copy-style encoders do.
func (o Offload) Marshal(dst []byte) {
	_ = dst[OffloadHdrLen-1]
	dst[0] = o.Flags
	dst[1] = o.GSOType
	binary.LittleEndian.PutUint16(dst[2:], o.HdrLen)
	binary.LittleEndian.PutUint16(dst[4:], o.GSOSize)
	binary.LittleEndian.PutUint16(dst[6:], o.CsumStart)
	binary.LittleEndian.PutUint16(dst[8:], o.CsumOff)
}

// UnmarshalOffload decodes a little-endian virtio_net_hdr from
// src[:OffloadHdrLen]; src must hold at least OffloadHdrLen bytes. The result
// is untrusted: check CsumStart, CsumOff and HdrLen against the packet before
// using them.
func UnmarshalOffload(src []byte) Offload {
	_ = src[OffloadHdrLen-1]
	return Offload{
		Flags:     src[0],
		GSOType:   src[1],
		HdrLen:    binary.LittleEndian.Uint16(src[2:]),
		GSOSize:   binary.LittleEndian.Uint16(src[4:]),
		CsumStart: binary.LittleEndian.Uint16(src[6:]),
		CsumOff:   binary.LittleEndian.Uint16(src[8:]),
	}
}

// OffloadReceiver is an RxQueue that delivers offload metadata with each
// packet. A queue without it delivers frames already segmented upstream.
type OffloadReceiver interface {
	RxQueue
	// ReceiveOffload is Receive plus one Offload per descriptor. Both
	// slices have the same length and are reused by the next receive call.
	// On a device opened without offload it returns nil, nil.
	ReceiveOffload(max int) ([]Desc, []Offload)
}

// OffloadTransmitter is a TxQueue that takes offload metadata with each
// packet.
type OffloadTransmitter interface {
	TxQueue
	// TransmitOffload is Transmit with one Offload per descriptor (a zero
	// Offload is an ordinary frame). On a chain the Offload rides the first
	// descriptor and the others carry zero. It returns the accepted prefix;
	// a full ring is a short count with a nil error. An Offload that does
	// not fit its packet, or len(offs) != len(descs), is ErrBadLength; a
	// device not opened for offload returns ErrUnsupported.
	TransmitOffload(descs []Desc, offs []Offload) (int, error)
}

// GatherTransmitter is a TxQueue that sends packets straight from the
// caller's memory, outside the Region and the ownership model. It exists only
// where the device has finished reading the bytes when the call returns
// (AF_PACKET copies them into the kernel); a DMA device cannot offer it.
type GatherTransmitter interface {
	TxQueue
	// TransmitGather sends len(counts) packets. segs holds every packet's
	// pieces back to back and counts[i] is how many belong to packet i;
	// offs is nil or one Offload per packet. It returns how many packets
	// were sent, always a prefix of whole packets. The memory is the
	// caller's again as soon as it returns.
	TransmitGather(segs [][]byte, counts []int, offs []Offload) (int, error)
}
