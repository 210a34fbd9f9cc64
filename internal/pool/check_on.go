//go:build packetio_checked

package pool

// marks holds one bit per frame, set while the frame is free. Bits past the
// last frame stay clear, so no foreign index can look free.
type marks struct{ free []uint64 }

func (m *marks) init(count int) {
	m.free = make([]uint64, (count+63)/64)
	for i := 0; i < count; i++ {
		m.free[i/64] |= 1 << (i % 64)
	}
}

func (m *marks) take(i int) { m.free[i/64] &^= 1 << (i % 64) }

// give marks frame i free, refusing a frame that already is.
func (m *marks) give(i int) bool {
	bit := uint64(1) << (i % 64)
	if m.free[i/64]&bit != 0 {
		return false
	}
	m.free[i/64] |= bit
	return true
}

// Checked reports whether this is a packetio_checked build, which refuses a
// frame returned twice.
func Checked() bool { return true }
