// Package csum is the Internet checksum (RFC 1071) the backends and the
// examples compute in software: a running one's-complement sum that
// pseudo-headers and payloads add to, and its folded complement.
package csum

import "encoding/binary"

// Sum adds b to the one's-complement running sum acc, 16 bits at a time in
// network order (a last odd byte is padded with zero), without folding to
// 16 bits.
func Sum(b []byte, acc uint32) uint32 {
	s := uint64(acc)
	for len(b) >= 8 {
		s += uint64(binary.BigEndian.Uint32(b)) + uint64(binary.BigEndian.Uint32(b[4:]))
		b = b[8:]
	}
	for len(b) >= 2 {
		s += uint64(binary.BigEndian.Uint16(b))
		b = b[2:]
	}
	if len(b) == 1 {
		s += uint64(b[0]) << 8
	}
	for s>>32 != 0 {
		s = s&0xffffffff + s>>32
	}
	return uint32(s)
}

// Fold folds a running sum to 16 bits.
func Fold(s uint32) uint16 {
	for s>>16 != 0 {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// Checksum is the checksum of b with acc, a running sum from Sum (the
// pseudo-header), already added: the value to store.
func Checksum(b []byte, acc uint32) uint16 { return ^Fold(Sum(b, acc)) }

// SumAfter adds b to acc as the bytes that follow n bytes already summed
// into it: after an odd count, b's bytes fill the other half of each
// 16-bit word. Summing a packet piece by piece (the frames of a chain) with
// it gives what Sum gives for the packet in one piece.
func SumAfter(b []byte, acc uint32, n int) uint32 {
	if n&1 == 0 {
		return Sum(b, acc)
	}
	s := Fold(Sum(b, 0))
	s = s<<8 | s>>8
	t := uint64(acc) + uint64(s)
	return uint32(t&0xffffffff + t>>32)
}
