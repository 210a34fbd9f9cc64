package wqe

import (
	"encoding/binary"
	"fmt"
)

// SQ is a send queue's memory: a power-of-two number of blocks. Offsets
// wrap, so an entry that runs past the end continues at the start, as the
// device reads it.
type SQ struct {
	buf  []byte
	mask uint32 // len(buf)-1
}

// NewSQ wraps buf, which must be a power-of-two number of blocks, at most
// 1<<16 of them (the doorbell index is 16 bits).
func NewSQ(buf []byte) (SQ, error) {
	n := len(buf)
	if n < BlockSize || n&(n-1) != 0 || n/BlockSize > 1<<16 {
		return SQ{}, fmt.Errorf("wqe: send queue of %d bytes is not a power-of-two number of %d-byte blocks up to 65536", n, BlockSize)
	}
	return SQ{buf: buf, mask: uint32(n - 1)}, nil
}

// Blocks is the number of blocks in the queue.
func (q SQ) Blocks() int { return len(q.buf) / BlockSize }

// Bytes is the queue memory.
func (q SQ) Bytes() []byte { return q.buf }

// Octoword returns the 16 bytes at octoword k of the entry starting at
// block pi. An octoword never straddles the end of the queue.
func (q SQ) Octoword(pi uint32, k int) []byte {
	off := (pi*BlockSize + uint32(k)*OctowordSize) & q.mask
	return q.buf[off : off+OctowordSize : off+OctowordSize]
}

// write copies p to the entry at block pi from byte offset off, wrapping at
// the end of the queue.
func (q SQ) write(pi uint32, off int, p []byte) {
	start := (pi*BlockSize + uint32(off)) & q.mask
	n := copy(q.buf[start:], p)
	if n < len(p) {
		copy(q.buf, p[n:])
	}
}

// zero clears n bytes of the entry at block pi from byte offset off,
// wrapping at the end.
func (q SQ) zero(pi uint32, off, n int) {
	start := (pi*BlockSize + uint32(off)) & q.mask
	end := min(int(start)+n, len(q.buf))
	clear(q.buf[start:end])
	if rest := n - (end - int(start)); rest > 0 {
		clear(q.buf[:rest])
	}
}

// read copies len(p) bytes of the entry at block pi from offset off into p,
// wrapping at the end. The model uses it to read inline data back.
func (q SQ) read(pi uint32, off int, p []byte) {
	start := (pi*BlockSize + uint32(off)) & q.mask
	n := copy(p, q.buf[start:])
	if n < len(p) {
		copy(p[n:], q.buf)
	}
}

// Read copies len(p) bytes of the entry at block pi from byte offset off
// into p, wrapping at the end of the queue.
func (q SQ) Read(pi uint32, off int, p []byte) { q.read(pi, off, p) }

// PutCtrl writes the control segment of the entry at block pi: the opcode,
// the entry's own block index (low 16 bits of pi), the QP number, the length
// in octowords and the fm_ce_se flags.
func (q SQ) PutCtrl(pi uint32, opcode uint8, qpn uint32, ds int, fmCeSe uint8) {
	c := q.Octoword(pi, 0)
	binary.BigEndian.PutUint32(c[CtrlOpmodIdxOpcode:], (pi&0xffff)<<8|uint32(opcode))
	binary.BigEndian.PutUint32(c[CtrlQPNDS:], qpn<<8|uint32(ds)&0xff)
	c[CtrlSignature], c[9], c[10] = 0, 0, 0
	c[CtrlFmCeSe] = fmCeSe
	binary.BigEndian.PutUint32(c[CtrlImm:], 0)
}

// SetFlags ORs f into the fm_ce_se byte of the entry at block pi (to ask for
// a completion after the entry is written).
func (q SQ) SetFlags(pi uint32, f uint8) { q.Octoword(pi, 0)[CtrlFmCeSe] |= f }

// PutData writes a data segment at octoword k of the entry at block pi.
func (q SQ) PutData(pi uint32, k int, byteCount, lkey uint32, addr uint64) {
	d := q.Octoword(pi, k)
	binary.BigEndian.PutUint32(d[DataByteCount:], byteCount)
	binary.BigEndian.PutUint32(d[DataLKey:], lkey)
	binary.BigEndian.PutUint64(d[DataAddr:], addr)
}

// Ctrl is a decoded control segment.
type Ctrl struct {
	Opmod  uint8
	Index  uint16 // the entry's block index as written
	Opcode uint8
	QPN    uint32
	DS     int
	FmCeSe uint8
}

// DecodeCtrl reads the control segment of the entry at block pi.
func (q SQ) DecodeCtrl(pi uint32) Ctrl {
	c := q.Octoword(pi, 0)
	w0 := binary.BigEndian.Uint32(c[CtrlOpmodIdxOpcode:])
	w1 := binary.BigEndian.Uint32(c[CtrlQPNDS:])
	return Ctrl{
		Opmod:  uint8(w0 >> 24),
		Index:  uint16(w0 >> 8),
		Opcode: uint8(w0),
		QPN:    w1 >> 8,
		DS:     int(w1 & 0xff),
		FmCeSe: c[CtrlFmCeSe],
	}
}

// Data is a decoded data segment.
type Data struct {
	ByteCount uint32
	LKey      uint32
	Addr      uint64
}

// DecodeData reads the data segment at octoword k of the entry at block pi.
func (q SQ) DecodeData(pi uint32, k int) Data {
	d := q.Octoword(pi, k)
	return Data{
		ByteCount: binary.BigEndian.Uint32(d[DataByteCount:]),
		LKey:      binary.BigEndian.Uint32(d[DataLKey:]),
		Addr:      binary.BigEndian.Uint64(d[DataAddr:]),
	}
}

// BlocksFor is the number of blocks ds octowords occupy.
func BlocksFor(ds int) int { return (ds*OctowordSize + BlockSize - 1) / BlockSize }
