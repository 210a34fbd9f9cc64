//go:build !packetio_checked

package pool

// marks is empty in production builds: the bitmap cost about 15% of a
// transmit path when measured, so only the cheap checks stay on.
type marks struct{}

func (marks) init(int)      {}
func (marks) take(int)      {}
func (marks) give(int) bool { return true }

// Checked reports whether this is a packetio_checked build, which refuses a
// frame returned twice.
func Checked() bool { return false }
