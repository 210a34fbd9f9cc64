package arch

import "encoding/binary"

// BigEndianWord returns the 32-bit value whose native-order store puts v's
// big-endian bytes in memory: what every doorbell record holds. On a
// little-endian machine it is a byte swap.
func BigEndianWord(v uint32) uint32 {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return binary.NativeEndian.Uint32(b[:])
}

// NativeWord64 returns the 8 bytes at b[:8] as a native-order word: the
// value whose store to the UAR puts those bytes on the bus as they lie in
// memory.
func NativeWord64(b []byte) uint64 { return binary.NativeEndian.Uint64(b) }
