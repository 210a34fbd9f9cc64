package xdp

import (
	"encoding/binary"
	"fmt"
)

// TxMetadataLen is the room WithTxMetadata reserves in front of every
// transmit frame for struct xsk_tx_metadata: a u64 of flags and the
// request (checksum start and offset). Launch time needs the 24-byte
// layout of Linux 6.15, which this reservation does not hold.
const TxMetadataLen = 16

// Flags of TxMetadata (XDP_TXMD_FLAGS_*).
const (
	// TxMetaTimestamp asks the driver to stamp the frame when it leaves;
	// the stamp is written back into the metadata at completion.
	TxMetaTimestamp = 1
	// TxMetaChecksum asks the device to finish an L4 checksum: sum from
	// CsumStart to the end of the packet and store it at
	// CsumStart+CsumOffset. The field must hold the pseudo-header sum,
	// not complemented (Linux's CHECKSUM_PARTIAL). A copy-mode socket
	// computes it in software.
	TxMetaChecksum = 2
)

// TxMetadata is what a transmitted frame asks of the device, laid out as
// struct xsk_tx_metadata in the TxMetadataLen bytes before the frame.
type TxMetadata struct {
	Flags      uint64
	CsumStart  uint16 // from the start of the frame
	CsumOffset uint16 // from CsumStart to the checksum field
}

// Put writes m into dst, the metadata area of a frame (TxMeta). It returns
// an error wrapping ErrBadLength when dst is not TxMetadataLen bytes.
func (m TxMetadata) Put(dst []byte) error {
	if len(dst) != TxMetadataLen {
		return fmt.Errorf("xdp: transmit metadata area of %d bytes, want %d (open WithTxMetadata): %w", len(dst), TxMetadataLen, ErrBadLength)
	}
	binary.NativeEndian.PutUint64(dst[0:], m.Flags)
	binary.NativeEndian.PutUint16(dst[8:], m.CsumStart)
	binary.NativeEndian.PutUint16(dst[10:], m.CsumOffset)
	binary.NativeEndian.PutUint32(dst[12:], 0)
	return nil
}

// TxMeta returns the metadata area in front of a transmit descriptor (from
// Alloc, with WithTxMetadata), or nil when the socket has none, is closed
// or d is not one of its frames. Every Alloc clears it, so a frame that
// asks nothing is sent exactly as without metadata.
func (s *Socket) TxMeta(d Desc) []byte {
	if !s.txMeta || s.Closed() || d.Addr >= uint64(len(s.umem.mem)) || d.Addr&s.umem.mask < TxMetadataLen {
		return nil
	}
	return s.umem.mem[d.Addr-TxMetadataLen : d.Addr : d.Addr]
}

// TxMetaOf is TxMeta for a frame slice SendFunc gave its build function.
func (s *Socket) TxMetaOf(frame []byte) []byte {
	if s.Closed() {
		return nil
	}
	off, ok := offsetIn(s.umem.mem, frame)
	if !ok {
		return nil
	}
	return s.TxMeta(Desc{Addr: off})
}
