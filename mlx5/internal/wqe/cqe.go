package wqe

import "encoding/binary"

// CQE is a decoded 64-byte completion entry: every field the rings or the
// model use. Decoding is for tests, the model and error reports; the ring
// packet path reads single fields with the accessors below.
type CQE struct {
	Opcode         uint8  // CQE opcode (CQEReq, CQERespSend, ...)
	Format         uint8  // FormatPlain unless compressed or inline
	Owner          uint8  // 0 or 1: the lap parity the device wrote
	WQECounter     uint16 // send: first block of the entry; receive: the WQE index
	Signature      uint8  // unused, carried for round trips
	ByteCount      uint32 // receive: packet length
	Timestamp      uint64 // raw device ticks
	Syndrome       uint8  // error CQEs
	VendorSyndrome uint8  // error CQEs
	WQEOpcode      uint8  // error CQEs: the opcode of the failed WQE
	QPN            uint32 // 24 bits
	HdsIPExt       uint8  // CQEL2OK | CQEL3OK | CQEL4OK
	L3Type         uint8  // L3None, L3IPv6, L3IPv4
	RxHash         uint32 // RSS hash result
}

// DecodeCQE decodes b[:CQESize]. It reports false, and decodes nothing, when
// b is shorter than a CQE.
func DecodeCQE(b []byte) (CQE, bool) {
	if len(b) < CQESize {
		return CQE{}, false
	}
	h := binary.BigEndian.Uint32(b[CQEHeader:])
	sq := binary.BigEndian.Uint32(b[CQESopDropQPN:])
	c := CQE{
		Opcode:     HeaderOpcode(h),
		Format:     HeaderFormat(h),
		Owner:      HeaderOwner(h),
		WQECounter: HeaderCounter(h),
		Signature:  b[CQESignature],
		ByteCount:  binary.BigEndian.Uint32(b[CQEByteCnt:]),
		WQEOpcode:  uint8(sq >> 24),
		QPN:        sq & 0xffffff,
		HdsIPExt:   b[CQEHdsIPExt],
		L3Type:     (b[CQEL4HdrTypeEtc] >> 2) & 3,
		RxHash:     binary.BigEndian.Uint32(b[CQERxHash:]),
	}
	// The syndromes of an error CQE sit where a good CQE keeps the low
	// bytes of its timestamp; decode whichever the opcode says is there.
	if c.IsError() {
		c.Syndrome = b[CQESyndrome]
		c.VendorSyndrome = b[CQEVendorSyndrome]
	} else {
		c.Timestamp = binary.BigEndian.Uint64(b[CQETimestamp:])
	}
	return c, true
}

// IsError reports whether the CQE reports a failed send or receive.
func (c CQE) IsError() bool { return c.Opcode == CQEReqErr || c.Opcode == CQERespErr }

// Encode writes c as a 64-byte CQE into b[:CQESize], zeroing the bytes no
// field covers. The owner byte is written last, as the device does. It
// reports false when b is too short. Fields are truncated to their widths.
func (c CQE) Encode(b []byte) bool {
	if len(b) < CQESize {
		return false
	}
	clear(b[:CQEHeader])
	binary.BigEndian.PutUint32(b[CQERxHash:], c.RxHash)
	b[CQEHdsIPExt] = c.HdsIPExt
	b[CQEL4HdrTypeEtc] = (c.L3Type & 3) << 2
	binary.BigEndian.PutUint32(b[CQEByteCnt:], c.ByteCount)
	// An error CQE has syndromes where a good one has the low bytes of
	// its timestamp; write only what the opcode says is there.
	if c.IsError() {
		b[CQEVendorSyndrome] = c.VendorSyndrome
		b[CQESyndrome] = c.Syndrome
	} else {
		binary.BigEndian.PutUint64(b[CQETimestamp:], c.Timestamp)
	}
	binary.BigEndian.PutUint32(b[CQESopDropQPN:], uint32(c.WQEOpcode)<<24|c.QPN&0xffffff)
	binary.BigEndian.PutUint16(b[CQEWQECounter:], c.WQECounter)
	b[CQESignature] = c.Signature
	b[CQEOpOwn] = c.Opcode<<4 | (c.Format&3)<<2 | c.Owner&1
	return true
}

// HeaderOwner is the owner bit of a header word (bytes 60-63 big-endian).
func HeaderOwner(h uint32) uint8 { return uint8(h & 1) }

// HeaderFormat is the CQE format of a header word.
func HeaderFormat(h uint32) uint8 { return uint8(h>>2) & 3 }

// HeaderOpcode is the CQE opcode of a header word.
func HeaderOpcode(h uint32) uint8 { return uint8(h>>4) & 0xf }

// HeaderCounter is the wqe_counter of a header word.
func HeaderCounter(h uint32) uint16 { return uint16(h >> 16) }

// SoftwareOwns reports whether the entry with header word h, at free-running
// consumer index ci of a CQ of 1<<logSize entries, holds a new completion:
// its owner bit equals the lap parity of ci and it is not the invalid opcode
// fresh CQ memory carries.
func SoftwareOwns(h uint32, ci uint32, logSize uint) bool {
	return HeaderOwner(h) == uint8(ci>>logSize)&1 && HeaderOpcode(h) != CQEInvalid
}

// InitCQ marks every entry of a CQ invalid with owner 0, as libmlx5 does when
// it creates one: op_own 0xf0.
func InitCQ(cq []byte) {
	for off := 0; off+CQESize <= len(cq); off += CQESize {
		cq[off+CQEOpOwn] = CQEInvalid << 4
	}
}
