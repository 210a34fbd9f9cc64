//go:build packetio_checked

package pool

// marks holds one byte per frame: who holds it now. The zero value is
// pooled, so a new table says every frame is in the pool.
type marks struct{ who []holder }

func (m *marks) init(count int) { m.who = make([]holder, count) }

// set records a move the pool itself vouches for (Pop keeps the free list
// and the table in step, so no check is needed).
func (m *marks) set(i int, h holder) { m.who[i] = h }

// move hands frame i to the holder to when want allows its holder now, and
// otherwise refuses and returns who holds it.
func (m *marks) move(i int, want, to holder) (holder, bool) {
	h := m.who[i]
	if !allowed(h, want) {
		return h, false
	}
	m.who[i] = to
	return h, true
}

// counts tallies the table: frames in the pool, with the caller and with the
// NIC.
func (m *marks) counts() (inPool, held, nic int) {
	for _, h := range m.who {
		switch h {
		case pooled:
			inPool++
		case caller:
			held++
		default:
			nic++
		}
	}
	return inPool, held, nic
}

// Checked reports whether this is a packetio_checked build, which tracks
// who holds every frame (pool, caller or NIC) and refuses a frame handed on
// by someone who does not hold it.
func Checked() bool { return true }

// allowed reports whether a frame held by h may make a move that wants
// want.
func allowed(h, want holder) bool {
	if want == nicAny {
		return h == nicFill || h == nicTx
	}
	return h == want
}
