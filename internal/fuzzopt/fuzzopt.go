// Package fuzzopt reads the inputs of the option fuzz targets (afpacket,
// afxdp, afxdp/xdp, mlx5) from the front: an interface name, option
// selector bytes and signed values, never past the end. One reader, so
// every target decodes its bytes the same way.
package fuzzopt

import "encoding/binary"

// Input is fuzz bytes being read.
type Input struct{ b []byte }

// New reads b.
func New(b []byte) *Input { return &Input{b: b} }

// More reports whether any bytes are left.
func (in *Input) More() bool { return len(in.b) > 0 }

// Name reads an interface name: when the first byte has its top bit set,
// the next first&0x1f bytes (fewer at the end); otherwise def, the byte
// spent all the same. An empty input gives def.
func (in *Input) Name(def string) string {
	if len(in.b) == 0 {
		return def
	}
	first := in.b[0]
	in.b = in.b[1:]
	if first&0x80 == 0 {
		return def
	}
	n := min(int(first&0x1f), len(in.b))
	name := string(in.b[:n])
	in.b = in.b[n:]
	return name
}

// Kind reads one selector byte, modulo n; 0 when nothing is left.
func (in *Input) Kind(n int) int {
	if len(in.b) == 0 {
		return 0
	}
	k := int(in.b[0]) % n
	in.b = in.b[1:]
	return k
}

// Int32 reads a little-endian signed 32-bit value; 0 when fewer than four
// bytes are left, which stay to be read as selectors.
func (in *Input) Int32() int {
	if len(in.b) < 4 {
		return 0
	}
	v := int(int32(binary.LittleEndian.Uint32(in.b)))
	in.b = in.b[4:]
	return v
}

// Int64 reads a little-endian signed 64-bit value; 0 when fewer than eight
// bytes are left, and those are spent: the input ends.
func (in *Input) Int64() int {
	if len(in.b) < 8 {
		in.b = nil
		return 0
	}
	v := int(int64(binary.LittleEndian.Uint64(in.b)))
	in.b = in.b[8:]
	return v
}
